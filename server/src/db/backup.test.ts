import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t from 'tap'
import { runCli } from '../cli.js'
import { ManualClock } from '../clock.js'
import { ConfigError, loadConfig } from '../config.js'
import { restoreDatabase, takeScheduledBackup } from './backup.js'
import { migrateToLatest, openDatabase } from './database.js'
import { testApp } from '../test-support/app.js'

function tempDir(t: { teardown(fn: () => unknown): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'club-backup-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

async function club(file: string, ...argv: string[]) {
  let out = ''
  let err = ''
  const code = await runCli(argv, { DATABASE_URL: file, LOG_LEVEL: 'silent' }, (s) => (out += s), (s) => (err += s))
  return { code, json: out && code === 0 ? JSON.parse(out) : undefined, out, err }
}

/** A migrated club database with a table the tests write rows into. */
async function database(dir: string) {
  const file = join(dir, 'club.db')
  const db = openDatabase(file)
  await migrateToLatest(db)
  await db.schema.createTable('burst').addColumn('n', 'integer', (c) => c.primaryKey()).execute()
  return { file, db }
}

const betterSqlite3 = createRequire(import.meta.url).resolve('better-sqlite3')

/** A second process writing one row per transaction and printing each number once committed. */
function writer(file: string) {
  const script = `
    const SQLite = require(${JSON.stringify(betterSqlite3)})
    const db = new SQLite(${JSON.stringify(file)})
    db.pragma('busy_timeout = 5000')
    const insert = db.prepare('insert into burst (n) values (?)')
    let n = 0
    const step = () => { for (let i = 0; i < 20; i++) { insert.run(++n); process.stdout.write(n + '\\n') } setImmediate(step) }
    step()`
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  let acknowledged = 0
  let buffer = ''
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString()
    const lines = buffer.split('\n')
    buffer = lines.pop()!
    if (lines.length > 0) acknowledged = Number(lines.at(-1))
  })
  return {
    acknowledged: () => acknowledged,
    /** Resolves once at least `count` writes were acknowledged. */
    until: (count: number) =>
      new Promise<void>((resolve) => {
        const check = () => (acknowledged >= count ? resolve() : setImmediate(check))
        check()
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve()
        child.once('exit', () => resolve())
        child.kill()
      })
  }
}

t.test('a backup taken during a write burst is sound and holds every write acknowledged before it began', async (t) => {
  const dir = tempDir(t)
  const { file, db } = await database(dir)
  t.teardown(() => db.destroy())
  const burst = writer(file)
  t.teardown(() => burst.stop())
  await burst.until(200)
  const before = burst.acknowledged()
  const backup = join(dir, 'backups', 'copy.db')
  const result = await club(file, 'db', 'backup', backup)
  t.equal(result.code, 0, result.err)
  t.equal(result.json.file, backup)
  await burst.stop()

  const copy = new SQLite(backup, { readonly: true })
  t.teardown(() => copy.close())
  t.equal(copy.pragma('integrity_check', { simple: true }), 'ok')
  const { count, max } = copy.prepare('select count(*) as count, max(n) as max from burst').get() as { count: number; max: number }
  t.ok(max >= before, `rows up to ${max}, ${before} acknowledged before the backup`)
  t.equal(count, max, 'no gaps: one consistent state')
  t.ok(copy.prepare('select count(*) as c from kysely_migration').pluck().get() as number > 0, 'the schema came along')

  const again = await club(file, 'db', 'backup', backup)
  t.equal(again.code, 1)
  t.match(again.err, /already exists/)
})

