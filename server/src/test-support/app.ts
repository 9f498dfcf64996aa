// Builds a real app over a real SQLite file in a fresh temporary folder, for one test (or over a
// database of its own on the throwaway PostgreSQL when the suite runs there: see ./postgres.ts).
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../app.js'
import { migrateToLatest, openDatabase } from '../db/database.js'
import { ManualClock } from '../clock.js'
import { loadConfig, type Config } from '../config.js'
import { createApiKey } from '../api-keys/service.js'
import type { PaymentProvider } from '../payments/provider.js'
import type { RecordingSince } from '../agent-rollouts/service.js'
import { issueTokenPair } from '../oauth2/tokens.js'
import { createUser } from '../users/service.js'
import { createTestPostgresDatabase } from './postgres.js'
import { TEST_BUSY_TIMEOUT_MS } from './processes.js'
import { trustedKeysSetting } from './agent-releases.js'
import type { UserRole } from '@club/contract'

export interface Teardown {
  teardown(fn: () => unknown): void
}

export interface TestApp {
  app: FastifyInstance
  clock: ManualClock
  config: Config
  dir: string
  /** Every log line the app wrote, as text. */
  logs(): string
}

/** Settings for tests: cheap password hashing, quiet unless a test reads the log. */
export function testConfig(dir: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    DATABASE_URL: join(dir, 'club.db'),
    PASSWORD_HASH_COST: '1024',
    LOG_LEVEL: 'info',
    // Releases in the test's own folder, never in the working copy's data/; signed by the test run's key.
    AGENT_RELEASES_DIR: join(dir, 'agent-releases'),
    AGENT_RELEASE_PUBLIC_KEYS: trustedKeysSetting(),
    // Apps racing processes on one database wait for their locks however slow the machine (processes.ts).
    DATABASE_BUSY_TIMEOUT_MS: TEST_BUSY_TIMEOUT_MS,
    ...env
  })
}

let template: Promise<string> | undefined

/**
 * A SQLite file migrated to the latest schema, to copy instead of migrating each test's database
 * (a copy costs a fifth of a migration): the run's (scripts/test.mjs makes one, CLUB_TEST_SQLITE_TEMPLATE),
 * else one made once by this process.
 */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    if (process.env.CLUB_TEST_SQLITE_TEMPLATE) return process.env.CLUB_TEST_SQLITE_TEMPLATE
    const dir = mkdtempSync(join(tmpdir(), 'club-template-'))
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'club.db')
    const db = openDatabase(file)
    await migrateToLatest(db)
    await db.destroy()
    return file
  })()
  return template
}

/** Puts a migrated SQLite database at `file` (the app's migration at start then finds nothing to do). */
export async function copyMigratedSqlite(file: string): Promise<void> {
  copyFileSync(await migratedTemplate(), file)
}

export async function testApp(
  t: Teardown,
  env: Record<string, string> = {},
  extend?: (app: FastifyInstance) => Promise<void>,
  options: { paymentProvider?: PaymentProvider; recordingSince?: RecordingSince } = {}
): Promise<TestApp> {
  const dir = mkdtempSync(join(tmpdir(), 'club-test-'))
  // On PostgreSQL (a run through scripts/postgres.mjs) a database of its own, unless the test names a file.
  const database = env.DATABASE_URL ? undefined : await createTestPostgresDatabase()
  const config = testConfig(dir, database ? { ...env, DATABASE_URL: database.url } : env)
  if (!database && !env.DATABASE_URL) await copyMigratedSqlite(config.DATABASE_URL)
  const clock = new ManualClock('2026-03-01T10:00:00.000Z')
  let captured = ''
  const logStream = new Writable({
    write(chunk, _enc, done) {
      captured += chunk.toString()
      done()
    }
  })
  const app = await buildApp({ config, clock, logStream, extend, paymentProvider: options.paymentProvider, recordingSince: options.recordingSince })
  t.teardown(async () => {
    await app.close()
    await database?.drop()
    rmSync(dir, { recursive: true, force: true })
  })
  return { app, clock, config, dir, logs: () => captured }
}

let counter = 0

/** A user of the given role with a valid access token (and refresh token). */
export async function userWithToken(
  ctx: TestApp,
  role: UserRole = 'member',
  password = 'a fine password'
): Promise<{ id: string; email: string; password: string; accessToken: string; refreshToken: string; authorization: string }> {
  const email = `user${++counter}-${role}@example.org`
  const user = await createUser(ctx.app.db, { email, password, role }, { clock: ctx.clock, passwordHashCost: ctx.config.PASSWORD_HASH_COST })
  const tokens = await issueTokenPair(
    ctx.app.db,
    { userId: user.id, clientId: null, scope: 'api' },
    { clock: ctx.clock, accessTokenTtlSeconds: ctx.config.ACCESS_TOKEN_TTL_SECONDS, refreshTokenTtlSeconds: ctx.config.REFRESH_TOKEN_TTL_SECONDS }
  )
  return {
    id: user.id,
    email,
    password,
    accessToken: tokens.access_token,
    refreshToken: tokens.refresh_token,
    authorization: `Bearer ${tokens.access_token}`
  }
}

export async function userWithApiKey(ctx: TestApp, role: UserRole = 'member') {
  const user = await userWithToken(ctx, role)
  const key = await createApiKey(ctx.app.db, user.id, ctx.clock)
  return { ...user, apiKey: key.apiKey, apiKeyId: key.id }
}

/** Asserts the platform error shape and returns the body. */
export function errorOf(res: { statusCode: number; json(): any }): { statusCode: number; message: string; error: string } {
  const body = res.json()
  if (body.statusCode !== res.statusCode || typeof body.message !== 'string' || typeof body.error !== 'string' || 'stack' in body) {
    throw new Error(`not the platform error shape: ${JSON.stringify(body)}`)
  }
  return body
}
