import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { migrateToLatest, openDatabase, type Db } from './database.js'
import { ChangeTracker, readCache, type CommitCheck } from './read-cache.js'
import SQLite from 'better-sqlite3'

/** Two connections to one real database file, as the server and the `club` CLI have. */
async function twoConnections(t: { teardown(fn: () => unknown): void }, options = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'club-cache-'))
  const file = join(dir, 'club.db')
  const server = openDatabase(file, options)
  await migrateToLatest(server)
  const cli = openDatabase(file)
  t.teardown(async () => {
    await cli.destroy()
    await server.destroy()
    rmSync(dir, { recursive: true, force: true })
  })
  return { server, cli, file }
}

const now = '2026-03-01T10:00:00.000Z'
const setting = (db: Db, key: string, value: string) =>
  db.insertInto('settings').values({ key, value, created_at: now }).onConflict((oc) => oc.column('key').doUpdateSet({ value })).execute()

/** A cache over the settings table that counts its database reads. */
function settingsCache(db: Db) {
  let reads = 0
  const cache = readCache<string>(db, { name: 'test-settings', tables: ['settings'] })!
  const get = (key: string) =>
    cache.get(key, async () => {
      reads++
      const row = await db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst()
      if (!row) throw new Error(`no setting ${key}`)
      return row.value
    })
  return { cache, get, reads: () => reads }
}

t.test('answers from memory until this connection writes to a table it read from', async (t) => {
  const { server } = await twoConnections(t)
  await setting(server, 'a', '1')
  const { get, reads } = settingsCache(server)
  t.equal(await get('a'), '1')
  t.equal(await get('a'), '1')
  t.equal(reads(), 1, 'the second read came from the cache')

  await server.insertInto('users').values({ id: 'u1', email: 'x@example.org', password_hash: 'x', role: 'member', first_name: null, last_name: null, created_at: now, updated_at: now }).execute()
  t.equal(await get('a'), '1')
  t.equal(reads(), 1, 'a write to another table leaves it alone')

  await setting(server, 'a', '2')
  t.equal(await get('a'), '2', 'the read after an update sees it')
  await server.deleteFrom('settings').where('key', '=', 'a').execute()
  await t.rejects(get('a'), /no setting a/, 'the read after a delete sees it')
})

t.test("another connection's commit is seen by the next read", async (t) => {
  const { server, cli } = await twoConnections(t)
  await setting(server, 'a', '1')
  const { get, reads } = settingsCache(server)
  t.equal(await get('a'), '1')
  await setting(cli, 'a', '2')
  t.equal(await get('a'), '2')
  t.equal(reads(), 2)
  // Even one that touched another table: the cache cannot tell which, so it reads again.
  await cli.insertInto('users').values({ id: 'u1', email: 'x@example.org', password_hash: 'x', role: 'member', first_name: null, last_name: null, created_at: now, updated_at: now }).execute()
  t.equal(await get('a'), '2')
  t.equal(reads(), 3)
  await setting(cli, 'a', '3')
  t.equal(await get('a'), '3', 'outside a request too')
  // Reads asked for together share one check of the data version, made after all of them asked.
  await setting(cli, 'a', '4')
  t.same(await Promise.all([get('a'), get('a'), get('a')]), ['4', '4', '4'])
})

t.test('failed reads are not kept, the size is bounded, and 0 turns caching off', async (t) => {
  const { server } = await twoConnections(t, { readCacheEntries: 2 })
  for (const k of ['a', 'b', 'c']) await setting(server, k, k)
  const { cache, get, reads } = settingsCache(server)
  await t.rejects(get('missing'))
  await t.rejects(get('missing'))
  t.equal(reads(), 2, 'an unknown key is asked of the database every time')
  t.equal(cache.size, 0)
  await get('a')
  await get('b')
  await get('c')
  t.equal(cache.size, 2)
  await get('c')
  t.equal(reads(), 5)
  await get('a')
  t.equal(reads(), 6, 'the least recently used entry went first')

  const off = await twoConnections(t, { readCacheEntries: 0 })
  await setting(off.server, 'a', '1')
  const uncached = settingsCache(off.server)
  await uncached.get('a')
  await uncached.get('a')
  t.equal(uncached.reads(), 2)
})

t.test('there is no cache inside a transaction: it must see its own writes', async (t) => {
  const { server } = await twoConnections(t)
  await server.transaction().execute(async (tx) => {
    t.equal(readCache(tx, { name: 'test-settings', tables: ['settings'] }), undefined)
  })
  t.ok(readCache(server, { name: 'test-settings', tables: ['settings'] }))
})

