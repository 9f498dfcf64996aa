// The membership events, each from the flow that makes its change, each carrying the subscription
// (or order) exactly as its GET route answers it right after.
import t from 'tap'
import { monthlyPlan, SUBSCRIPTIONS } from '../memberships/test-fixtures.js'
import { setDefaultPaymentMethod } from '../users/payment-methods.js'
import { testApp, userWithToken } from '../test-support/app.js'
import { eventReader } from './test-helpers.js'

async function setup(t: Parameters<typeof testApp>[0]) {
  const ctx = await testApp(t, { CLUB_TIMEZONE: 'Europe/Madrid', ACCESS_TOKEN_TTL_SECONDS: String(365 * 86400) })
  ctx.clock.set('2026-01-31T09:00:00.000Z')
  const admin = await userWithToken(ctx, 'admin')
  const call = (method: 'GET' | 'POST', url: string, who: { authorization: string }, payload?: unknown) =>
    ctx.app.inject({ method, url, headers: { authorization: who.authorization }, ...(payload !== undefined ? { payload: payload as object } : {}) })
  const planId = (await call('POST', '/apis/v2/admin/memberships', admin, monthlyPlan)).json().id as string
  const card = (who: { id: string }, last4: string) => setDefaultPaymentMethod(ctx.app.db, who.id, { brand: 'visa', last4, expMonth: 12, expYear: 2030 }, ctx.clock)
  const get = async (url: string) => (await call('GET', url, admin)).json()
  const run = async (date: string) => {
    ctx.clock.set(date)
    const res = await call('POST', '/apis/v2/admin/membership-jobs', admin, { type: 'CHARGE', date })
    if (res.statusCode !== 201) throw new Error(res.body)
  }
  return { ctx, admin, call, planId, card, get, run, events: eventReader(ctx.app.db) }
}

t.test('a membership bought: created, its order paid, confirmed; each payload is the GET answer', async (t) => {
  const { ctx, call, planId, card, get, events } = await setup(t)
  const member = await userWithToken(ctx, 'member')
  await card(member, '4242')
  await events.next()
  const bought = await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: planId } })
  t.equal(bought.statusCode, 201)
  const id = bought.json().id as string
  const seen = await events.next()
  t.same(seen.map((e) => e.type), ['membership_subscription.created', 'membership_subscription.confirmed', 'order.paid'])
  t.match(seen[0]!.data, { id, status: 'DRAFT' }, 'created as stored before the charge')
  const confirmed = seen[1]!
  t.equal(confirmed.resource.id, id)
  t.same(confirmed.data, await get(`${SUBSCRIPTIONS}/${id}`), 'confirmed carries the subscription as GET answers it')
  const order = seen[2]!
  t.same(order.data, await get(`/apis/v2/orders/${order.resource.id}`), 'the order as GET answers it')
  t.equal(confirmed.timestamp, ctx.clock.now().toISOString())
})

t.test('a first charge declined: charge_failed and order.failed', async (t) => {
  const { ctx, call, planId, card, events } = await setup(t)
  const member = await userWithToken(ctx, 'member')
  await card(member, '9995')
  await events.next()
  await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: planId } })
  t.same((await events.next()).map((e) => e.type), ['membership_subscription.created', 'membership_subscription.charge_failed', 'order.failed'])
})

