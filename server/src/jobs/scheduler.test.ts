// The built-in scheduler: a slot fired by two apps on one database runs once; after downtime each
// job's latest slot is caught up once, not once per missed slot; its tasks stop on close. Also the
// packages' expiry job, which runs only on the scheduler.
import { Writable } from 'node:stream'
import t from 'tap'
import cron from 'node-cron'
import { buildApp } from '../app.js'
import { ManualClock } from '../clock.js'
import { testApp, testConfig } from '../test-support/app.js'
import { userWithToken } from '../test-support/app.js'
import { insertPackage, runsOf } from './test-helpers.js'
import { previousSlot } from './scheduler.js'

const quiet = () => new Writable({ write: (_chunk, _encoding, done) => done() })

// Two apps in one process cannot race one SQLite file (better-sqlite3 waits for a lock synchronously,
// so the holder never gets to commit): here they fire in turn, and scheduler-processes.test.ts races
// two server processes.
t.test('two apps on one database fire a slot; it runs once', async (t) => {
  const a = await testApp(t)
  const clock = new ManualClock(a.clock.now())
  const b = await buildApp({ config: testConfig(a.dir, { DATABASE_URL: a.config.DATABASE_URL }), clock, logStream: quiet() })
  t.teardown(() => b.close())
  const slot = new Date('2026-03-01T10:00:00.000Z')
  for (let round = 0; round < 3; round++) {
    const at = new Date(slot.getTime() + round * 60_000)
    const [first, second] = round % 2 === 0 ? [a.app.scheduler, b.scheduler] : [b.scheduler, a.app.scheduler]
    t.equal((await first.fire('court-locking', at))?.kind, 'ran', `slot ${round}: the first app runs it`)
    t.equal((await second.fire('court-locking', at))?.kind, 'duplicate', `slot ${round}: the second is told it is done`)
  }
  // Two fires of one slot at once in one app: one runs, the other finds it done or under way.
  const at = new Date(slot.getTime() + 10 * 60_000)
  const both = await Promise.all([a.app.scheduler.fire('court-locking', at), a.app.scheduler.fire('court-locking', at)])
  t.equal(both.filter((o) => o?.kind === 'ran').length, 1)
  t.ok(both.some((o) => o?.kind === 'held' || o?.kind === 'duplicate'), 'the other found it under way or done')
  const runs = await runsOf(a, 'court-locking')
  t.equal(runs.length, 4)
  t.same(new Set(runs.map((r) => r.delivery)).size, 4, 'one run per slot')
  t.ok(runs.every((r) => r.trigger === 'schedule' && r.status === 'succeeded'))
})

t.test('catching up after downtime: one run per job, not one per missed slot; tasks stop on close', async (t) => {
  const first = await testApp(t, { CLUB_TIMEZONE: 'Europe/Madrid' })
  first.clock.set('2026-03-01T10:00:00.000Z')
  const caught = await first.app.scheduler.start()
  t.same(caught.map((c) => c.outcome), caught.map(() => 'ran'), 'a new database: each job caught up once')
  t.match(caught.find((c) => c.job === 'summary'), { slot: '2026-02-28T23:05:00.000Z' }, "the summary's latest slot is 00:05 in Madrid")
  t.equal(first.app.scheduler.scheduledTasks.length, 8, 'a task per job')
  const tasks = first.app.scheduler.scheduledTasks
  t.ok(tasks.every((task) => cron.getTasks().has(task.id)))
  t.same(await first.app.scheduler.start(), [], 'starting twice schedules nothing more')
  await first.app.close()
  t.ok(tasks.every((task) => task.getStatus() === 'destroyed' && !cron.getTasks().has(task.id)), 'closing destroyed every task')

  // Three days and a bit down: the summary missed three 00:05 slots, court-locking thousands.
  const clock = new ManualClock('2026-03-04T10:00:00.000Z')
  const second = await buildApp({ config: testConfig(first.dir, { DATABASE_URL: first.config.DATABASE_URL, CLUB_TIMEZONE: 'Europe/Madrid' }), clock, logStream: quiet() })
  t.teardown(() => second.close())
  const again = await second.scheduler.start()
  t.match(again.find((c) => c.job === 'summary'), { slot: '2026-03-03T23:05:00.000Z', outcome: 'ran' })
  const summaries = await second.db.selectFrom('job_runs').select(['delivery']).where('job', '=', 'summary').orderBy('started_at').execute()
  t.same(summaries.map((r) => r.delivery), ['2026-02-28T23:05:00.000Z', '2026-03-03T23:05:00.000Z'], 'one catch-up run after the downtime')
  const locking = await second.db.selectFrom('job_runs').select('delivery').where('job', '=', 'court-locking').execute()
  t.same(locking.map((r) => r.delivery), ['2026-03-01T10:00:00.000Z', '2026-03-04T10:00:00.000Z'])
  // A restart with nothing missed runs nothing.
  t.same((await second.scheduler.start()).length, 0)
})

