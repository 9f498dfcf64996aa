// Cancelling, withdrawing a cancellation, and staff corrections of a subscription, with the CHARGE
// job seeing each.
import t from 'tap'
import { setDefaultPaymentMethod } from '../users/payment-methods.js'
import { errorOf, testApp, userWithToken } from '../test-support/app.js'
import { monthlyPlan } from './test-fixtures.js'

const SUBSCRIPTIONS = '/apis/v2/membership-subscriptions'
type Who = { id: string; authorization: string }

async function setup(t: Parameters<typeof testApp>[0]) {
  const ctx = await testApp(t, { CLUB_TIMEZONE: 'Europe/Madrid', ACCESS_TOKEN_TTL_SECONDS: String(365 * 86400) })
  ctx.clock.set('2026-01-31T09:00:00.000Z')
  const admin = await userWithToken(ctx, 'admin')
  const staff = await userWithToken(ctx, 'staff')
  const member = await userWithToken(ctx, 'member')
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, who: Who | undefined, payload?: unknown) =>
    ctx.app.inject({ method, url, headers: who ? { authorization: who.authorization } : {}, ...(payload !== undefined ? { payload: payload as object } : {}) })
  const planId = (await call('POST', '/apis/v2/admin/memberships', admin, monthlyPlan)).json().id as string
  await setDefaultPaymentMethod(ctx.app.db, member.id, { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030 }, ctx.clock)
  const subscription = (await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: planId } })).json()
  const run = async (date: string) => {
    ctx.clock.set(date)
    return (await call('POST', '/apis/v2/admin/membership-jobs', admin, { type: 'CHARGE', date })).json()
  }
  return { ctx, admin, staff, member, call, subscription, run, url: `${SUBSCRIPTIONS}/${subscription.id}` }
}

t.test('a member cancels: PENDING_CANCEL until the cycle ends, no renewal, then CANCELLED', async (t) => {
  const { ctx, member, call, run, url } = await setup(t)
  ctx.clock.set('2026-02-10T12:00:00.000Z')
  const res = await call('POST', `${url}/cancellation`, member, {})
  t.equal(res.statusCode, 200)
  t.match(res.json(), { extendedStatus: 'PENDING_CANCEL', cancellationRequestDate: '2026-02-10T12:00:00.000Z', endDate: '2026-02-28T09:00:00.000Z' })
  const again = await call('POST', `${url}/cancellation`, member, {})
  t.equal(again.statusCode, 409)
  t.match(errorOf(again).message, /already requested/)
  const job = await run('2026-02-28T09:00:00.000Z')
  t.same(job.users.items, [], 'nothing charged at the end of the cycle')
  t.match((await call('GET', url, member)).json(), { extendedStatus: 'CANCELLED', status: 'CONFIRMED' })
  t.equal((await call('DELETE', `${url}/cancellation`, member)).statusCode, 409, 'too late to withdraw')
})

t.test('a pending cancellation can be withdrawn; the membership then renews as before', async (t) => {
  const { member, call, run, url } = await setup(t)
  t.equal((await call('POST', `${url}/cancellation`, member)).statusCode, 200, 'no body needed')
  const withdrawn = await call('DELETE', `${url}/cancellation`, member)
  t.equal(withdrawn.statusCode, 200)
  t.match(withdrawn.json(), { extendedStatus: 'ACTIVE', cancellationRequestDate: null, endDate: null })
  t.equal((await call('DELETE', `${url}/cancellation`, member)).statusCode, 409, 'nothing pending')
  t.match((await run('2026-02-28T09:00:00.000Z')).job.counts, { renewed: 1 })
})

t.test('staff may end a membership at once; a member may not', async (t) => {
  const { ctx, staff, member, call, url } = await setup(t)
  const mine = await call('POST', `${url}/cancellation`, member, { immediate: true })
  t.equal(mine.statusCode, 403)
  ctx.clock.set('2026-02-05T10:00:00.000Z')
  const now = await call('POST', `${url}/cancellation`, staff, { immediate: true })
  t.match(now.json(), { extendedStatus: 'CANCELLED', endDate: '2026-02-05T10:00:00.000Z' })
  t.equal((await call('POST', `${url}/cancellation`, staff, {})).statusCode, 409, 'not in force')
})