t.test('the CHARGE job: renewed, then a declined renewal is charge_failed and condition_changed to GRACE, paid again is renewed and VALID', async (t) => {
  const { ctx, call, planId, card, get, run, events } = await setup(t)
  const member = await userWithToken(ctx, 'member')
  await card(member, '4242')
  const id = (await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: planId } })).json().id as string
  await events.next()
  await run('2026-02-28T09:00:00.000Z')
  const renewal = await events.next()
  t.same(renewal.map((e) => e.type), ['order.paid', 'membership_subscription.renewed'])
  t.same(renewal[1]!.data, await get(`${SUBSCRIPTIONS}/${id}`), 'renewed carries the GET answer after the renewal')
  t.equal(renewal[1]!.data && (renewal[1]!.data as { lastChargeDate: string }).lastChargeDate, '2026-02-28T09:00:00.000Z')
  await run('2026-02-28T09:00:00.000Z')
  t.same(await events.next(), [], 'a second run of the same day changes nothing and tells nothing')

  await card(member, '9995')
  await run('2026-03-31T08:00:00.000Z')
  const failed = await events.next()
  t.same(failed.map((e) => e.type), ['order.failed', 'membership_subscription.charge_failed', 'membership_subscription.condition_changed'])
  t.match(failed[2]!.data, { id, condition: 'GRACE' })
  t.same(failed[2]!.data, await get(`${SUBSCRIPTIONS}/${id}`))
  await card(member, '4242')
  await run('2026-04-02T08:00:00.000Z')
  const paid = await events.next()
  t.same(paid.map((e) => e.type), ['order.paid', 'membership_subscription.renewed', 'membership_subscription.condition_changed'])
  t.match(paid[2]!.data, { condition: 'VALID' })
})

t.test('a cancellation: cancellation_requested by the member (its end date in the payload), canceled when staff end one at once', async (t) => {
  const { ctx, admin, call, planId, card, events } = await setup(t)
  const member = await userWithToken(ctx, 'member')
  await card(member, '4242')
  const id = (await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: planId } })).json().id as string
  await events.next()
  const res = await call('POST', `${SUBSCRIPTIONS}/${id}/cancellation`, member, {})
  t.equal(res.statusCode, 200, res.body)
  const requested = await events.next()
  t.same(requested.map((e) => e.type), ['membership_subscription.cancellation_requested'])
  t.same(requested[0]!.data, res.json(), 'the answer the member got is the payload')
  t.match(requested[0]!.data, { endDate: '2026-02-28T09:00:00.000Z', extendedStatus: 'PENDING_CANCEL' })
  const other = await userWithToken(ctx, 'member')
  await card(other, '4242')
  const otherId = (await call('POST', SUBSCRIPTIONS, other, { mode: 'ORDER', membership: { id: planId } })).json().id as string
  await events.next()
  const ended = await call('POST', `${SUBSCRIPTIONS}/${otherId}/cancellation`, admin, { immediate: true })
  t.equal(ended.statusCode, 200, ended.body)
  const canceled = await events.next()
  t.same(canceled.map((e) => e.type), ['membership_subscription.canceled'])
  t.same(canceled[0]!.data, ended.json())
})

t.test("a cancellation at the cycle's end: canceled is told by the first CHARGE run after its end date, once; one ended at once is not told again", async (t) => {
  const { ctx, admin, call, planId, card, get, run, events } = await setup(t)
  const member = await userWithToken(ctx, 'member')
  await card(member, '4242')
  const id = (await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: planId } })).json().id as string
  const other = await userWithToken(ctx, 'member')
  await card(other, '4242')
  const otherId = (await call('POST', SUBSCRIPTIONS, other, { mode: 'ORDER', membership: { id: planId } })).json().id as string
  t.equal((await call('POST', `${SUBSCRIPTIONS}/${id}/cancellation`, member, {})).statusCode, 200)
  t.equal((await call('POST', `${SUBSCRIPTIONS}/${otherId}/cancellation`, admin, { immediate: true })).statusCode, 200)
  await events.next()
  await run('2026-02-27T09:00:00.000Z')
  t.same(await events.next(), [], 'before its end date: nothing')
  await run('2026-02-28T09:00:00.000Z')
  const told = await events.next()
  t.same(told.map((e) => [e.type, e.resource.id]), [['membership_subscription.canceled', id]], 'at its end date: canceled, and only for it')
  t.same(told[0]!.data, await get(`${SUBSCRIPTIONS}/${id}`), 'the payload is the GET answer, ended')
  t.match(told[0]!.data, { endDate: '2026-02-28T09:00:00.000Z' })
  await run('2026-02-28T09:00:00.000Z')
  await run('2026-03-31T09:00:00.000Z')
  t.same(await events.next(), [], 'later runs tell nothing again')
})

