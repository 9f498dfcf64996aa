import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Teardown } from './test-support/app.js'
import { spawnServer } from './test-support/processes.js'

/** The built server with `env` over this process's environment. */
const start = (t: Teardown, env: Record<string, string>) => spawnServer(t, { ...process.env, ...env })

t.test('starts on a fresh data folder, serves the OpenAPI document, and stops cleanly on SIGTERM', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'club-main-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const database = join(dir, 'data', 'club.db')
  const server = start(t, { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: database })
  const base = await server.listening
  t.ok(existsSync(database), 'the database is created and migrated on first start')
  const doc = (await (await fetch(`${base}/documentation/json`)).json()) as { openapi: string; paths: Record<string, any> }
  t.equal(doc.openapi, '3.0.3')
  t.ok(doc.paths['/apis/v2/oauth2/token'].post)
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
  t.match(server.stdout(), /shutting down/)
})

t.test('a bad setting stops the start with one line naming it', async (t) => {
  const server = start(t, { PORT: 'abc' })
  t.equal(await server.exited, 1)
  t.equal(server.stderr(), 'club server: PORT="abc" is not valid: expected a whole number >= 0 and <= 65535\n')
})

t.test('in production a development-only setting stops the start, naming each one', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'club-main-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const database = join(dir, 'club.db')
  const server = start(t, { NODE_ENV: 'production', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: database, PAYMENT_PROVIDER: 'test', DEVICE_TOKEN_SECRET: '', WEBHOOK_ENDPOINT_KEY: '', METRICS_TOKEN: '' })
  t.equal(await server.exited, 1)
  const stderr = server.stderr()
  const stdout = server.stdout()
  t.match(stderr, /^club server: refusing to start in production/)
  t.match(stderr, /PAYMENT_PROVIDER=test accepts any card/)
  t.match(stderr, /DEVICE_TOKEN_SECRET is empty/)
  t.match(stderr, /WEBHOOK_ENDPOINT_KEY is empty/, "a copy of the database would yield every endpoint's signing secret")
  t.match(stderr, /METRICS_TOKEN is empty, so \/metrics is open/)
  t.match(stderr, /SMTP_URL is empty/, 'the log mailer would write every reset link, a sign-in to the account, into the log')
  t.equal(stdout, '', 'nothing was started')
  t.notOk(existsSync(database), 'not even the database')

  // CLUB_ENV says the same; with only the payment provider left, it alone is named.
  const secrets = { DEVICE_TOKEN_SECRET: 'd'.repeat(32), WEBHOOK_ENDPOINT_KEY: 'w'.repeat(32), METRICS_TOKEN: 'm'.repeat(16), SMTP_URL: 'smtp://127.0.0.1:2525' }
  const testProvider = start(t, { CLUB_ENV: 'production', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: database, PAYMENT_PROVIDER: 'test', ...secrets })
  t.equal(await testProvider.exited, 1)
  t.equal(testProvider.stderr().trim().split('\n').length, 2, 'one line for the refusal, one for the setting')
  t.match(testProvider.stderr(), /PAYMENT_PROVIDER=test/)
})

t.test('in development the same settings are one warning at start', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'club-main-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const server = start(t, { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: join(dir, 'club.db'), PAYMENT_PROVIDER: 'test', METRICS_TOKEN: 'm'.repeat(16), NODE_ENV: '', CLUB_ENV: '' })
  await server.listening
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
  const warnings = server.stdout().split('\n').filter((line) => line.includes('development settings in use'))
  t.equal(warnings.length, 1, 'warned once')
  t.match(warnings[0], /PAYMENT_PROVIDER=test/)
  t.match(warnings[0], /DEVICE_TOKEN_SECRET is empty/)
  t.notMatch(warnings[0], /METRICS_TOKEN/, 'a setting that is set is not named')
})