t.test('staff corrections: price from the next charge, a new charge date the renewals follow, and refusals', async (t) => {
  const { ctx, admin, staff, member, call, run, url } = await setup(t)
  t.equal((await call('PATCH', url, member, { price: 1 })).statusCode, 403, 'members do not')
  const bad: Array<[Record<string, unknown>, RegExp]> = [
    [{ nextChargeDate: '2026-01-01T00:00:00.000Z' }, /^nextChargeDate: .* is in the past/],
    [{ nextGrantDate: '2025-12-31T00:00:00.000Z' }, /^nextGrantDate: .* is in the past/],
    [{ lastChargeDate: '2027-01-01T00:00:00.000Z' }, /^lastChargeDate: .* is in the future/],
    [{ timezone: 'Europe/Atlantis' }, /^timezone: "Europe\/Atlantis" is not an IANA timezone/],
    [{ price: 9.999 }, /^price: 9\.999 has more than 2 decimal/],
    [{ status: 'CONFIRMED' }, /body\.status is not allowed/],
    [{ nextChargeDate: '2026-12-31T23:59:60Z' }, /^nextChargeDate is not a representable instant/]
  ]
  for (const [body, message] of bad) {
    const res = await call('PATCH', url, staff, body)
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.match(errorOf(res).message, message)
  }
  const patched = await call('PATCH', url, staff, { price: 39.9, nextChargeDate: '2026-03-15T09:00:00.000Z' })
  t.equal(patched.statusCode, 200)
  t.match(patched.json(), { price: 39.9, nextChargeDate: '2026-03-15T09:00:00.000Z' })
  t.same((await run('2026-02-28T09:00:00.000Z')).users.items, [], 'no longer due on the old date')
  const renewed = await run('2026-03-15T09:00:00.000Z')
  // 39.90; fee 0.9975 -> 1.00; taxable 40.90; VAT 8.589 -> 8.59; total 49.49
  t.match(renewed.users.items, [{ amount: 49.49 }], 'charged at the new price')
  t.match((await call('GET', url, member)).json(), { nextChargeDate: '2026-04-15T08:00:00.000Z', billingCycleStart: '2026-03-15T09:00:00.000Z' }, 'and a month on from the new date, 10:00 Madrid time')
  t.equal((await call('PATCH', url, staff, { price: null })).statusCode, 403, "back to the plan's higher price is a raise: admins only")
  t.match((await call('PATCH', url, admin, { price: null })).json(), { price: 49.9 }, "null: back to the plan's price")
  void ctx
})

t.test('staff may lower a price or move the charge later; raising it or bringing it earlier is for admins; each change is shown to the member', async (t) => {
  const { ctx, admin, staff, member, call, url } = await setup(t)
  ctx.clock.set('2026-02-10T12:00:00.000Z')
  const raise = await call('PATCH', url, staff, { price: 59.9 })
  t.equal(raise.statusCode, 403)
  t.match(errorOf(raise).message, /^price: only an admin may raise a subscription's price \(from 49\.9 to 59\.9\)/)
  const earlier = await call('PATCH', url, staff, { nextChargeDate: '2026-02-20T09:00:00.000Z' })
  t.equal(earlier.statusCode, 403)
  t.match(errorOf(earlier).message, /^nextChargeDate: only an admin may bring the next charge earlier \(from 2026-02-28T09:00:00\.000Z to 2026-02-20T09:00:00\.000Z\)/)
  const both = await call('PATCH', url, staff, { price: 39.9, nextChargeDate: '2026-02-20T09:00:00.000Z' })
  t.equal(both.statusCode, 403, 'a lower price does not carry an earlier charge through')
  t.match(await call('GET', url, member).then((r) => r.json()), { price: 49.9, nextChargeDate: '2026-02-28T09:00:00.000Z', messages: [] }, 'refusals change nothing and leave no history')

  const lowered = await call('PATCH', url, staff, { price: 39.9 })
  t.equal(lowered.statusCode, 200)
  t.match(lowered.json(), {
    price: 39.9,
    messages: [{ code: 'PRICE_CHANGED', message: `The price was changed from 49.90 EUR to 39.90 EUR on 2026-02-10T12:00:00.000Z by staff (user ${staff.id})` }]
  })
  ctx.clock.set('2026-02-11T12:00:00.000Z')
  t.equal((await call('PATCH', url, admin, { price: 59.9, nextChargeDate: '2026-02-20T09:00:00.000Z' })).statusCode, 200, 'an admin may')
  const seen = (await call('GET', url, member)).json()
  t.match(seen, { price: 59.9, nextChargeDate: '2026-02-20T09:00:00.000Z', summary: null })
  t.same(
    seen.messages.map((m: { code: string }) => m.code).sort(),
    ['NEXT_CHARGE_DATE_CHANGED', 'PRICE_CHANGED', 'PRICE_CHANGED'],
    'the member sees every change'
  )
  t.ok(seen.messages.some((m: { message: string }) => m.message === `The next charge date was changed from 2026-02-28T09:00:00.000Z to 2026-02-20T09:00:00.000Z on 2026-02-11T12:00:00.000Z by an admin (user ${admin.id})`))
  const rows = await ctx.app.db.selectFrom('membership_subscription_changes').selectAll().orderBy('changed_at').execute()
  t.match(rows, [{ field: 'price', from_value: '49.9', to_value: '39.9', changed_by: staff.id }, {}, {}], 'kept with who, when, from and to')
  t.equal((await call('GET', '/apis/v2/membership-subscriptions', member)).json().items[0].messages.length, 3, 'in the list too')
})

t.test('a read never answers older than the last write, whichever process made it', async (t) => {
  const { ctx, staff, member, call, url } = await setup(t)
  const { openDatabase } = await import('../db/database.js')
  t.equal((await call('GET', url, member)).json().price, 49.9, 'read once: now in the read cache')
  await call('PATCH', url, staff, { price: 45 })
  t.equal((await call('GET', url, member)).json().price, 45, 'a write here')
  const other = openDatabase(ctx.config.DATABASE_URL)
  t.teardown(() => other.destroy())
  await other.updateTable('membership_subscriptions').set({ price_minor: 4100 }).execute()
  t.equal((await call('GET', url, member)).json().price, 41, 'a write by another process (the CLI, a job)')
  ctx.clock.set('2026-02-28T09:00:01.000Z')
  await call('POST', `${url}/cancellation`, staff, { immediate: true })
  t.equal((await call('GET', url, member)).json().extendedStatus, 'CANCELLED')
})
