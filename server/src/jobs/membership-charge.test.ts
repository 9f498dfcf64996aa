// The CHARGE job through a year of renewals on an injected clock, its state machine (GRACE, HOLD,
// cancelled), and the at-most-once rule raced between the server and a CLI process.
import t from 'tap'
import { setDefaultPaymentMethod } from '../users/payment-methods.js'
import { monthlyPlan } from '../memberships/test-fixtures.js'
import { TestPaymentProvider, type ChargeInput } from '../payments/index.js'
import { lossyProvider } from '../test-support/lossy-provider.js'
import { club } from '../test-support/processes.js'
import { testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { decideRenewal } from './renewal-steps.js'

const JOBS = '/apis/v2/admin/membership-jobs'
const SUBSCRIPTIONS = '/apis/v2/membership-subscriptions'
type Who = { id: string; authorization: string }

async function setup(t: Parameters<typeof testApp>[0], plan: Record<string, unknown> = monthlyPlan, options: Parameters<typeof testApp>[3] = {}) {
  // Tokens that outlive the year the clock is moved through.
  const ctx = await testApp(t, { CLUB_TIMEZONE: 'Europe/Madrid', ACCESS_TOKEN_TTL_SECONDS: String(3 * 365 * 86400) }, undefined, options)
  ctx.clock.set('2026-01-31T09:00:00.000Z') // 10:00 in Madrid, on a 31st
  const admin = await userWithToken(ctx, 'admin')
  const call = (method: 'GET' | 'POST', url: string, who: Who, payload?: unknown) =>
    ctx.app.inject({ method, url, headers: { authorization: who.authorization }, ...(payload !== undefined ? { payload: payload as object } : {}) })
  const planId = (await call('POST', '/apis/v2/admin/memberships', admin, plan)).json().id as string
  const card = (who: { id: string }, last4: string) =>
    setDefaultPaymentMethod(ctx.app.db, who.id, { brand: 'visa', last4, expMonth: 12, expYear: 2030 }, ctx.clock)
  const buy = async (last4 = '4242') => {
    const member = await userWithToken(ctx, 'member')
    await card(member, last4)
    const res = await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: planId } })
    if (res.statusCode !== 201) throw new Error(res.body)
    return { member, subscription: res.json() }
  }
  const run = async (date?: string) => {
    if (date) ctx.clock.set(date)
    const res = await call('POST', JOBS, admin, { type: 'CHARGE', ...(date ? { date } : {}) })
    if (res.statusCode !== 201) throw new Error(res.body)
    return res.json()
  }
  const show = async (who: Who, id: string) => (await call('GET', `${SUBSCRIPTIONS}/${id}`, who)).json()
  return { ctx, admin, call, planId, card, buy, run, show, provider: ctx.app.paymentProvider as TestPaymentProvider }
}

const paidOrders = async (ctx: TestApp, subscriptionId: string) =>
  (await ctx.app.db.selectFrom('orders').select(['period_start', 'status', 'total_minor']).where('membership_subscription_id', '=', subscriptionId).orderBy('created_at').execute())

t.test('a year of monthly renewals from the 31st, each on its clamped day, each charged once', async (t) => {
  const { ctx, buy, run, show } = await setup(t)
  const { member, subscription } = await buy()
  const dates = [
    '2026-02-28T09:00:00.000Z',
    '2026-03-31T08:00:00.000Z', // 10:00 CEST
    '2026-04-30T08:00:00.000Z',
    '2026-05-31T08:00:00.000Z',
    '2026-06-30T08:00:00.000Z',
    '2026-07-31T08:00:00.000Z',
    '2026-08-31T08:00:00.000Z',
    '2026-09-30T08:00:00.000Z',
    '2026-10-31T09:00:00.000Z', // 10:00 CET again
    '2026-11-30T09:00:00.000Z',
    '2026-12-31T09:00:00.000Z',
    '2027-01-31T09:00:00.000Z'
  ]
  t.equal(subscription.nextChargeDate, dates[0])
  for (const [i, date] of dates.entries()) {
    const early = await run(new Date(Date.parse(date) - 1000).toISOString())
    t.same(early.users.items, [], `nothing due a second before ${date}`)
    const job = await run(date)
    t.match(job, { type: 'CHARGE', job: { counts: { renewed: 1 } }, users: { _total: 1, items: [{ id: subscription.id, user: { id: member.id }, amount: 61.89 }] } }, date)
    t.same((await run(date)).users.items, [], `running again for ${date} charges nothing`)
    const s = await show(member, subscription.id)
    t.match(s, { billingCycleStart: date, nextChargeDate: dates[i + 1] ?? '2027-02-28T09:00:00.000Z', condition: 'VALID', lastChargeDate: date })
  }
  const orders = await paidOrders(ctx, subscription.id)
  t.equal(orders.length, 13, 'the first charge and twelve renewals')
  t.same(orders.slice(1).map((o) => o.total_minor), Array(12).fill(6189), 'renewals carry no initiation fee: 49.90 + 1.25 fee + 10.74 VAT')
  t.ok(orders.every((o) => o.status === 'PAID'))
  t.equal(new Set(orders.map((o) => o.period_start)).size, 13, 'one per period')
})

