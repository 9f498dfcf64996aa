// Seeds a benchmark database with realistic volumes, straight into the tables (the services would
// hash every password at full cost, which would take minutes and measure nothing).
import { randomUUID } from 'node:crypto'
import { hashPassword, randomToken, sha256Hex } from '@club/server/crypto'
import type { Db } from '@club/server/db/database'

export const BENCH_PASSWORD = 'bench password 1'

export interface SeededUsers {
  emails: string[]
  accessTokens: string[]
  apiKeys: string[]
  adminToken: string
}

/** Inserts `rows` a chunk at a time (SQLite takes at most 32,766 bound values per statement). */
export async function insertChunked<T>(rows: T[], insert: (chunk: T[]) => Promise<unknown>, size = 500): Promise<void> {
  for (let i = 0; i < rows.length; i += size) await insert(rows.slice(i, i + size))
}

/** `count` users with one access token and one API key each; the first is an admin. */
export async function seedUsers(db: Db, count: number, passwordHashCost: number): Promise<SeededUsers> {
  // One hash for all: every user has the same password, and the login benchmark still pays the
  // full scrypt cost per request because verification recomputes it.
  const hash = await hashPassword(BENCH_PASSWORD, passwordHashCost)
  const now = new Date().toISOString()
  const expires = new Date(Date.now() + 24 * 3600 * 1000).toISOString()
  const users = Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    email: `user${i}@bench.example.org`,
    password_hash: hash,
    first_name: 'Bench',
    last_name: `User ${i}`,
    role: (i === 0 ? 'admin' : i % 10 === 0 ? 'staff' : 'member') as 'admin' | 'staff' | 'member',
    created_at: now,
    updated_at: now
  }))
  const accessTokens = users.map(() => randomToken())
  const apiKeys = users.map(() => `club_${randomToken()}`)
  await db.transaction().execute(async (tx) => {
    await insertChunked(users, (chunk) => tx.insertInto('users').values(chunk).execute())
    const tokens = users.map((u, i) => ({
      id: randomUUID(),
      kind: 'access' as const,
      token_hash: sha256Hex(accessTokens[i]!),
      user_id: u.id,
      client_id: null,
      scope: 'api',
      family_id: randomUUID(),
      expires_at: expires,
      revoked_at: null,
      used_at: null,
      created_at: now
    }))
    await insertChunked(tokens, (chunk) => tx.insertInto('tokens').values(chunk).execute())
    const keys = users.map((u, i) => ({
      id: randomUUID(),
      user_id: u.id,
      key_hash: sha256Hex(apiKeys[i]!),
      prefix: apiKeys[i]!.slice(0, 11),
      name: null,
      created_at: now,
      revoked_at: null,
      last_used_at: null
    }))
    await insertChunked(keys, (chunk) => tx.insertInto('api_keys').values(chunk).execute())
  })
  // Staff or admin tokens for the template routes: every tenth user is staff.
  return { emails: users.map((u) => u.email), accessTokens, apiKeys, adminToken: accessTokens[0]! }
}