t.test('restore puts a backup back when nothing has the database open, and keeps what it replaced', async (t) => {
  const dir = tempDir(t)
  const { file, db } = await database(dir)
  await db.insertInto('burst' as never).values({ n: 1 } as never).execute()
  const backup = join(dir, 'one-row.db')
  t.equal((await club(file, 'db', 'backup', backup)).code, 0)
  await db.insertInto('burst' as never).values({ n: 2 } as never).execute()

  const busy = await club(file, 'db', 'restore', backup)
  t.equal(busy.code, 1, 'refused while the database is open (as a running server has it)')
  t.match(busy.err, /is in use/)
  await db.destroy()

  const restored = await club(file, 'db', 'restore', backup)
  t.equal(restored.code, 0, restored.err)
  t.equal(restored.json.restored, file)
  t.ok(existsSync(restored.json.previous), 'the replaced database is kept beside it')
  const reopened = openDatabase(file)
  t.teardown(() => reopened.destroy())
  t.same((await reopened.selectFrom('burst' as never).select('n' as never).execute()).map((r) => (r as { n: number }).n), [1])
  t.same(await migrateToLatest(reopened), [], 'its schema is current')
  const previous = new SQLite(restored.json.previous, { readonly: true })
  t.teardown(() => previous.close())
  t.equal(previous.prepare('select count(*) from burst').pluck().get(), 2, 'the kept one holds the later write')
})

t.test('restore refuses a backup with a newer schema, and a file that is not a club database', async (t) => {
  const dir = tempDir(t)
  const { file, db } = await database(dir)
  const backup = join(dir, 'future.db')
  t.equal((await club(file, 'db', 'backup', backup)).code, 0)
  await db.destroy()
  const edit = new SQLite(backup)
  edit.prepare("insert into kysely_migration (name, timestamp) values ('9999_from_the_future', '2030-01-01T00:00:00.000Z')").run()
  edit.close()
  const refused = await club(file, 'db', 'restore', backup)
  t.equal(refused.code, 1)
  t.match(refused.err, /newer schema than this code \(migrations 9999_from_the_future\)/)
  t.equal(readdirSync(dir).filter((f) => f.includes('before-restore')).length, 0, 'the database was left alone')

  const empty = join(dir, 'empty.db')
  new SQLite(empty).close()
  const notOurs = await club(file, 'db', 'restore', empty)
  t.equal(notOurs.code, 1)
  t.match(notOurs.err, /not a club database/)
  const missing = await club(file, 'db', 'restore', join(dir, 'nope.db'))
  t.match(missing.err, /does not exist/)
})

t.test('scheduled backups are named by time and only the newest BACKUP_KEEP stay', async (t) => {
  const dir = tempDir(t)
  const { db } = await database(dir)
  t.teardown(() => db.destroy())
  const clock = new ManualClock('2026-05-01T03:00:00.000Z')
  const backups = join(dir, 'backups')
  const taken = []
  for (let day = 0; day < 3; day++) {
    taken.push(await takeScheduledBackup(db, { dir: backups, keep: 2, clock }))
    clock.advance(24 * 3600 * 1000)
  }
  t.same(readdirSync(backups).sort(), ['club-2026-05-02T03-00-00-000Z.db', 'club-2026-05-03T03-00-00-000Z.db'])
  t.same(taken[2]!.deleted, ['club-2026-05-01T03-00-00-000Z.db'])
})

t.test('BACKUP_SCHEDULE is checked at start and announced', async (t) => {
  t.throws(() => loadConfig({ BACKUP_SCHEDULE: 'every night' }), ConfigError)
  const dir = tempDir(t)
  // A SQLite file whatever the suite runs on: these backups are SQLite's.
  const ctx = await testApp(t, { DATABASE_URL: join(dir, 'club.db'), BACKUP_SCHEDULE: '0 3 * * *', BACKUP_DIR: join(dir, 'b'), BACKUP_KEEP: '3' })
  t.match(ctx.logs(), /"schedule":"0 3 \* \* \*".*database backups scheduled/)
})

t.test('on PostgreSQL the backups of SQLite are refused in words, not attempted', async (t) => {
  const dir = tempDir(t)
  t.throws(() => restoreDatabase('postgres://club@db.internal/club', join(dir, 'backup.db'), new ManualClock('2026-05-01T03:00:00.000Z')), {
    name: 'BackupError',
    message: /on PostgreSQL use pg_dump and pg_restore/
  })
})
