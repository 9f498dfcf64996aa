import { randomUUID } from 'node:crypto'
import t from 'tap'
import { setDefaultPaymentMethod } from '../users/payment-methods.js'
import type { TestPaymentProvider } from '../payments/index.js'
import { lossyProvider } from '../test-support/lossy-provider.js'
import { errorOf, testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { monthlyPlan } from './test-fixtures.js'

const SUBSCRIPTIONS = '/apis/v2/membership-subscriptions'

const monthly = monthlyPlan

type Who = { id: string; authorization: string }

async function setup(t: Parameters<typeof testApp>[0], options: Parameters<typeof testApp>[3] = {}) {
  // 2026-01-31 in Madrid (10:00 local): the anchor on a 31st.
  const ctx = await testApp(t, { CLUB_TIMEZONE: 'Europe/Madrid', ACCESS_TOKEN_TTL_SECONDS: String(7 * 86400) }, undefined, options)
  ctx.clock.set('2026-01-31T09:00:00.000Z')
  const admin = await userWithToken(ctx, 'admin')
  const staff = await userWithToken(ctx, 'staff')
  const member = await userWithToken(ctx, 'member')
  const call = (method: 'GET' | 'POST', url: string, who: Who | undefined, payload?: unknown) =>
    ctx.app.inject({ method, url, headers: who ? { authorization: who.authorization } : {}, ...(payload !== undefined ? { payload: payload as object } : {}) })
  const plan = async (body: Record<string, unknown> = monthly) => {
    const res = await call('POST', '/apis/v2/admin/memberships', admin, body)
    if (res.statusCode !== 201) throw new Error(res.body)
    return res.json().id as string
  }
  const card = (who: Who, last4: string) => setDefaultPaymentMethod(ctx.app.db, who.id, { brand: 'visa', last4, expMonth: 12, expYear: 2030 }, ctx.clock)
  return { ctx, admin, staff, member, call, plan, card, provider: ctx.app.paymentProvider as TestPaymentProvider }
}

const tableCounts = async (ctx: TestApp) => ({
  subscriptions: (await ctx.app.db.selectFrom('membership_subscriptions').select('id').execute()).length,
  orders: (await ctx.app.db.selectFrom('orders').select('id').execute()).length
})

t.test('PREVIEW writes nothing and shows what ORDER then charges, to the cent', async (t) => {
  const { ctx, member, call, plan, card, provider } = await setup(t)
  const id = await plan()
  await card(member, '4242')
  const preview = await call('POST', SUBSCRIPTIONS, member, { mode: 'PREVIEW', membership: { id } })
  t.equal(preview.statusCode, 200)
  const p = preview.json()
  // 49.90 + 25.00 = 74.90; fee 2.5% = 1.8725 -> 1.87; taxable 76.77; VAT 21% = 16.1217 -> 16.12; total 92.89.
  t.match(p.summary, {
    total: 92.89,
    membershipPrice: 49.9,
    initiationFee: 25,
    fees: [{ name: 'Service', percentage: 2.5, amount: 1.87 }],
    taxes: [{ name: 'VAT', percentage: 21, amount: 16.12 }],
    billingCycleStart: '2026-01-31T09:00:00.000Z',
    endDate: null,
    chargeType: 'MONTHLY'
  })
  t.match(p.summary.messages, [
    { code: 'RENEWAL', message: "Renews every month on day 31 (or the month's last day), Europe/Madrid time, until cancelled" },
    { code: 'INITIATION_FEE', message: 'The first charge includes the initiation fee of 25.00 EUR' }
  ])
  t.match(p, { id: null, mode: 'PREVIEW', status: 'DRAFT', nextChargeDate: '2026-02-28T09:00:00.000Z', timezone: 'Europe/Madrid', member: { id: member.id } })
  t.same(await tableCounts(ctx), { subscriptions: 0, orders: 0 }, 'nothing stored')
  t.same(provider.list(), [], 'nothing charged')

  const order = await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })
  t.equal(order.statusCode, 201)
  const o = order.json()
  t.equal(o.summary, null, 'an ORDER answer carries no summary: the reference allows it only in PREVIEW')
  t.same({ total: o.total, price: o.price, taxes: o.taxes, fees: o.fees }, { total: p.summary.total, price: p.summary.membershipPrice, taxes: p.summary.taxes, fees: p.summary.fees }, 'the same numbers')
  t.same(provider.list().map((c) => c.amount), [9289], 'charged 92.89 once, in cents')
})

