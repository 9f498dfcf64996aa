// Events already written lose the passwords of the URLs they carry (a camera's feed
// `rtsp://user:pass@…` in a box's configuration, a box's serverUrl): the feed and every webhook
// endpoint serve stored events as they are, and from now on events are written masked
// (events/outbox.ts, maskUrlPasswords). The same mask, copied here: a migration imports no
// application code.
import { sql, type Kysely } from 'kysely'

const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^/?#@\s:"]*):[^/?#\s"]*@/gi

const masked = (_key: string, value: unknown): unknown => (typeof value === 'string' ? value.replace(URL_PASSWORD, '$1:***@') : value)

export async function up(db: Kysely<any>): Promise<void> {
  // Only the rows that may hold one: a scheme, a colon and an at sign.
  const rows = await db.selectFrom('outbox_events').select(['id', 'data']).where('data', 'like', sql<string>`'%://%:%@%'`).execute()
  for (const row of rows) {
    const data = JSON.stringify(JSON.parse(row.data as string), masked)
    if (data !== row.data) await db.updateTable('outbox_events').set({ data }).where('id', '=', row.id).execute()
  }
}

export async function down(): Promise<void> {
  // The passwords are gone: nothing to bring back.
}
