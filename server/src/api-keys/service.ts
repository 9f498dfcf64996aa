// API keys for integrations: random, shown once, stored as SHA-256, bound to a user, revocable.
import { randomUUID } from 'node:crypto'
import type { Clock } from '../clock.js'
import { randomToken, sha256Hex } from '../crypto.js'
import { compiledOnce, runCompiled } from '../db/compiled.js'
import type { DbOrTx } from '../db/database.js'
import { readThrough } from '../db/read-cache.js'
import { NotFoundError, UnauthorizedError, quote } from '../errors.js'
import { userRecord, type UserRecord } from '../users/service.js'

const PREFIX = 'club_'

export async function createApiKey(
  db: DbOrTx,
  userId: string,
  clock: Clock,
  name: string | null = null
): Promise<{ id: string; apiKey: string; prefix: string }> {
  const apiKey = `${PREFIX}${randomToken()}`
  const id = randomUUID()
  const prefix = apiKey.slice(0, PREFIX.length + 6)
  await db
    .insertInto('api_keys')
    .values({ id, user_id: userId, key_hash: sha256Hex(apiKey), prefix, name, created_at: clock.now().toISOString(), revoked_at: null, last_used_at: null })
    .execute()
  return { id, apiKey, prefix }
}

export async function revokeApiKey(db: DbOrTx, id: string, clock: Clock): Promise<void> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: clock.now().toISOString() })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  if (Number(result.numUpdatedRows) !== 1) throw new NotFoundError(`no active API key ${quote(id)}`)
}

/** Every key of a user stops working: a password reset or an erasure ends what the old password made. */
export async function revokeUserApiKeys(db: DbOrTx, userId: string, at: string): Promise<void> {
  await db.updateTable('api_keys').set({ revoked_at: at }).where('user_id', '=', userId).where('revoked_at', 'is', null).execute()
}

export async function listApiKeys(db: DbOrTx, userId: string) {
  const rows = await db
    .selectFrom('api_keys')
    .select(['id', 'prefix', 'name', 'created_at', 'revoked_at', 'last_used_at'])
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .execute()
  return rows.map((r) => ({ id: r.id, prefix: r.prefix, name: r.name, createdDate: r.created_at, revokedDate: r.revoked_at }))
}

export interface ApiKeyPrincipal {
  apiKeyId: string
  user: UserRecord
}

const apiKeyLookup = (db: DbOrTx, keyHash: string) =>
  db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .select(['api_keys.id', 'api_keys.revoked_at', 'users.id as user_id', 'users.email', 'users.role', 'users.first_name', 'users.last_name', 'users.created_at'])
    .where('api_keys.key_hash', '=', keyHash)

type ApiKeyRow = Awaited<ReturnType<ReturnType<typeof apiKeyLookup>['executeTakeFirstOrThrow']>>

/** Every integration request asks this: compiled once (see db/compiled.ts). */
const apiKeyQuery = compiledOnce((db) => apiKeyLookup(db, ''))

/**
 * The user behind an API key, or a 401. One indexed read, answered from the read cache until a key
 * or user changes (revocation is a write to `api_keys`, seen by the next request).
 */
export async function authenticateApiKey(db: DbOrTx, apiKey: string): Promise<ApiKeyPrincipal> {
  const keyHash = sha256Hex(apiKey)
  const load = async (): Promise<ApiKeyRow> => {
    const row = (await runCompiled(db, apiKeyQuery, [keyHash]))[0]
    if (!row) throw new UnauthorizedError('the API key is not valid', 'ApiKey')
    return row
  }
  const row = await readThrough(db, { name: 'api-keys', tables: ['api_keys', 'users'] }, keyHash, load)
  if (row.revoked_at !== null) throw new UnauthorizedError('the API key was revoked', 'ApiKey')
  return { apiKeyId: row.id, user: userRecord({ ...row, id: row.user_id }) }
}