t.test('a restart within a slot runs nothing again', async (t) => {
  const ctx = await testApp(t)
  ctx.clock.set('2026-03-01T10:00:30.000Z')
  await ctx.app.scheduler.start()
  await ctx.app.scheduler.stop()
  const repeat = await ctx.app.scheduler.start()
  t.same(repeat.map((c) => c.outcome), repeat.map(() => 'duplicate'), 'every latest slot was done')
})

t.test('the latest slot at or before now', async (t) => {
  const task = cron.createTask('5 0 * * *', () => undefined, { timezone: 'Europe/Madrid' })
  const next = (d: Date) => (task as unknown as { timeMatcher: { getNextMatch(d: Date): Date } }).timeMatcher.getNextMatch(d)
  t.equal(previousSlot(next, new Date('2026-03-04T10:00:00Z'))?.toISOString(), '2026-03-03T23:05:00.000Z')
  t.equal(previousSlot(next, new Date('2026-03-03T23:05:00Z'))?.toISOString(), '2026-03-03T23:05:00.000Z', 'now itself is a slot')
  t.equal(previousSlot(next, new Date('2026-03-03T23:04:59Z'))?.toISOString(), '2026-03-02T23:05:00.000Z')
  const yearly = cron.createTask('0 0 1 1 *', () => undefined, { timezone: 'UTC' })
  const nextYearly = (d: Date) => (yearly as unknown as { timeMatcher: { getNextMatch(d: Date): Date } }).timeMatcher.getNextMatch(d)
  t.equal(previousSlot(nextYearly, new Date('2026-03-04T10:00:00Z'))?.toISOString(), '2026-01-01T00:00:00.000Z')
  await task.destroy()
  await yearly.destroy()
})

t.test('packages past their expiration are written EXPIRED, in batches', async (t) => {
  const ctx = await testApp(t)
  const member = await userWithToken(ctx)
  const past = '2026-02-28T00:00:00.000Z'
  for (let i = 0; i < 501; i++) await insertPackage(ctx, member.id, { expiration: past, remaining: 1 })
  const exhausted = await insertPackage(ctx, member.id, { expiration: past, remaining: 0, status: 'EXHAUSTED' })
  const cancelled = await insertPackage(ctx, member.id, { expiration: past, remaining: 4, status: 'CANCELED' })
  const live = await insertPackage(ctx, member.id, { expiration: '2026-03-01T10:00:00.001Z', remaining: 4 })
  const outcome = await ctx.app.jobs.run('packages-expiry', { trigger: 'cli' })
  t.match(outcome, { kind: 'ran', run: { counts: { expired: 502 } } })
  const status = async (id: string) => (await ctx.app.db.selectFrom('packages').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status
  t.equal(await status(exhausted.id), 'EXPIRED')
  t.equal(await status(cancelled.id), 'CANCELED', 'a cancelled package stays cancelled')
  t.equal(await status(live.id), 'ACTIVE')
  const again = await ctx.app.jobs.run('packages-expiry', { trigger: 'cli' })
  t.equal(again.kind, 'ran')
  t.same(again.kind === 'ran' && again.run.counts, { expired: 0 }, 'a second run expires nothing')
})