t.test('a failed renewal: GRACE (perks kept, retried every other day), paying keeps the anniversary', async (t) => {
  const { ctx, buy, run, show, card } = await setup(t)
  const { member, subscription } = await buy()
  await card(member, '9995')
  const failed = await run('2026-02-28T09:00:00.000Z')
  t.match(failed.job.counts, { grace: 1 })
  let s = await show(member, subscription.id)
  t.match(s, { condition: 'GRACE', extendedStatus: 'GRACE', conditionUpdatedDate: '2026-02-28T09:00:00.000Z', errors: [{ code: 'insufficient_funds' }] })
  t.same((await run('2026-03-01T09:00:00.000Z')).users.items, [], 'not retried the next day')
  t.match((await run('2026-03-02T09:00:00.000Z')).job.counts, { declined: 1 }, 'retried two days on')
  await card(member, '4242')
  t.match((await run('2026-03-04T09:00:00.000Z')).job.counts, { retried_paid: 1 })
  s = await show(member, subscription.id)
  t.match(s, { condition: 'VALID', extendedStatus: 'ACTIVE', billingCycleStart: '2026-02-28T09:00:00.000Z', nextChargeDate: '2026-03-31T08:00:00.000Z', errors: null })
  const orders = await paidOrders(ctx, subscription.id)
  t.same(orders.map((o) => o.status), ['PAID', 'FAILED', 'FAILED', 'PAID'], 'every attempt is an order')
})

t.test('GRACE runs out into HOLD (retried every third day); paying in HOLD re-anchors; a HOLD that runs out cancels', async (t) => {
  const { buy, run, show, card } = await setup(t, { ...monthlyPlan, graceDays: 4, holdDays: 6 })
  const { member, subscription } = await buy()
  const other = await buy()
  await card(member, '9995')
  await card(other.member, '9995')
  await run('2026-02-28T09:00:00.000Z') // GRACE
  await run('2026-03-02T09:00:00.000Z') // retry, still in grace
  t.match((await run('2026-03-04T09:00:00.000Z')).job.counts, { hold: 2 }, 'four days of grace are over (for both)')
  t.match(await show(member, subscription.id), { condition: 'HOLD', extendedStatus: 'HOLD' })
  t.same((await run('2026-03-06T09:00:00.000Z')).users.items, [], 'HOLD retries every third day')
  await card(member, '4242')
  t.match((await run('2026-03-07T10:30:00.000Z')).job.counts, { retried_paid: 1 })
  t.match(await show(member, subscription.id), {
    condition: 'VALID',
    billingCycleStart: '2026-03-07T10:30:00.000Z',
    nextChargeDate: '2026-04-07T09:30:00.000Z',
    conditionUpdatedDate: '2026-03-07T10:30:00.000Z'
  }, 're-anchored to the payment: the 7th at 11:30 Madrid time')

  // The other member never pays: HOLD from 03-04, retried on 03-07, over on 03-10 (six days).
  t.match(await show(other.member, other.subscription.id), { condition: 'HOLD' })
  t.match((await run('2026-03-10T09:00:00.000Z')).job.counts, { hold_expired: 1 })
  t.match(await show(other.member, other.subscription.id), { extendedStatus: 'CANCELLED', condition: 'HOLD', endDate: '2026-03-10T09:00:00.000Z' }, 'cancelled when HOLD ran out')
  t.same((await run('2026-04-30T09:00:00.000Z')).users.items.map((u: { id: string }) => u.id), [subscription.id], 'and never charged again')
})

