// The outbox: an event is written with its change or not at all, read back from a cursor with
// nothing missed and nothing twice, and numbered in commit order even when transactions race
// (PostgreSQL, without the server's write lock, numbering at commit).
import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import t from 'tap'
import type { Db } from '../db/database.js'
import type { Database } from '../db/schema.js'
import { testApp, type Teardown } from '../test-support/app.js'
import { testPostgresUrl } from '../test-support/postgres.js'
import { cursorAfter, eventsAfterSeq, listEvents, onEventsCommitted, recordEvent, type NewEvent } from './outbox.js'

const now = new Date('2026-03-01T10:00:00.000Z')
const event = (n: number, type: NewEvent['type'] = 'user.created'): NewEvent => ({ type, resourceId: `r${n}`, data: { id: `r${n}`, n } })

async function record(db: Db, ...events: NewEvent[]): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const each of events) await recordEvent(trx, each, now)
  })
}

/** Every event of the feed, page by page through _links-style cursors. */
async function readAll(db: Db, limit: number, types?: NewEvent['type'][]): Promise<string[]> {
  const seen: string[] = []
  let after: string | undefined
  for (;;) {
    const page = await listEvents(db, { after, types, limit })
    seen.push(...page.events.map((e) => e.resource.id))
    if (page.events.length < limit) return seen
    after = page.next
  }
}

t.test('the feed from a cursor answers exactly the events after it, oldest first, filtered by type', async (t) => {
  const { app } = await testApp(t)
  await record(app.db, event(1), event(2, 'template.created'), event(3))
  await record(app.db, event(4, 'template.created'), event(5))
  const first = await listEvents(app.db, { limit: 2 })
  t.same(first.events.map((e) => e.resource.id), ['r1', 'r2'])
  t.same(first.events[0], { id: first.events[0]!.id, type: 'user.created', timestamp: now.toISOString(), resource: { id: 'r1' }, data: { id: 'r1', n: 1 } })
  t.match(first.events[0]!.id, /^evt_[0-9a-f]{32}$/)
  const rest = await listEvents(app.db, { after: first.next, limit: 10 })
  t.same(rest.events.map((e) => e.resource.id), ['r3', 'r4', 'r5'], 'nothing missed, nothing twice')
  const end = await listEvents(app.db, { after: rest.next, limit: 10 })
  t.same(end.events, [], 'nothing after the last')
  t.equal(end.next, rest.next, 'an empty page hands the same cursor back to poll with')
  t.same(await readAll(app.db, 2), ['r1', 'r2', 'r3', 'r4', 'r5'])
  t.same(await readAll(app.db, 1, ['template.created']), ['r2', 'r4'])
  await record(app.db, event(6))
  t.same((await listEvents(app.db, { after: end.next, limit: 10 })).events.map((e) => e.resource.id), ['r6'], 'a later event is read from the kept cursor')
  t.same((await eventsAfterSeq(app.db, 4, 10)).map((row) => row.resource_id), ['r5', 'r6'])
})

t.test('a cursor the feed never gave is refused naming after', async (t) => {
  const { app } = await testApp(t)
  for (const after of ['', 'abc', cursorAfter(1).slice(0, -1) + '!', Buffer.from('evs:-1').toString('base64url'), Buffer.from('evs:99999999999999999').toString('base64url')]) {
    await t.rejects(listEvents(app.db, { after, limit: 1 }), { statusCode: 400, message: /^after / }, JSON.stringify(after))
  }
})

t.test('a transaction that fails after recordEvent leaves neither its change nor its event, and wakes nobody', async (t) => {
  const { app, clock } = await testApp(t)
  let woken = 0
  onEventsCommitted(app.db, () => woken++)
  await t.rejects(
    app.db.transaction().execute(async (trx) => {
      await trx.insertInto('settings').values({ key: 'outbox-test', value: 'x', created_at: clock.now().toISOString() }).execute()
      await recordEvent(trx, event(1), now)
      throw new Error('the change failed after its event was written')
    }),
    /the change failed/
  )
  t.same((await listEvents(app.db, { limit: 10 })).events, [])
  t.equal(await app.db.selectFrom('settings').select('key').where('key', '=', 'outbox-test').executeTakeFirst(), undefined)
  t.equal(woken, 0)
  await app.db.transaction().execute((trx) => trx.insertInto('settings').values({ key: 'no-event', value: 'x', created_at: clock.now().toISOString() }).execute())
  t.equal(woken, 0, 'a commit that wrote no event wakes nobody')
  await record(app.db, event(2), event(3))
  t.equal(woken, 1, 'one wake per commit that wrote events, after it')
  t.same((await listEvents(app.db, { limit: 10 })).events.map((e) => e.resource.id), ['r2', 'r3'])
})