t.test('a read racing a write never keeps the old answer under the new stamp', async (t) => {
  const { server } = await twoConnections(t)
  await setting(server, 'a', '1')
  const cache = readCache<string>(server, { name: 'race', tables: ['settings'] })!
  // The load reads, then a write lands before the load returns.
  const first = await cache.get('a', async () => {
    const row = await server.selectFrom('settings').select('value').where('key', '=', 'a').executeTakeFirstOrThrow()
    await setting(server, 'a', '2')
    return row.value
  })
  t.equal(first, '1')
  t.equal(await cache.get('a', async () => '2 (read again)'), '2 (read again)')
})

t.test('a request reading several caches in one callback shares one check of other commits', async (t) => {
  let checks = 0
  const tracker = new ChangeTracker({
    check: () => {
      checks++
      return 'same'
    }
  })
  await tracker.stamp(['tokens'])
  t.equal(checks, 1)
  // Still in the callback the check ran in (no I/O since): the credential, then the data.
  await tracker.stamp(['templates'])
  await tracker.stamp(['users'])
  t.equal(checks, 1, 'asked again with no turn of the event loop in between: the same check')

  // A connection of this process wrote (it can commit with no turn in between): asked again.
  tracker.noteStatement('insert into "settings" ("key") values (?)', false)
  await tracker.stamp(['templates'])
  t.equal(checks, 2)

  // A later callback (requests read from sockets in between may have arrived after the check): asked again.
  await new Promise((resolve) => setImmediate(resolve))
  await tracker.stamp(['templates'])
  t.equal(checks, 3)
  await new Promise((resolve) => setTimeout(resolve, 1))
  await tracker.stamp(['templates'])
  t.equal(checks, 4)
})

t.test('an answer that came asynchronously (PostgreSQL) is never reused', async (t) => {
  let checks = 0
  const tracker = new ChangeTracker({
    check: async () => {
      checks++
      return 'same' as const
    }
  })
  await tracker.stamp(['tokens'])
  await tracker.stamp(['templates'])
  t.equal(checks, 2)
})

t.test("a cached read never answers from before what the same request already read", async (t) => {
  const { server, file } = await twoConnections(t)
  await setting(server, 'b', '1')
  const { get } = settingsCache(server)
  t.equal(await get('b'), '1')
  // Another process, its statements unseen by this one's trackers.
  const other = new SQLite(file)
  t.teardown(() => other.close())
  await new Promise((resolve) => setImmediate(resolve))
  // All in one callback of the event loop: a cached read (its check of other commits), then the
  // other process commits, then the request reads the row itself and sees the commit.
  t.equal(await get('b'), '1')
  other.prepare("update settings set value = '2' where key = 'b'").run()
  const direct = await server.selectFrom('settings').select('value').where('key', '=', 'b').executeTakeFirstOrThrow()
  t.equal(direct.value, '2')
  t.equal(await get('b'), '2', 'the cached read after it checks again and reads the new value')
})

t.test('told which counted tables other commits wrote (PostgreSQL), only those stamps move, and every uncounted one', async (t) => {
  let answer: CommitCheck = 'same'
  // Told once: the next check finds nothing new.
  const tracker = new ChangeTracker({
    check: async () => {
      const told = answer
      answer = 'same'
      return told
    }
  })
  const counted = new Set(['templates', 'tokens'])
  const stamps = async () => ({ tokens: await tracker.stamp(['tokens']), templates: await tracker.stamp(['templates', 'tokens']), settings: await tracker.stamp(['settings', 'tokens']) })

  answer = { counted, changed: counted }
  const first = await stamps()
  answer = { counted, changed: new Set(['templates']) }
  const second = await stamps()
  t.equal(second.tokens, first.tokens, 'a commit to templates leaves what was read from tokens')
  t.not(second.templates, first.templates)
  t.not(second.settings, first.settings, 'a table without a counter goes by every commit')

  t.same(await stamps(), second, 'nothing committed: nothing moves')

  // A counter added (a newer migration ran elsewhere): sums change their terms, so every stamp moves past every earlier one.
  answer = { counted: new Set(['templates', 'tokens', 'settings']), changed: new Set() }
  const third = await stamps()
  for (const key of ['tokens', 'templates', 'settings'] as const) t.ok(third[key] > Math.max(...Object.values(second)), `${key} moved past every earlier stamp`)

  answer = 'changed'
  const fourth = await stamps()
  t.ok(fourth.tokens > third.tokens, "'changed' (SQLite's answer, or counters unknown) moves every stamp")
})
