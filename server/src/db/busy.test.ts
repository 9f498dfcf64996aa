// A write that cannot get another process's lock in time: 503 with Retry-After from the API, one
// line from the CLI, and nothing half-written in either.
import SQLite from 'better-sqlite3'
import pg from 'pg'
import t from 'tap'
import { runCli } from '../cli.js'
import { errorOf, testApp, userWithToken } from '../test-support/app.js'
import { isPostgresUrl, WRITE_LOCK } from './postgres.js'

/** Another process's connection holding the write lock until released (SQLite's, or PostgreSQL's advisory lock). */
async function holdWriteLock(url: string): Promise<() => Promise<void>> {
  if (isPostgresUrl(url)) {
    const other = new pg.Client({ connectionString: url })
    await other.connect()
    await other.query('begin')
    await other.query(`select pg_advisory_xact_lock(${WRITE_LOCK})`)
    return async () => {
      await other.query('rollback')
      await other.end()
    }
  }
  const other = new SQLite(url)
  other.exec('BEGIN IMMEDIATE')
  return async () => {
    other.exec('ROLLBACK')
    other.close()
  }
}

t.test('a write the lock holder keeps waiting answers 503 with Retry-After, and succeeds once released', async (t) => {
  const ctx = await testApp(t, { DATABASE_BUSY_TIMEOUT_MS: '50' })
  const staff = await userWithToken(ctx, 'staff')
  const create = () =>
    ctx.app.inject({
      method: 'POST',
      url: '/apis/v2/templates',
      headers: { authorization: staff.authorization },
      payload: { name: 'Open play', type: 'EVENT', data: {} }
    })
  const release = await holdWriteLock(ctx.config.DATABASE_URL)
  const busy = await create()
  await release()
  t.equal(busy.statusCode, 503)
  t.equal(busy.headers['retry-after'], '1')
  t.match(errorOf(busy).message, /locked by another process's write .*nothing was changed, try again/)
  t.equal((await ctx.app.db.selectFrom('templates').select('id').execute()).length, 0, 'nothing was written')
  t.match(ctx.logs(), /"msg":"database busy"/, 'logged as a warning, not as a failed request')
  t.notMatch(ctx.logs(), /request failed/)
  t.equal((await create()).statusCode, 201)
})

t.test('the CLI says so in one line and exits non-zero', async (t) => {
  const ctx = await testApp(t)
  const env = { DATABASE_URL: ctx.config.DATABASE_URL, DATABASE_BUSY_TIMEOUT_MS: '50' }
  const release = await holdWriteLock(ctx.config.DATABASE_URL)
  const out: string[] = []
  const err: string[] = []
  const code = await runCli(['regions', 'create', '--name', 'North'], env, (s) => out.push(s), (s) => err.push(s))
  await release()
  t.equal(code, 1)
  t.same(out, [])
  t.same(err, ["club regions create: the database stayed locked by another process's write past DATABASE_BUSY_TIMEOUT_MS; nothing was changed, try again"])
  t.equal(await runCli(['regions', 'create', '--name', 'North'], env, () => {}, () => {}), 0, 'and works once the lock is gone')
})
