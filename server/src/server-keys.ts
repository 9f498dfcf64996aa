// Server-side keys that derived secrets (device tokens, webhook endpoint secrets) come from: a
// setting when the operator set one, else a random key generated once and kept in the settings table
// so the derived secrets survive restarts. Setting it is the safer choice: then a copy of the
// database alone does not yield the secrets.
import type { Clock } from './clock.js'
import type { Db } from './db/database.js'
import { randomToken } from './crypto.js'

/** `configured` if set, else the key kept under `settingKey` (made by the first process to ask). */
export async function serverKey(db: Db, configured: string, settingKey: string, clock: Clock): Promise<string> {
  if (configured) return configured
  // Two processes starting together both insert; the first wins and both read its key.
  await db
    .insertInto('settings')
    .values({ key: settingKey, value: randomToken(), created_at: clock.now().toISOString() })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute()
  const row = await db.selectFrom('settings').select('value').where('key', '=', settingKey).executeTakeFirstOrThrow()
  return row.value
}