t.test('recordEvent refuses to run outside a transaction', async (t) => {
  const { app } = await testApp(t)
  await t.rejects(recordEvent(app.db as never, event(1), now), /inside the transaction/)
  t.same((await listEvents(app.db, { limit: 10 })).events, [])
})

if (testPostgresUrl) {
  /** The database without the server's write lock (issue 37 removes it): only the outbox's own ordering is left. */
  function unlocked(t: Teardown, url: string): Kysely<Database> {
    const pool = new pg.Pool({ connectionString: url, max: 8 })
    // The test database is dropped at teardown (with force): idle connections then error, harmlessly.
    pool.on('error', () => {})
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
    t.teardown(() => pool.ending || db.destroy())
    return db
  }

  t.test('PostgreSQL: events are numbered at commit: a second event-writing transaction commits without waiting for the first, and is numbered before it', async (t) => {
    const { app, config } = await testApp(t)
    const db = unlocked(t, config.DATABASE_URL)
    const a = await db.startTransaction().execute()
    await recordEvent(a, event(1), now)
    const b = await db.startTransaction().execute()
    // Numbered when written, B's event would wait for A's commit on the counter row's lock (bounded: 10 s).
    const bDone = (async () => {
      await recordEvent(b, event(2), now)
      await recordEvent(b, event(3), now)
      await b.commit().execute()
    })()
    const waited = await Promise.race([bDone.then(() => false), new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 10_000))])
    t.notOk(waited, 'B committed while A was still open')
    const afterB = await listEvents(app.db, { limit: 10 })
    t.same(afterB.events.map((e) => e.resource.id), ['r2', 'r3'], "only B's events, in the order B wrote them")
    t.same(await app.db.selectFrom('outbox_events').select('seq').where('seq', '<', 0).execute(), [], 'no reader sees a provisional number')
    await a.commit().execute()
    const afterA = await listEvents(app.db, { after: afterB.next, limit: 10 })
    t.same(afterA.events.map((e) => e.resource.id), ['r1'], 'the reader at B’s cursor sees A: A was numbered at its commit, after B')
    t.ok(afterA.nextSeq > afterB.nextSeq)
    t.same(await readAll(app.db, 10), ['r2', 'r3', 'r1'], 'the feed is in commit order')
    await db.destroy()
  })

  t.test('PostgreSQL: racing writers, a reader polling from its cursor misses nothing and sees nothing twice', async (t) => {
    const { app, config } = await testApp(t)
    const db = unlocked(t, config.DATABASE_URL)
    const writers = 6
    const perWriter = 20
    const written = Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let i = 0; i < perWriter; i++) {
          await db.transaction().execute(async (trx) => {
            // Work before and after taking the number, so commits land in every order a sequence would allow.
            await trx.selectFrom('outbox_events').select('seq').limit(1).execute()
            await recordEvent(trx, event(w * 1000 + i), now)
            await trx.selectFrom('outbox_events').select('seq').limit(1).execute()
          })
        }
      })
    )
    let done = false
    void written.finally(() => (done = true))
    const seen: string[] = []
    let after: string | undefined
    const deadline = Date.now() + 60_000
    while (seen.length < writers * perWriter && Date.now() < deadline) {
      const finished = done
      const page = await listEvents(app.db, { after, limit: 7 })
      seen.push(...page.events.map((e) => e.resource.id))
      after = page.next
      if (finished && page.events.length === 0) break
    }
    await written
    t.equal(seen.length, writers * perWriter, 'every committed event was read')
    t.equal(new Set(seen).size, seen.length, 'none twice')
    await db.destroy()
  })
}