t.test('ORDER with a card that pays: CONFIRMED, its order PAID, the calendar anchored in the member\'s timezone', async (t) => {
  const { ctx, member, call, plan, card, provider } = await setup(t)
  const id = await plan()
  await card(member, '4242')
  const res = await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })
  const s = res.json()
  t.match(s, {
    status: 'CONFIRMED',
    extendedStatus: 'ACTIVE',
    condition: 'VALID',
    mode: 'ORDER',
    startDate: '2026-01-31T09:00:00.000Z',
    billingCycleStart: '2026-01-31T09:00:00.000Z',
    billingCycleEnd: '2026-02-28T09:00:00.000Z',
    nextChargeDate: '2026-02-28T09:00:00.000Z',
    nextGrantDate: '2026-01-31T09:00:00.000Z',
    lastChargeDate: '2026-01-31T09:00:00.000Z',
    endDate: null,
    cancellationRequestDate: null,
    price: 49.9,
    initiationFee: 25,
    errors: null,
    _links: { self: { href: `${SUBSCRIPTIONS}/${s.id}` } }
  })
  // The current (first) period's charge: with the initiation fee, as charged.
  t.match(s, { total: 92.89, fees: [{ amount: 1.87 }], taxes: [{ amount: 16.12 }] })
  t.match((await call('GET', `${SUBSCRIPTIONS}/${s.id}`, member)).json(), { total: 92.89 }, 'GET says the same')
  const order = (await call('GET', `/apis/v2/orders/${s.order.id}`, member)).json()
  t.match(order, {
    kind: 'MEMBERSHIP',
    status: 'PAID',
    currency: 'EUR',
    lines: [
      { kind: 'base', description: 'Adult monthly', amount: 49.9 },
      { kind: 'initiation_fee', description: 'Initiation fee', amount: 25 }
    ],
    subtotal: 74.9,
    fees: [{ name: 'Service', percentage: 2.5, amount: 1.87 }],
    taxes: [{ name: 'VAT', percentage: 21, inclusive: false, amount: 16.12 }],
    total: 92.89,
    user: { id: member.id },
    membershipSubscription: { id: s.id },
    provider: 'test',
    providerReference: provider.list()[0]!.reference,
    failure: null
  })
  t.equal(provider.list()[0]!.idempotencyKey, `membership:${s.id}:period:2026-01-31T09:00:00.000Z:attempt:1`, 'the charge carries the (subscription, period, attempt) key')
  t.same((await call('GET', `${SUBSCRIPTIONS}/${s.id}`, member)).json().status, 'CONFIRMED')
  await ctx.app.close()
})

t.test('a declined card: CHARGE_FAILED with the bank\'s reason, nothing in force, and the member may try again', async (t) => {
  const { member, call, plan, card } = await setup(t)
  const id = await plan()
  await card(member, '9995')
  const res = await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })
  t.equal(res.statusCode, 201)
  const s = res.json()
  t.match(s, {
    status: 'CHARGE_FAILED',
    extendedStatus: 'CANCELLED',
    errors: [{ code: 'insufficient_funds', message: 'Your card has insufficient funds.' }],
    nextChargeDate: null,
    billingCycleEnd: null,
    nextGrantDate: null
  })
  t.match((await call('GET', `/apis/v2/orders/${s.order.id}`, member)).json(), { status: 'FAILED', failure: { code: 'insufficient_funds' } })
  await card(member, '4242')
  const again = await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })
  t.match(again.json(), { status: 'CONFIRMED' }, 'a failed one holds nothing')
})

