// Pauses under the plan's policy: the fee, the schedule moved in local days, an early resume that
// gives the unused days back, a pending one called off, and each refusal naming its rule.
import t from 'tap'
import { setDefaultPaymentMethod } from '../users/payment-methods.js'
import { lossyProvider } from '../test-support/lossy-provider.js'
import { errorOf, testApp, userWithToken } from '../test-support/app.js'
import { unusedDays } from './pauses.js'
import { monthlyPlan } from './test-fixtures.js'

const SUBSCRIPTIONS = '/apis/v2/membership-subscriptions'
type Who = { id: string; authorization: string }
const policy = { minimumWeeks: 1, maximumWeeks: 4, pausesPerYear: 1, pauseFee: 5 }

async function setup(t: Parameters<typeof testApp>[0], plan: Record<string, unknown> = { ...monthlyPlan, pausePolicy: policy }, start = '2026-01-31T09:00:00.000Z') {
  const ctx = await testApp(t, { CLUB_TIMEZONE: 'Europe/Madrid', ACCESS_TOKEN_TTL_SECONDS: String(365 * 86400) })
  ctx.clock.set(start)
  const admin = await userWithToken(ctx, 'admin')
  const member = await userWithToken(ctx, 'member')
  const call = (method: 'GET' | 'POST', url: string, who: Who, payload?: unknown) =>
    ctx.app.inject({ method, url, headers: { authorization: who.authorization }, ...(payload !== undefined ? { payload: payload as object } : {}) })
  const planId = (await call('POST', '/apis/v2/admin/memberships', admin, plan)).json().id as string
  const card = (last4: string) => setDefaultPaymentMethod(ctx.app.db, member.id, { brand: 'visa', last4, expMonth: 12, expYear: 2030 }, ctx.clock)
  await card('4242')
  const subscription = (await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: planId } })).json()
  const url = `${SUBSCRIPTIONS}/${subscription.id}`
  const run = async (date: string) => {
    ctx.clock.set(date)
    return (await call('POST', '/apis/v2/admin/membership-jobs', admin, { type: 'CHARGE', date })).json()
  }
  return { ctx, admin, member, call, url, card, run, show: async () => (await call('GET', url, member)).json() }
}

t.test('a three-week pause: its fee charged, the next charge and grant moved 21 local days, renewed on the new date', async (t) => {
  const { ctx, member, call, url, show, run } = await setup(t)
  ctx.clock.set('2026-02-10T12:00:00.000Z')
  const res = await call('POST', `${url}/pauses`, member, { pauseDurationWeeks: 3 })
  t.equal(res.statusCode, 201)
  t.match(res.json(), { pauseStartDate: '2026-02-10T12:00:00.000Z', pauseEndDate: '2026-03-03T12:00:00.000Z', pauseDurationWeeks: 3, pauseFeePaid: 5, status: 'ACTIVE' })
  const self = await call('GET', res.json()._links.self.href, member)
  t.equal(self.statusCode, 200, "the pause's self link is the pause")
  t.equal(self.json().id, res.json().id)
  t.equal((await call('GET', `${url}/pauses/nope`, member)).statusCode, 404)
  const s = await show()
  t.match(s, { extendedStatus: 'PAUSED', nextChargeDate: '2026-03-21T09:00:00.000Z', billingCycleEnd: '2026-03-21T09:00:00.000Z', activePause: { status: 'ACTIVE' } })
  const fee = await ctx.app.db.selectFrom('orders').selectAll().where('kind', '=', 'PAUSE_FEE').executeTakeFirstOrThrow()
  // 5.00; fee 2.5% = 0.125 -> 0.13; taxable 5.13; VAT 21% = 1.0773 -> 1.08; total 6.21
  t.match(fee, { status: 'PAID', total_minor: 621, user_id: member.id })
  t.same((await run('2026-02-28T09:00:00.000Z')).users.items, [], 'not renewed on the old date')
  t.match((await run('2026-03-21T09:00:00.000Z')).job.counts, { renewed: 1 })
  t.match(await show(), { extendedStatus: 'ACTIVE', nextChargeDate: '2026-04-21T08:00:00.000Z', activePause: null })
  const list = (await call('GET', `${url}/pauses`, member)).json()
  t.match(list, { _total: 1, items: [{ status: 'COMPLETED' }] })
})