t.test('enrollments: an invitation created, accepted, the member removed; each payload the enrollment as GET answers it', async (t) => {
  const { ctx, call, card, planId } = await setup(t)
  const owner = await userWithToken(ctx, 'member')
  await card(owner, '4242')
  const id = (await call('POST', SUBSCRIPTIONS, owner, { mode: 'ORDER', membership: { id: planId } })).json().id as string
  const friend = await userWithToken(ctx, 'member')
  const events = eventReader(ctx.app.db)
  await events.next()
  const invited = await call('POST', `${SUBSCRIPTIONS}/${id}/enrollments`, owner, { user: { id: friend.id } })
  t.equal(invited.statusCode, 201, invited.body)
  const enrollmentId = invited.json().id as string
  const created = await events.next()
  t.same(created.map((e) => e.type), ['membership_enrollment.created'])
  t.same(created[0]!.data, invited.json())
  const accepted = await call('POST', `${SUBSCRIPTIONS}/${id}/enrollments/${enrollmentId}/acceptance`, friend, { accept: true })
  t.equal(accepted.statusCode, 200, accepted.body)
  const acceptance = await events.next()
  t.same(acceptance.map((e) => e.type), ['membership_enrollment.accepted'])
  t.same(acceptance[0]!.data, (await call('GET', `${SUBSCRIPTIONS}/${id}/enrollments/${enrollmentId}`, owner)).json())
  const removed = await ctx.app.inject({ method: 'DELETE', url: `${SUBSCRIPTIONS}/${id}/enrollments/${enrollmentId}`, headers: { authorization: owner.authorization } })
  t.equal(removed.statusCode, 200, removed.body)
  const removal = await events.next()
  t.same(removal.map((e) => e.type), ['membership_enrollment.removed'])
  t.same(removal[0]!.data, removed.json())
  const again = await ctx.app.inject({ method: 'DELETE', url: `${SUBSCRIPTIONS}/${id}/enrollments/${enrollmentId}`, headers: { authorization: owner.authorization } })
  t.same(again.json(), removed.json(), 'the same DELETE sent again answers it as it is')
  t.same(await events.next(), [], 'and tells nothing again')
})

t.test('a pause with a fee: paused once its fee is paid, resumed when ended early', async (t) => {
  const { ctx, call, card, get } = await setup(t)
  const admin = await userWithToken(ctx, 'admin')
  const planId = (await call('POST', '/apis/v2/admin/memberships', admin, { ...monthlyPlan, pausePolicy: { minimumWeeks: 1, maximumWeeks: 4, pausesPerYear: 1, pauseFee: 5 } })).json().id as string
  const member = await userWithToken(ctx, 'member')
  await card(member, '4242')
  const id = (await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: planId } })).json().id as string
  const events = eventReader(ctx.app.db)
  await events.next()
  ctx.clock.set('2026-02-10T12:00:00.000Z')
  const pause = await call('POST', `${SUBSCRIPTIONS}/${id}/pauses`, member, { pauseDurationWeeks: 3 })
  t.equal(pause.statusCode, 201, pause.body)
  const paused = await events.next()
  t.same(paused.map((e) => e.type), ['order.paid', 'membership_subscription.paused'])
  t.same(paused[1]!.data, await get(`${SUBSCRIPTIONS}/${id}`))
  t.match(paused[1]!.data, { extendedStatus: 'PAUSED' })
  ctx.clock.set('2026-02-17T12:00:00.000Z')
  t.equal((await call('POST', `${SUBSCRIPTIONS}/${id}/pauses/${pause.json().id}/end`, member, {})).statusCode, 200)
  const resumed = await events.next()
  t.same(resumed.map((e) => e.type), ['membership_subscription.resumed'])
  t.same(resumed[0]!.data, await get(`${SUBSCRIPTIONS}/${id}`))
})