t.test("the bank asks for authentication: the customer completes it, then confirm", async (t) => {
  const { member, staff, call, plan, card, provider } = await setup(t)
  const id = await plan()
  await card(member, '3184')
  const s = (await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })).json()
  t.match(s, {
    status: 'REQUIRES_AUTHENTICATION',
    errors: [{ code: 'requires_authentication', details: { clientSecret: /\S+/ } }],
    _links: { confirm: { href: `${SUBSCRIPTIONS}/${s.id}/confirm` } }
  })
  const stored = (await call('GET', `${SUBSCRIPTIONS}/${s.id}`, member)).json()
  t.same(stored.errors[0].details, null, 'the client secret is handed over once, not stored')

  const early = await call('POST', `${SUBSCRIPTIONS}/${s.id}/confirm`, member)
  t.match(early.json(), { status: 'REQUIRES_AUTHENTICATION' }, 'still waiting for the customer')
  t.equal((await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })).statusCode, 409, 'no second purchase meanwhile')

  await provider.completeAuthentication(provider.list()[0]!.reference)
  const confirmed = await call('POST', `${SUBSCRIPTIONS}/${s.id}/confirm`, member)
  t.equal(confirmed.statusCode, 200)
  t.match(confirmed.json(), { status: 'CONFIRMED', extendedStatus: 'ACTIVE', errors: null })
  t.notOk(confirmed.json()._links.confirm, 'nothing left to confirm')
  t.equal((await call('POST', `${SUBSCRIPTIONS}/${s.id}/confirm`, staff)).statusCode, 409)
  t.equal(provider.list().length, 1, 'one charge in all')
})

t.test('one open membership per type; FREE plans never call the provider', async (t) => {
  const { ctx, member, call, plan, card, provider } = await setup(t)
  const id = await plan()
  await card(member, '4242')
  t.equal((await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })).statusCode, 201)
  const second = await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })
  t.equal(second.statusCode, 409)
  t.match(errorOf(second).message, /already holds a BASIC_MEMBER membership/)
  t.same(await tableCounts(ctx), { subscriptions: 1, orders: 1 })

  const free = await plan({ displayName: 'Juniors', type: 'GLOBAL_MEMBER', chargeType: 'FREE' })
  const s = (await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: free } })).json()
  t.match(s, { status: 'CONFIRMED', total: 0, nextChargeDate: null, lastChargeDate: null })
  t.match((await call('GET', `/apis/v2/orders/${s.order.id}`, member)).json(), { status: 'PAID', total: 0, provider: null, providerReference: null })
  t.equal(provider.list().length, 1, 'only the paid plan was charged')
})

t.test('a NON_RECURRING plan ends after its days, counted in the timezone asked for', async (t) => {
  const { member, call, plan, card } = await setup(t)
  const id = await plan({ displayName: 'Winter pass', type: 'BASIC_MEMBER', chargeType: 'NON_RECURRING', price: 120, durationDays: 60 })
  await card(member, '4242')
  const s = (await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id }, timezone: 'America/New_York' })).json()
  // 2026-01-31 04:00 in New York; 60 days later is 2026-04-01 04:00 EDT (08:00Z), across the DST change.
  t.match(s, { status: 'CONFIRMED', extendedStatus: 'VALID', endDate: '2026-04-01T08:00:00.000Z', nextChargeDate: null, timezone: 'America/New_York' })
  t.equal(s.summary, null, 'an ORDER answer carries no summary')
})

