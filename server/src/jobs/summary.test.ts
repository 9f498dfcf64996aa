// The summary job: a seeded day's figures (its bounds in the club's timezone), kept once per day and
// mailed once to each admin, listed latest first.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { monthlyPlan } from '../memberships/test-fixtures.js'
import { testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { setDefaultPaymentMethod } from '../users/payment-methods.js'
import { insertOrder, insertPackage } from './test-helpers.js'
import { summaryDay } from './summary.js'

// 2026-03-01 in Madrid (UTC+1) runs from 2026-02-28T23:00Z to 2026-03-01T23:00Z.
const IN = ['2026-02-28T23:00:00.000Z', '2026-03-01T12:00:00.000Z', '2026-03-01T22:59:59.999Z']
const OUT = ['2026-02-28T22:59:59.999Z', '2026-03-01T23:00:00.000Z']

async function box(ctx: TestApp, status: 'PENDING' | 'APPROVED', lastSeen: string | null) {
  const id = randomUUID()
  await ctx.app.db
    .insertInto('replay_servers')
    .values({
      id,
      device_id: id,
      server_id_hash: `s${id}`,
      token_hash: `t${id}`,
      status,
      hostname: null,
      display_name: null,
      version: null,
      local_ip: null,
      server_url: null,
      area_id: null,
      config: null,
      target_version: null,
      last_seen_at: lastSeen,
      created_at: IN[0]!,
      updated_at: IN[0]!
    })
    .execute()
}

async function jobRun(ctx: TestApp, status: 'failed' | 'succeeded', at: string) {
  await ctx.app.db
    .insertInto('job_runs')
    .values({ id: randomUUID(), job: 'reminder', trigger: 'schedule', delivery: null, date: at, started_at: at, finished_at: at, status, counts: '{}', note: null, error: status === 'failed' ? 'relay down' : null })
    .execute()
}

t.test("a day's figures from SQL, kept and mailed once", async (t) => {
  const ctx = await testApp(t, { CLUB_TIMEZONE: 'Europe/Madrid', ACCESS_TOKEN_TTL_SECONDS: String(60 * 86400) })
  ctx.clock.set('2026-02-15T10:00:00.000Z')
  const admin = await userWithToken(ctx, 'admin')
  const otherAdmin = await userWithToken(ctx, 'admin')
  const member = await userWithToken(ctx, 'member')
  // A membership bought on Feb 15 and cancelled on the day: counted as cancelled, not sold.
  const planId = (await ctx.app.inject({ method: 'POST', url: '/apis/v2/admin/memberships', headers: { authorization: admin.authorization }, payload: monthlyPlan })).json().id
  await setDefaultPaymentMethod(ctx.app.db, member.id, { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030 }, ctx.clock)
  const sub = (await ctx.app.inject({ method: 'POST', url: '/apis/v2/membership-subscriptions', headers: { authorization: member.authorization }, payload: { mode: 'ORDER', membership: { id: planId } } })).json()
  ctx.clock.set(IN[1]!)
  const cancelled = await ctx.app.inject({ method: 'POST', url: `/apis/v2/membership-subscriptions/${sub.id}/cancellation`, headers: { authorization: member.authorization } })
  t.ok(cancelled.statusCode < 300, `cancelled (${cancelled.statusCode})`)

  // Users: two on the day, two just outside it.
  for (const at of [IN[0]!, IN[2]!, ...OUT]) {
    ctx.clock.set(at)
    await userWithToken(ctx, 'member')
  }
  await insertOrder(ctx, member.id, 'MEMBERSHIP', 'PAID', 4990, IN[0]!)
  await insertOrder(ctx, member.id, 'MEMBERSHIP', 'PAID', 3000, IN[2]!)
  await insertOrder(ctx, member.id, 'MEMBERSHIP', 'PAID', 9999, OUT[0]!)
  await insertOrder(ctx, member.id, 'MEMBERSHIP_RENEWAL', 'PAID', 4990, IN[1]!)
  await insertOrder(ctx, member.id, 'MEMBERSHIP_RENEWAL', 'FAILED', 4990, IN[1]!)
  await insertOrder(ctx, member.id, 'PURCHASE', 'PAID', 2500, IN[1]!)
  await insertOrder(ctx, member.id, 'PURCHASE', 'PENDING', 2500, IN[1]!)
  const bought = await insertPackage(ctx, member.id, { expiration: '2026-06-01T00:00:00.000Z', remaining: 8, source: 'PURCHASE', createdAt: IN[1]! })
  await insertPackage(ctx, member.id, { expiration: '2026-06-01T00:00:00.000Z', remaining: 10, source: 'STAFF', createdAt: IN[1]! })
  await insertPackage(ctx, member.id, { expiration: '2026-06-01T00:00:00.000Z', remaining: 10, source: 'PURCHASE', createdAt: OUT[1]! })
  const redemptionOrder = await insertOrder(ctx, member.id, 'REDEMPTION', 'PAID', 0, IN[1]!)
  for (const [n, at, cancelled] of [[1, IN[0]!, null], [2, IN[2]!, null], [3, IN[1]!, IN[2]!], [4, OUT[1]!, null]] as const) {
    await ctx.app.db
      .insertInto('package_redemptions')
      .values({
        id: randomUUID(),
        package_id: bought.id,
        item_id: bought.itemId,
        item: 1,
        type: 'EVENT_SIGNUP',
        user_id: member.id,
        creator_id: member.id,
        target_key: `event:${n}`,
        target: '{}',
        target_start_at: null,
        order_id: redemptionOrder,
        order_item_id: `${redemptionOrder}:${n}`,
        redemption_date: at,
        cancelation_date: cancelled,
        forfeited: 0
      })
      .execute()
  }
  await box(ctx, 'PENDING', null)
  await box(ctx, 'APPROVED', '2026-03-01T20:00:00.000Z')
  await box(ctx, 'APPROVED', '2026-03-01T22:30:00.000Z')
  await box(ctx, 'APPROVED', null)
  await jobRun(ctx, 'failed', IN[1]!)
  await jobRun(ctx, 'failed', OUT[1]!)
  await jobRun(ctx, 'succeeded', IN[1]!)

  // 00:05 on March 2 in Madrid.
  ctx.clock.set('2026-03-01T23:05:00.000Z')
  const first = await ctx.app.jobs.run('summary', { trigger: 'schedule', key: 'schedule:test', delivery: 'test' })
  t.match(first, { kind: 'ran', run: { counts: { made: 1, mailed: 2 } } })
  const again = await ctx.app.jobs.run('summary', { trigger: 'cli' })
  t.match(again, { kind: 'ran', run: { counts: { already_made: 1, mailed_already: 2 } } }, 'a second run makes and mails nothing')

  const list = await ctx.app.inject({ url: '/apis/v2/admin/summaries', headers: { authorization: admin.authorization } })
  t.equal(list.statusCode, 200)
  t.equal(list.json()._total, 1)
  const summary = list.json().items[0]
  t.match(summary, { date: '2026-03-01', timezone: 'Europe/Madrid', currency: 'EUR' })
  t.same(summary.figures, {
    newUsers: 2,
    memberships: {
      sold: { count: 2, amount: 79.9 },
      renewed: { count: 1, amount: 49.9 },
      failed: { count: 1, amount: 49.9 },
      cancelled: { count: 1, amount: 49.9 }
    },
    packages: { sold: 1, purchaseOrders: { count: 1, amount: 25 }, redeemed: 2 },
    recordingBoxes: { pendingApproval: 1, notSeenForAnHour: 2 },
    replaysMade: 0,
    failedJobRuns: 1
  })
  t.match(summary.text, /Memberships sold: 2 \(79\.90 EUR\)/)
  t.match(summary.html, /<th align="left">Package items redeemed<\/th><td>2<\/td>/)
  const mails = await ctx.app.db.selectFrom('mail_outbox').select(['recipient', 'subject']).where('kind', '=', 'summary').orderBy('recipient').execute()
  t.same(mails.map((m) => m.recipient).sort(), [admin.email, otherAdmin.email].sort())
  t.match(mails[0], { subject: 'Club summary for 2026-03-01' })

  const forbidden = await ctx.app.inject({ url: '/apis/v2/admin/summaries', headers: { authorization: member.authorization } })
  t.equal(forbidden.statusCode, 403, 'admins only')
})

t.test('the day summed up is the local day before the run', async (t) => {
  t.same(summaryDay(new Date('2026-03-01T23:05:00Z'), 'Europe/Madrid'), { day: '2026-03-01', start: '2026-02-28T23:00:00.000Z', end: '2026-03-01T23:00:00.000Z' })
  // The day DST starts in Madrid has 23 hours.
  t.same(summaryDay(new Date('2026-03-30T08:00:00Z'), 'Europe/Madrid'), { day: '2026-03-29', start: '2026-03-28T23:00:00.000Z', end: '2026-03-29T22:00:00.000Z' })
  t.same(summaryDay(new Date('2026-03-02T00:05:00Z'), 'UTC'), { day: '2026-03-01', start: '2026-03-01T00:00:00.000Z', end: '2026-03-02T00:00:00.000Z' })
})