t.test('a two-week pause asked on 25 November moves the next charge from 25 December to 8 January, exactly 14 days', async (t) => {
  const { ctx, member, call, url, show, run } = await setup(t, { ...monthlyPlan, pausePolicy: { ...policy, pauseFee: 0 } }, '2026-11-25T09:00:00.000Z')
  const before = await show()
  t.match(before, { nextChargeDate: '2026-12-25T09:00:00.000Z' })
  t.equal((await call('POST', `${url}/pauses`, member, { pauseDurationWeeks: 2 })).statusCode, 201)
  const paused = await show()
  t.match(paused, { nextChargeDate: '2027-01-08T09:00:00.000Z', billingCycleEnd: '2027-01-08T09:00:00.000Z' }, 'not 9 January: the day the member would have got free')
  if (before.nextGrantDate !== null) {
    t.equal(Date.parse(paused.nextGrantDate) - Date.parse(before.nextGrantDate), 14 * 86_400_000, 'the next grant moved 14 days too')
  }
  t.match((await run('2027-01-08T09:00:00.000Z')).job.counts, { renewed: 1 })
  t.match(await show(), { nextChargeDate: '2027-02-08T09:00:00.000Z' }, 'later periods follow from the moved charge')
})

t.test('an early resume gives back the unused days; a pending pause called off gives back all', async (t) => {
  const { ctx, member, call, url, show } = await setup(t, { ...monthlyPlan, pausePolicy: { ...policy, pausesPerYear: 3, pauseFee: 0 } })
  ctx.clock.set('2026-02-10T12:00:00.000Z')
  const pause = (await call('POST', `${url}/pauses`, member, { pauseDurationWeeks: 3 })).json()
  t.equal(pause.pauseFeePaid, null, 'no fee on this plan')
  ctx.clock.set('2026-02-20T12:00:00.000Z')
  const ended = await call('POST', `${url}/pauses/${pause.id}/end`, member)
  t.equal(ended.statusCode, 200)
  t.match(ended.json(), { status: 'COMPLETED', pauseEndDate: '2026-02-20T12:00:00.000Z' })
  t.match(await show(), { extendedStatus: 'ACTIVE', nextChargeDate: '2026-03-10T09:00:00.000Z' }, 'ten days used, eleven given back')
  t.equal((await call('POST', `${url}/pauses/${pause.id}/end`, member)).statusCode, 409, 'already over')

  const pending = (await call('POST', `${url}/pauses`, member, { pauseDurationWeeks: 2, pauseStartDate: '2026-03-01T00:00:00.000Z' })).json()
  t.equal(pending.status, 'PENDING')
  t.match(await show(), { extendedStatus: 'PENDING_PAUSE', nextChargeDate: '2026-03-24T09:00:00.000Z' })
  const off = (await call('POST', `${url}/pauses/${pending.id}/end`, member)).json()
  t.equal(off.status, 'COMPLETED')
  t.match(await show(), { extendedStatus: 'ACTIVE', nextChargeDate: '2026-03-10T09:00:00.000Z', activePause: null })
})