t.test('who may buy what, for whom; and what is refused', async (t) => {
  const { ctx, admin, staff, member, call, plan, card } = await setup(t)
  const other = await userWithToken(ctx, 'member')
  const id = await plan()
  const deskOnly = await plan({ ...monthly, displayName: 'Desk only', type: 'GLOBAL_MEMBER', selfService: false })
  const archived = await plan({ ...monthly, displayName: 'Old', type: 'ANGEL_MEMBER' })
  await call('POST', `/apis/v2/admin/memberships/${archived}`, admin)
  await ctx.app.inject({ method: 'PATCH', url: `/apis/v2/admin/memberships/${archived}`, headers: { authorization: admin.authorization }, payload: { status: 'ARCHIVED' } })
  const order = (who: Who | undefined, body: Record<string, unknown>) => call('POST', SUBSCRIPTIONS, who, { mode: 'ORDER', ...body })

  t.equal((await order(undefined, { membership: { id } })).statusCode, 401)
  const noCard = await order(member, { membership: { id } })
  t.equal(noCard.statusCode, 400)
  t.match(errorOf(noCard).message, /add a payment method first/)
  await card(member, '4242')
  t.equal((await order(member, { membership: { id }, member: { id: other.id } })).statusCode, 403, 'members buy only for themselves')
  t.equal((await order(member, { membership: { id: deskOnly } })).statusCode, 403, 'a desk-only plan')
  const gone = await order(member, { membership: { id: archived } })
  t.equal(gone.statusCode, 409)
  t.match(errorOf(gone).message, /no longer on sale/)
  const unknown = await order(member, { membership: { id: randomUUID() } })
  t.equal(unknown.statusCode, 400)
  t.match(errorOf(unknown).message, /^membership\.id: no membership/)
  const zone = await order(member, { membership: { id }, timezone: 'Mars/Olympus' })
  t.equal(zone.statusCode, 400)
  t.match(errorOf(zone).message, /^timezone: "Mars\/Olympus" is not an IANA timezone/)
  t.equal((await order(member, { membership: { id }, mode: 'BUY' })).statusCode, 400)
  t.equal((await order(staff, { membership: { id }, member: { id: randomUUID() } })).statusCode, 400, 'staff name a member who exists')
  t.same(await tableCounts(ctx), { subscriptions: 0, orders: 0 }, 'no refusal wrote anything')

  await card(other, '4242')
  const sold = await order(staff, { membership: { id: deskOnly }, member: { id: other.id } })
  t.equal(sold.statusCode, 201, 'staff sell a desk-only plan to a member')
  t.match(sold.json(), { member: { id: other.id }, status: 'CONFIRMED' })
  const orderOf = (await ctx.app.db.selectFrom('orders').selectAll().executeTakeFirstOrThrow())
  t.same([orderOf.user_id, orderOf.creator_id], [other.id, staff.id], 'the member pays; staff placed it')
})

t.test('reading: owners and staff see a subscription and its orders; others are told it does not exist', async (t) => {
  const { ctx, staff, member, call, plan, card } = await setup(t)
  const other = await userWithToken(ctx, 'member')
  const id = await plan()
  await card(member, '4242')
  await card(other, '4242')
  const mine = (await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })).json()
  ctx.clock.advance(1000)
  const theirs = (await call('POST', SUBSCRIPTIONS, other, { mode: 'ORDER', membership: { id } })).json()

  t.equal((await call('GET', `${SUBSCRIPTIONS}/${theirs.id}`, member)).statusCode, 404)
  t.equal((await call('GET', `${SUBSCRIPTIONS}/${theirs.id}`, staff)).statusCode, 200)
  t.equal((await call('GET', `/apis/v2/orders/${theirs.order.id}`, member)).statusCode, 404)
  t.equal((await call('GET', `/apis/v2/orders/${theirs.order.id}`, staff)).statusCode, 200)
  t.same((await call('GET', SUBSCRIPTIONS, member)).json().items.map((s: { id: string }) => s.id), [mine.id], 'a member sees their own')
  t.same((await call('GET', SUBSCRIPTIONS, staff)).json().items.map((s: { id: string }) => s.id), [theirs.id, mine.id], 'staff see all, newest first')
  t.same((await call('GET', `${SUBSCRIPTIONS}?memberId=${member.id}`, staff)).json()._total, 1)
  t.equal((await call('GET', `${SUBSCRIPTIONS}?memberId=${other.id}`, member)).statusCode, 403)
  t.same((await call('GET', `${SUBSCRIPTIONS}?status=CHARGE_FAILED`, staff)).json()._total, 0)
  t.same((await call('GET', '/apis/v2/orders', member)).json().items.map((o: { id: string }) => o.id), [mine.order.id])
  t.equal((await call('GET', `/apis/v2/orders?userId=${other.id}`, staff)).json()._total, 1)
  t.equal((await call('GET', `/apis/v2/orders?userId=${other.id}`, member)).statusCode, 403)
  t.equal((await call('GET', '/apis/v2/orders', undefined)).statusCode, 401)
})