t.test('two runs at once, the server and a CLI process on one database: every subscription charged once', async (t) => {
  const { ctx, buy, run } = await setup(t)
  const bought = []
  for (let i = 0; i < 12; i++) bought.push((await buy()).subscription.id as string)
  const date = '2026-02-28T09:00:00.000Z'
  for (let round = 0; round < 3; round++) {
    const when = new Date(Date.parse(date) + round * 86_400_000 * 31).toISOString()
    const cli = club({ ...process.env, DATABASE_URL: ctx.config.DATABASE_URL }, 'memberships', 'run-job', 'CHARGE', '--date', when)
    const [server, { code, stdout: out, stderr: err }] = await Promise.all([run(when), cli])
    t.equal(code, 0, `the CLI run finished (${err.trim()})`)
    const cliRun = JSON.parse(out)
    const charged = server.users._total + cliRun.users._total
    t.ok(charged >= 12, `round ${round}: every due subscription was taken by one run or the other (${server.users._total} + ${cliRun.users._total})`)
  }
  for (const id of bought) {
    const orders = await paidOrders(ctx, id)
    const periods = orders.filter((o) => o.status === 'PAID').map((o) => o.period_start)
    t.equal(periods.length, new Set(periods).size, 'no period paid twice')
    t.equal(orders.length, 4, 'the first charge and one renewal for each of the three periods that fell due')
  }
})

t.test('the decision is pure: nothing for what is not due, not confirmed, FREE or ended', async (t) => {
  const row = {
    id: 's',
    membership_id: 'm',
    member_id: 'u',
    creator_id: 'u',
    status: 'CONFIRMED' as const,
    condition: 'VALID' as const,
    condition_updated_at: '2026-01-31T09:00:00.000Z',
    timezone: 'UTC',
    anchor_local: '2026-01-31T09:00:00.000',
    charge_type: 'MONTHLY' as const,
    currency: 'EUR',
    price_minor: 100,
    initiation_fee_minor: 0,
    additional_member_fee_minor: 0,
    duration_days: null,
    start_date: '2026-01-31T09:00:00.000Z',
    end_date: null,
    cancellation_requested_at: null,
    cycle_index: 0,
    billing_cycle_start: '2026-01-31T09:00:00.000Z',
    billing_cycle_end: '2026-02-28T09:00:00.000Z',
    last_charge_date: '2026-01-31T09:00:00.000Z',
    next_charge_date: '2026-02-28T09:00:00.000Z',
    next_retry_date: null,
    next_grant_date: null,
    last_grant_date: null,
    last_order_id: null,
    errors: null,
    created_at: '2026-01-31T09:00:00.000Z',
    updated_at: '2026-01-31T09:00:00.000Z'
  }
  const plan = { holdDays: 30 }
  const due = new Date('2026-02-28T09:00:00.000Z')
  t.same(decideRenewal(row, plan, due), { kind: 'charge', periodStart: '2026-02-28T09:00:00.000Z', periodEnd: '2026-03-31T09:00:00.000Z', retry: false })
  t.same(decideRenewal(row, plan, new Date('2026-02-28T08:59:59.999Z')), { kind: 'none' })
  t.same(decideRenewal({ ...row, status: 'CHARGE_FAILED' }, plan, due), { kind: 'none' })
  t.same(decideRenewal({ ...row, charge_type: 'FREE' }, plan, due), { kind: 'none' })
  t.same(decideRenewal({ ...row, end_date: '2026-02-01T00:00:00.000Z' }, plan, due), { kind: 'none' })
  t.same(decideRenewal({ ...row, cancellation_requested_at: '2026-02-10T00:00:00.000Z' }, plan, due), { kind: 'end', at: '2026-02-28T09:00:00.000Z', reason: 'cancelled' })
  t.same(
    decideRenewal({ ...row, condition: 'GRACE', next_retry_date: '2026-03-02T09:00:00.000Z' }, plan, new Date('2026-03-02T09:00:00.000Z')),
    { kind: 'charge', periodStart: '2026-02-28T09:00:00.000Z', periodEnd: '2026-03-31T09:00:00.000Z', retry: true }
  )
})