t.test('refusals name the rule, and change nothing', async (t) => {
  const { ctx, admin, member, call, url, show, card, run } = await setup(t)
  ctx.clock.set('2026-02-10T12:00:00.000Z')
  const before = await show()
  const cases: Array<[Record<string, unknown>, number, RegExp]> = [
    [{ pauseDurationWeeks: 5 }, 400, /allows pauses of 1 to 4 weeks/],
    [{ pauseDurationWeeks: 2, pauseStartDate: '2026-02-01T00:00:00.000Z' }, 400, /cannot start in the past/],
    [{ pauseDurationWeeks: 2, pauseStartDate: '2026-03-15T00:00:00.000Z' }, 400, /must start by the next charge/],
    [{ pauseDurationWeeks: 0 }, 400, /body\.pauseDurationWeeks must be >= 1/],
    [{ pauseDurationWeeks: 1, pauseStartDate: '2026-06-30T23:59:60Z' }, 400, /^pauseStartDate is not a representable instant/]
  ]
  for (const [body, status, message] of cases) {
    const res = await call('POST', `${url}/pauses`, member, body)
    t.equal(res.statusCode, status, JSON.stringify(body))
    t.match(errorOf(res).message, message)
  }
  await card('9995')
  const refused = await call('POST', `${url}/pauses`, member, { pauseDurationWeeks: 2 })
  t.equal(refused.statusCode, 402)
  t.match(errorOf(refused).message, /the pause fee could not be charged: Your card has insufficient funds/)
  t.same(await show(), before, 'no pause, the dates as they were')
  t.same((await call('GET', `${url}/pauses`, member)).json().items, [])
  const order = await ctx.app.db.selectFrom('orders').selectAll().where('kind', '=', 'PAUSE_FEE').executeTakeFirstOrThrow()
  t.match(order, { status: 'FAILED', failure_code: 'insufficient_funds' }, 'the attempt is an order')
  await card('4242')
  t.equal((await call('POST', `${url}/pauses`, member, { pauseDurationWeeks: 1 })).statusCode, 201)
  t.match(errorOf(await call('POST', `${url}/pauses`, member, { pauseDurationWeeks: 1 })), { statusCode: 409, message: /already has a pause/ })
  ctx.clock.set('2026-02-12T12:00:00.000Z')
  const first = (await call('GET', `${url}/pauses`, member)).json().items[0]
  await call('POST', `${url}/pauses/${first.id}/end`, member)
  t.match(errorOf(await call('POST', `${url}/pauses`, member, { pauseDurationWeeks: 1 })), { statusCode: 409, message: /allows 1 pause\(s\) in any 12 months/ })

  await card('9995')
  await run((await show()).nextChargeDate) // the renewal fails: GRACE
  t.match(errorOf(await call('POST', `${url}/pauses`, member, { pauseDurationWeeks: 1 })), { statusCode: 409, message: /in GRACE cannot be paused/ })

  const noPauses = (await call('POST', '/apis/v2/admin/memberships', admin, { ...monthlyPlan, displayName: 'No pauses', type: 'GLOBAL_MEMBER' })).json().id
  await card('4242')
  const other = (await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: noPauses } })).json()
  t.match(errorOf(await call('POST', `${SUBSCRIPTIONS}/${other.id}/pauses`, member, { pauseDurationWeeks: 1 })), { statusCode: 409, message: /no pause policy/ })
})

t.test('unused days are whole local calendar days', async (t) => {
  t.equal(unusedDays(new Date('2026-02-20T12:00:00Z'), new Date('2026-03-03T12:00:00Z'), 'Europe/Madrid'), 11)
  t.equal(unusedDays(new Date('2026-03-28T23:30:00Z'), new Date('2026-03-30T10:00:00Z'), 'Europe/Madrid'), 1, 'across the DST change, from the 29th local')
  t.equal(unusedDays(new Date('2026-03-04T00:00:00Z'), new Date('2026-03-03T12:00:00Z'), 'UTC'), 0)
})

t.test('staff list by extendedStatus: each filter finds exactly the subscriptions that show it', async (t) => {
  const { ctx, admin, member, call, url } = await setup(t, { ...monthlyPlan, pausePolicy: { ...policy, pauseFee: 0 } })
  const planId = (await call('GET', url, member)).json().membership.id
  const buyer = async () => {
    const who = await userWithToken(ctx, 'member')
    await setDefaultPaymentMethod(ctx.app.db, who.id, { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030 }, ctx.clock)
    const s = (await call('POST', SUBSCRIPTIONS, who, { mode: 'ORDER', membership: { id: planId } })).json()
    return { who, url: `${SUBSCRIPTIONS}/${s.id}` }
  }
  const [paused, pending, cancelling, ended] = [await buyer(), await buyer(), await buyer(), await buyer()]
  ctx.clock.set('2026-02-10T12:00:00.000Z')
  await call('POST', `${paused.url}/pauses`, paused.who, { pauseDurationWeeks: 2 })
  await call('POST', `${pending.url}/pauses`, pending.who, { pauseDurationWeeks: 2, pauseStartDate: '2026-02-20T00:00:00.000Z' })
  await call('POST', `${cancelling.url}/cancellation`, cancelling.who, {})
  await call('POST', `${ended.url}/cancellation`, admin, { immediate: true })
  const all = (await call('GET', `${SUBSCRIPTIONS}?ipp=100`, admin)).json().items as Array<{ id: string; extendedStatus: string }>
  t.same(new Set(all.map((s) => s.extendedStatus)), new Set(['ACTIVE', 'PAUSED', 'PENDING_PAUSE', 'PENDING_CANCEL', 'CANCELLED']))
  for (const status of ['ACTIVE', 'PAUSED', 'PENDING_PAUSE', 'PENDING_CANCEL', 'CANCELLED', 'GRACE', 'HOLD', 'VALID']) {
    const found = (await call('GET', `${SUBSCRIPTIONS}?ipp=100&extendedStatus=${status}`, admin)).json()
    t.same(
      found.items.map((s: { id: string }) => s.id).sort(),
      all.filter((s) => s.extendedStatus === status).map((s) => s.id).sort(),
      status
    )
  }
  t.equal((await call('GET', `${SUBSCRIPTIONS}?extendedStatus=GONE`, admin)).statusCode, 400)
})