t.test('an unreachable provider: 502, nothing known charged, and ordering again retries the same charge', async (t) => {
  const { provider: flaky, real, control } = lossyProvider()
  control.down = true
  const { ctx, member, call, plan, card } = await setup(t, { paymentProvider: flaky })
  const id = await plan()
  await card(member, '4242')
  const first = await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })
  t.equal(first.statusCode, 502)
  t.match(errorOf(first).message, /could not be reached; nothing is known to be charged, and ordering again retries this same charge/)
  control.down = false
  const retry = await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })
  t.equal(retry.statusCode, 201)
  t.match(retry.json(), { status: 'CONFIRMED' })
  t.same(await tableCounts(ctx), { subscriptions: 1, orders: 1 }, 'the same subscription and order')
  const keys = real.list().map((c) => c.idempotencyKey)
  t.same(keys, [`membership:${retry.json().id}:period:2026-01-31T09:00:00.000Z:attempt:1`])
})

t.test('a DRAFT left unpaid is given up by the CHARGE job after 23 hours; the member may order again', async (t) => {
  const { provider: flaky, control } = lossyProvider()
  control.down = true
  const { ctx, admin, member, call, plan, card } = await setup(t, { paymentProvider: flaky })
  const id = await plan()
  await card(member, '4242')
  t.equal((await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })).statusCode, 502)
  const job = async (date: string) => (await call('POST', '/apis/v2/admin/membership-jobs', admin, { type: 'CHARGE', date })).json()
  t.notOk((await job('2026-02-01T07:59:59.000Z')).job.counts.draft_expired, 'not before 23 hours')
  t.match((await job('2026-02-01T08:00:00.000Z')).job.counts, { draft_expired: 1 })
  t.notOk((await job('2026-02-01T09:00:00.000Z')).job.counts.draft_expired, 'once')
  const [draft] = (await call('GET', SUBSCRIPTIONS, member)).json().items
  t.match(draft, { status: 'DRAFT', extendedStatus: 'CANCELLED', errors: [{ code: 'draft_expired' }], nextChargeDate: null })
  t.match((await call('GET', `/apis/v2/orders/${draft.order.id}`, member)).json(), { status: 'FAILED', failure: { code: 'draft_expired' } })
  control.down = false
  ctx.clock.set('2026-02-01T10:00:00.000Z')
  const again = await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })
  t.match(again.json(), { status: 'CONFIRMED' }, again.body)
  t.not(again.json().id, draft.id, 'a new subscription, not the given-up one')
})

t.test('an authentication never completed is given up after 23 hours; the member may buy again', async (t) => {
  const { ctx, admin, member, call, plan, card } = await setup(t)
  const id = await plan()
  await card(member, '3184')
  const s = (await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })).json()
  t.equal(s.status, 'REQUIRES_AUTHENTICATION')
  const job = await call('POST', '/apis/v2/admin/membership-jobs', admin, { type: 'CHARGE', date: '2026-02-01T08:00:00.000Z' })
  t.match(job.json().job.counts, { draft_expired: 1 })
  t.match((await call('GET', `${SUBSCRIPTIONS}/${s.id}`, member)).json(), { status: 'CHARGE_FAILED', errors: [{ code: 'authentication_expired' }] })
  t.match((await call('GET', `/apis/v2/orders/${s.order.id}`, member)).json(), { status: 'FAILED', failure: { code: 'authentication_expired' } })
  await card(member, '4242')
  ctx.clock.set('2026-02-01T09:00:00.000Z')
  t.match((await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id } })).json(), { status: 'CONFIRMED' })
})