t.test('a HOLD retry whose answer was lost is charged again under the same key: one charge', async (t) => {
  // The provider charges, but its answer may never arrive (a timeout).
  const { provider: lossy, real, control } = lossyProvider()
  const { ctx, buy, run, show, card } = await setup(t, { ...monthlyPlan, graceDays: 2, holdDays: 30 }, { paymentProvider: lossy })
  const { member, subscription } = await buy()
  await card(member, '9995')
  await run('2026-02-28T09:00:00.000Z') // GRACE
  await run('2026-03-02T09:00:00.000Z') // HOLD
  t.match(await show(member, subscription.id), { condition: 'HOLD' })
  await card(member, '4242')
  control.loseNextAnswer = true
  t.match((await run('2026-03-05T09:00:00.000Z')).job.counts, { provider_unreachable: 1 })
  t.match((await run('2026-03-05T09:00:01.000Z')).job.counts, { claimed_elsewhere: 1 }, 'a run meanwhile sees the claim')
  t.match((await run('2026-03-06T09:00:00.000Z')).job.counts, { retried_paid: 1 }, 'the stale claim is charged again')
  const paid = real.list().filter((c) => c.status === 'succeeded' && c.idempotencyKey.includes(subscription.id) && !c.idempotencyKey.includes('2026-01-31'))
  t.equal(paid.length, 1, 'the provider charged the HOLD retry once')
  t.match(await show(member, subscription.id), { condition: 'VALID', billingCycleStart: '2026-03-06T09:00:00.000Z' })
  void ctx
})

t.test('a cancellation while a renewal is being charged is kept; the payment is flagged for review', async (t) => {
  const real = new TestPaymentProvider()
  let release: () => void = () => {}
  let charging: () => void = () => {}
  const started = new Promise<void>((resolve) => (charging = resolve))
  const slow = Object.assign(Object.create(real) as TestPaymentProvider, {
    charge: async (input: ChargeInput) => {
      if (input.idempotencyKey.includes('2026-02-28')) {
        charging()
        await new Promise<void>((resolve) => (release = resolve))
      }
      return real.charge(input)
    }
  })
  const { ctx, call, buy, show } = await setup(t, monthlyPlan, { paymentProvider: slow })
  const { member, subscription } = await buy()
  const admin = await userWithToken(ctx, 'admin')
  ctx.clock.set('2026-02-28T09:00:00.000Z')
  const job = call('POST', JOBS, admin, { type: 'CHARGE', date: '2026-02-28T09:00:00.000Z' })
  await started
  const cancel = await call('POST', `${SUBSCRIPTIONS}/${subscription.id}/cancellation`, admin, { immediate: true })
  t.equal(cancel.statusCode, 200)
  release()
  t.match((await job).json().job.counts, { paid_needs_review: 1 })
  t.match(await show(member, subscription.id), { extendedStatus: 'CANCELLED', cancellationRequestDate: '2026-02-28T09:00:00.000Z' }, 'the cancellation stands')
  const renewal = await ctx.app.db.selectFrom('orders').selectAll().where('kind', '=', 'MEMBERSHIP_RENEWAL').executeTakeFirstOrThrow()
  t.match(renewal, { status: 'PAID', failure_code: 'needs_review' })
})

t.test('a retried claim whose card changed meanwhile is a new attempt under a new key, not an outage forever', async (t) => {
  const { provider: lossy, control } = lossyProvider()
  const { buy, run, show, card } = await setup(t, monthlyPlan, { paymentProvider: lossy })
  const { member, subscription } = await buy()
  await card(member, '9995')
  control.loseNextAnswer = true
  t.match((await run('2026-02-28T09:00:00.000Z')).job.counts, { provider_unreachable: 1 })
  await card(member, '5555')
  t.match((await run('2026-02-28T10:00:00.000Z')).job.counts, { grace: 1 }, 'the old key with the new card: refused, this attempt ends')
  t.match(await show(member, subscription.id), { condition: 'GRACE', errors: [{ code: 'payment_changed' }] })
  t.match((await run('2026-03-02T10:00:00.000Z')).job.counts, { retried_paid: 1 }, 'the next attempt, under its own key, pays')
})