t.test('a kept answer is never read past the moment its status changes by time alone', async (t) => {
  const { ctx, member, call, url, show } = await setup(t, { ...monthlyPlan, pausePolicy: { ...policy, pauseFee: 0 } })
  ctx.clock.set('2026-02-10T12:00:00.000Z')
  await call('POST', `${url}/pauses`, member, { pauseDurationWeeks: 1, pauseStartDate: '2026-02-12T00:00:00.000Z' })
  t.equal((await show()).extendedStatus, 'PENDING_PAUSE')
  t.equal((await show()).extendedStatus, 'PENDING_PAUSE', 'asked twice: the second from the read cache')
  ctx.clock.set('2026-02-12T00:00:00.000Z')
  t.match(await show(), { extendedStatus: 'PAUSED', activePause: { status: 'ACTIVE' } }, 'the pause began: no write, a new answer')
  ctx.clock.set('2026-02-19T00:00:00.000Z')
  t.match(await show(), { extendedStatus: 'ACTIVE', activePause: null }, 'and ended')
  await call('POST', `${url}/cancellation`, member, {})
  const ends = (await show()).endDate
  t.equal((await show()).extendedStatus, 'PENDING_CANCEL')
  ctx.clock.set(ends)
  t.equal((await show()).extendedStatus, 'CANCELLED', 'the cancellation took effect at the end of the cycle')
})

t.test("a pause fee whose answer was lost: the pause is held, and asking again settles the same fee once", async (t) => {
  const { provider: lossy, real, control } = lossyProvider()
  const ctx = await testApp(t, { CLUB_TIMEZONE: 'Europe/Madrid' }, undefined, { paymentProvider: lossy })
  ctx.clock.set('2026-01-31T09:00:00.000Z')
  const admin = await userWithToken(ctx, 'admin')
  const member = await userWithToken(ctx, 'member')
  const call = (method: 'GET' | 'POST', url: string, who: Who, payload?: unknown) =>
    ctx.app.inject({ method, url, headers: { authorization: who.authorization }, ...(payload !== undefined ? { payload: payload as object } : {}) })
  const planId = (await call('POST', '/apis/v2/admin/memberships', admin, { ...monthlyPlan, pausePolicy: policy })).json().id
  await setDefaultPaymentMethod(ctx.app.db, member.id, { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030 }, ctx.clock)
  control.loseNextAnswer = false
  const s = (await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: planId } })).json()
  control.loseNextAnswer = true
  const first = await call('POST', `${SUBSCRIPTIONS}/${s.id}/pauses`, member, { pauseDurationWeeks: 2 })
  t.equal(first.statusCode, 502)
  t.match(errorOf(first).message, /the pause is held, and asking for it again settles its fee/)
  const again = await call('POST', `${SUBSCRIPTIONS}/${s.id}/pauses`, member, { pauseDurationWeeks: 2 })
  t.equal(again.statusCode, 201)
  t.equal(real.list().filter((c) => c.idempotencyKey.startsWith('pause:')).length, 1, 'the fee was charged once')
  const fees = await ctx.app.db.selectFrom('orders').select(['status']).where('kind', '=', 'PAUSE_FEE').execute()
  t.same(fees, [{ status: 'PAID' }])
  t.equal((await call('GET', `${SUBSCRIPTIONS}/${s.id}/pauses`, member)).json()._total, 1, 'one pause')
})
