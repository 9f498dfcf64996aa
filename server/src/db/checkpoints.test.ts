// SQLite's checkpoints in a worker thread (checkpoints.ts): it starts once a process has written
// enough to need it, copies the log back while this connection writes on, and closes before it.
import { existsSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { setImmediate } from 'node:timers/promises'
import { join } from 'node:path'
import t from 'tap'
import { checkpointsOf, migrateToLatest, openDatabase, sqliteOf, type Db } from './database.js'
import { RESET_PAGES, START_AFTER, type Checkpoint } from './checkpoints.js'

async function opened(t: { teardown(fn: () => unknown): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'club-checkpoints-'))
  const file = join(dir, 'club.db')
  const db = openDatabase(file)
  await migrateToLatest(db)
  t.teardown(async () => {
    await db.destroy()
    rmSync(dir, { recursive: true, force: true })
  })
  return { db, file }
}

const now = '2026-03-01T10:00:00.000Z'
/** `count` write transactions, each a setting of its own with a value of about a page. */
async function writeSettings(db: Db, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i++) {
    await db.transaction().execute((tx) => tx.insertInto('settings').values({ key: `key-${i}`, value: 'v'.repeat(3000), created_at: now }).execute())
  }
}

t.test('a process that writes little never starts the worker: SQLite checkpoints as it always did', async (t) => {
  const { db } = await opened(t)
  await writeSettings(db, 0, 20)
  t.equal(checkpointsOf(db)?.running, false)
  t.equal(sqliteOf(db).pragma('wal_autocheckpoint', { simple: true }), 1000, "SQLite's default")
})

t.test('after enough commits the worker copies the log back, and the connection keeps only the reset', async (t) => {
  const { db, file } = await opened(t)
  const checkpoints = checkpointsOf(db)!
  const seen: Checkpoint[] = []
  checkpoints.onCheckpoint = (c) => seen.push(c)
  // Migrations ran outside the counted commits: START_AFTER of these start the worker.
  await writeSettings(db, 0, START_AFTER)
  t.equal(checkpoints.running, true, 'the worker started')
  t.equal(sqliteOf(db).pragma('wal_autocheckpoint', { simple: true }), RESET_PAGES, "the connection's own checkpoint only resets the log")
  const sizeBefore = statSync(file).size
  // Writes go on while the worker copies: it checkpoints what was committed, never blocking them.
  let written = START_AFTER
  const deadline = Date.now() + 10_000
  while (!seen.some((c) => c.copied && c.checkpointed > 0) || statSync(file).size === sizeBefore) {
    if (Date.now() > deadline) throw new Error(`no checkpoint by the worker within 10 s: ${JSON.stringify(seen)}`)
    await writeSettings(db, written, 10)
    written += 10
    // A server's event loop turns between requests; the worker's reports arrive on a turn.
    await setImmediate()
  }
  t.ok(seen.every((c) => c.log >= c.checkpointed), 'never more copied than logged')
  t.ok(statSync(file).size > sizeBefore, 'the database file took the pages back, with the connection far under its own checkpoint')
  const count = await db.selectFrom('settings').select((eb) => eb.fn.countAll<number>().as('n')).where('key', 'like', 'key-%').executeTakeFirstOrThrow()
  t.equal(Number(count.n), written, 'every write is there')

  // A lone write afterwards is looked at and left in the log: copying it back would have the next
  // commit start the log over, a sync in the event loop's thread for every write under light load.
  const looks = seen.length
  await writeSettings(db, written, 1)
  const until = Date.now() + 10_000
  while (seen.length === looks) {
    if (Date.now() > until) throw new Error('the worker did not look at the lone write within 10 s')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  t.equal(seen.at(-1)!.copied, false, 'fewer than 1,000 pages waiting: nothing copied')
})

t.test('closing stops the worker first: the connection is the last and the log goes, as before', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'club-checkpoints-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'club.db')
  const db = openDatabase(file)
  await migrateToLatest(db)
  await writeSettings(db, 0, START_AFTER + 5)
  t.equal(checkpointsOf(db)!.running, true)
  await db.destroy()
  t.equal(existsSync(`${file}-wal`), false, 'no log left beside the file')
  const reopened = openDatabase(file)
  t.teardown(() => reopened.destroy())
  const count = await reopened.selectFrom('settings').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  t.equal(Number(count.n), START_AFTER + 5)
})

t.test('a worker that fails says so once, and the connection checkpoints as SQLite always did', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'club-checkpoints-'))
  const file = join(dir, 'club.db')
  const failures: Error[] = []
  const db = openDatabase(file, { checkpointsFailed: (err) => failures.push(err) })
  t.teardown(async () => {
    await db.destroy()
    rmSync(dir, { recursive: true, force: true })
  })
  await migrateToLatest(db)
  // The file moved away under the open connection: the worker, opening it by name, cannot.
  renameSync(file, join(dir, 'moved.db'))
  await writeSettings(db, 0, START_AFTER + 5)
  const deadline = Date.now() + 10_000
  while (failures.length === 0) {
    if (Date.now() > deadline) throw new Error('the worker did not fail within 10 s')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  t.match(failures[0]!.message, /unable to open|does not exist|SQLITE_CANTOPEN/i, 'told why')
  t.equal(checkpointsOf(db)!.running, false)
  t.equal(sqliteOf(db).pragma('wal_autocheckpoint', { simple: true }), 1000, "back to SQLite's default")
  await writeSettings(db, START_AFTER + 5, 10)
  t.equal(failures.length, 1, 'once: the worker\'s exit after its error is not a second failure')
})

t.test('in memory there is no file to checkpoint and no worker', async (t) => {
  const db = openDatabase(':memory:')
  t.teardown(() => db.destroy())
  t.equal(checkpointsOf(db), undefined)
})
