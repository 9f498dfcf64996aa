import { randomUUID } from 'node:crypto'
import t from 'tap'
import { runCli } from '../cli.js'
import { createVenueItem } from '../venue/service.js'
import { errorOf, testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { monthlyPlan } from './test-fixtures.js'

const PLANS = '/apis/v2/admin/memberships'

const monthly = { ...monthlyPlan, additionalMemberFee: 10, pausePolicy: { minimumWeeks: 1, maximumWeeks: 8, pausesPerYear: 2, pauseFee: 5 } }

async function setup(t: Parameters<typeof testApp>[0]) {
  const ctx = await testApp(t)
  const admin = await userWithToken(ctx, 'admin')
  const staff = await userWithToken(ctx, 'staff')
  const member = await userWithToken(ctx, 'member')
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, who: { authorization: string } | undefined, payload?: unknown) =>
    ctx.app.inject({ method, url, headers: who ? { authorization: who.authorization } : {}, ...(payload !== undefined ? { payload: payload as object } : {}) })
  return { ctx, admin, staff, member, call }
}

/** A subscription row, as the subscriptions slice will write them: enough to make a plan "in use". */
async function subscribe(ctx: TestApp, membershipId: string, memberId: string) {
  const now = ctx.clock.now().toISOString()
  await ctx.app.db
    .insertInto('membership_subscriptions')
    .values({
      id: randomUUID(),
      membership_id: membershipId,
      member_id: memberId,
      creator_id: memberId,
      status: 'CONFIRMED',
      condition: 'VALID',
      condition_updated_at: now,
      timezone: 'Europe/Madrid',
      anchor_local: '2026-03-01T11:00:00.000',
      charge_type: 'MONTHLY',
      currency: 'EUR',
      price_minor: 4990,
      initiation_fee_minor: 0,
      additional_member_fee_minor: 0,
      duration_days: null,
      start_date: now,
      end_date: null,
      cancellation_requested_at: null,
      cycle_index: 0,
      billing_cycle_start: null,
      billing_cycle_end: null,
      last_charge_date: null,
      next_charge_date: null,
      next_grant_date: null,
      last_grant_date: null,
      last_order_id: null,
      errors: null,
      created_at: now,
      updated_at: now
    })
    .execute()
}

t.test('an admin creates a plan; amounts come back in currency units, rates as percentages', async (t) => {
  const { admin, call } = await setup(t)
  const res = await call('POST', PLANS, admin, monthly)
  t.equal(res.statusCode, 201)
  const plan = res.json()
  t.same(plan, {
    id: plan.id,
    displayName: 'Adult monthly',
    description: null,
    type: 'BASIC_MEMBER',
    chargeType: 'MONTHLY',
    currency: 'EUR',
    price: 49.9,
    initiationFee: 25,
    additionalMemberFee: 10,
    maxEnrollments: null,
    durationDays: null,
    taxes: [{ name: 'VAT', percentage: 21, inclusive: false }],
    fees: [{ name: 'Service', percentage: 2.5 }],
    area: null,
    pausePolicy: { minimumWeeks: 1, maximumWeeks: 8, pausesPerYear: 2, pauseFee: 5 },
    graceDays: 15,
    holdDays: 30,
    selfService: true,
    perks: { packageTemplate: null },
    productDiscounts: [],
    status: 'ACTIVE',
    createdDate: '2026-03-01T10:00:00.000Z',
    updatedDate: '2026-03-01T10:00:00.000Z',
    _links: { self: { href: `${PLANS}/${plan.id}` } }
  })
  t.same((await call('GET', `${PLANS}/${plan.id}`, admin)).json(), plan, 'GET answers the same')
})

t.test("a plan's product discounts: kept in basis points, replaced whole by a patch, checked", async (t) => {
  const { ctx, admin, call } = await setup(t)
  const discounts = [{ categories: ['POD_SHOP', 'APPAREL'], percentage: 12.5, description: 'Members 12.5% off' }]
  const plan = (await call('POST', PLANS, admin, { ...monthly, productDiscounts: discounts })).json()
  t.same(plan.productDiscounts, discounts)
  const stored = await ctx.app.db.selectFrom('memberships').select('product_discounts').where('id', '=', plan.id).executeTakeFirstOrThrow()
  t.same(JSON.parse(stored.product_discounts), [{ categories: ['POD_SHOP', 'APPAREL'], basisPoints: 1250, description: 'Members 12.5% off' }])
  const patched = await call('PATCH', `${PLANS}/${plan.id}`, admin, { productDiscounts: [{ categories: ['EQUIPMENT'], percentage: 5, description: '5% off' }] })
  t.same(patched.json().productDiscounts, [{ categories: ['EQUIPMENT'], percentage: 5, description: '5% off' }])
  t.same((await call('PATCH', `${PLANS}/${plan.id}`, admin, { displayName: 'Renamed' })).json().productDiscounts, patched.json().productDiscounts, 'kept when not sent')
  for (const bad of [
    { categories: ['POD_SHOP'], percentage: 10.125, description: 'x' },
    { categories: ['POD_SHOP'], percentage: 0, description: 'x' },
    { categories: [], percentage: 10, description: 'x' },
    { categories: ['pod shop'], percentage: 10, description: 'x' }
  ]) {
    const res = await call('POST', PLANS, admin, { ...monthly, productDiscounts: [bad] })
    t.equal(res.statusCode, 400, JSON.stringify(bad))
    t.match(errorOf(res).message, /productDiscounts/)
  }
})

t.test('money is kept in minor units and rates in basis points', async (t) => {
  const { ctx, admin, call } = await setup(t)
  const plan = (await call('POST', PLANS, admin, monthly)).json()
  const row = await ctx.app.db.selectFrom('memberships').selectAll().where('id', '=', plan.id).executeTakeFirstOrThrow()
  t.match(row, { price_minor: 4990, initiation_fee_minor: 2500, additional_member_fee_minor: 1000, currency: 'EUR' })
  t.same(JSON.parse(row.taxes), [{ name: 'VAT', basisPoints: 2100, inclusive: false }])
  t.same(JSON.parse(row.fees), [{ name: 'Service', basisPoints: 250 }])
  t.same(JSON.parse(row.pause_policy!), { minimumWeeks: 1, maximumWeeks: 8, pausesPerYear: 2, pauseFeeMinor: 500 })
})

t.test('a plan that cannot be sold as asked is a 400 naming what is wrong', async (t) => {
  const { ctx, admin, call } = await setup(t)
  const region = await createVenueItem(ctx.app.db, 'regions', { name: 'North' }, ctx.clock)
  const area = await createVenueItem(ctx.app.db, 'areas', { name: 'Hall', region: { id: region.id } }, ctx.clock)
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['a FREE plan with a price', { ...monthly, chargeType: 'FREE' }, /^price: a FREE plan charges nothing/],
    ['a paid plan without a price', { displayName: 'X', type: 'BASIC_MEMBER', chargeType: 'YEARLY' }, /price is required for a YEARLY plan/],
    ['NON_RECURRING without its days', { ...monthly, chargeType: 'NON_RECURRING' }, /durationDays is required/],
    ['days on a renewing plan', { ...monthly, durationDays: 30 }, /durationDays applies only to NON_RECURRING/],
    ['AREA_MEMBER without an area', { ...monthly, type: 'AREA_MEMBER' }, /area is required for an AREA_MEMBER plan/],
    ['an area on a GLOBAL plan', { ...monthly, type: 'GLOBAL_MEMBER', area: { id: area.id } }, /area applies only to AREA_MEMBER plans/],
    ['an area that does not exist', { ...monthly, type: 'AREA_MEMBER', area: { id: 'nowhere' } }, /^area\.id: no area nowhere/],
    ['a perk template that does not exist', { ...monthly, perks: { packageTemplate: { id: 'gone' } } }, /^perks\.packageTemplate\.id: no template gone/],
    ['a third decimal of euro', { ...monthly, price: 49.999 }, /^price: 49\.999 has more than 2 decimal/],
    ['a rate with three decimals', { ...monthly, taxes: [{ name: 'VAT', percentage: 21.005 }] }, /^taxes\/0\/percentage: 21\.005% has more than two decimals/],
    ['a fee over 100%', { ...monthly, fees: [{ name: 'Greedy', percentage: 101 }] }, /body\.fees\.0\.percentage must be <= 100/],
    ['a negative price', { ...monthly, price: -1 }, /body\.price must be >= 0/],
    ['pauses shorter at most than at least', { ...monthly, pausePolicy: { ...monthly.pausePolicy, minimumWeeks: 9 } }, /minimumWeeks must not be more than/],
    ['an unknown field', { ...monthly, discount: 5 }, /body\.discount is not allowed/],
    ['an unknown type', { ...monthly, type: 'PLATINUM' }, /body\.type must be one of/],
    ['a control character in the name', { ...monthly, displayName: 'Adult\u0000' }, /body\.displayName must match pattern/]
  ]
  for (const [name, body, message] of cases) {
    const res = await call('POST', PLANS, admin, body)
    t.equal(res.statusCode, 400, name)
    t.match(errorOf(res).message, message, name)
  }
  t.equal((await ctx.app.db.selectFrom('memberships').select('id').execute()).length, 0, 'nothing was written')
  const areaPlan = await call('POST', PLANS, admin, { ...monthly, type: 'AREA_MEMBER', area: { id: area.id } })
  t.equal(areaPlan.statusCode, 201)
  t.same(areaPlan.json().area, { id: area.id })
  const free = await call('POST', PLANS, admin, { displayName: 'Junior', type: 'BASIC_MEMBER', chargeType: 'FREE' })
  t.match(free.json(), { price: 0, initiationFee: 0, chargeType: 'FREE' })
  const dayPass = await call('POST', PLANS, admin, { displayName: 'Summer', type: 'BASIC_MEMBER', chargeType: 'NON_RECURRING', price: 120, durationDays: 90 })
  t.match(dayPass.json(), { durationDays: 90, price: 120 })
})

t.test('who may do what: admins write, staff read, members only see what is on sale', async (t) => {
  const { admin, staff, member, call } = await setup(t)
  const plan = (await call('POST', PLANS, admin, monthly)).json()
  const id = plan.id as string
  const routes: Array<['GET' | 'POST' | 'PATCH' | 'DELETE', string, unknown?]> = [
    ['POST', PLANS, monthly],
    ['GET', PLANS],
    ['GET', `${PLANS}/${id}`],
    ['PATCH', `${PLANS}/${id}`, { price: 1 }],
    ['DELETE', `${PLANS}/${id}`]
  ]
  for (const [method, url, body] of routes) {
    t.equal((await call(method, url, undefined, body)).statusCode, 401, `${method} ${url} anonymous`)
    t.equal((await call(method, url, member, body)).statusCode, 403, `${method} ${url} member`)
  }
  t.equal((await call('GET', PLANS, staff)).statusCode, 200, 'staff list')
  t.equal((await call('GET', `${PLANS}/${id}`, staff)).statusCode, 200, 'staff read')
  t.equal((await call('POST', PLANS, staff, monthly)).statusCode, 403, 'staff do not create')
  t.equal((await call('PATCH', `${PLANS}/${id}`, staff, { price: 1 })).statusCode, 403, 'staff do not change')
  t.equal((await call('GET', `${PLANS}/${randomUUID()}`, admin)).statusCode, 404)
  t.equal((await call('PATCH', `${PLANS}/${randomUUID()}`, admin, { price: 1 })).statusCode, 404)
  t.equal((await call('DELETE', `${PLANS}/${randomUUID()}`, admin)).statusCode, 404)
  t.equal((await call('GET', '/apis/v2/memberships', undefined)).statusCode, 401, 'the sale list needs a signed-in user')
})

t.test('lists: staff filter by status and type; members see active self-service plans, newest first', async (t) => {
  const { ctx, admin, member, call } = await setup(t)
  const a = (await call('POST', PLANS, admin, monthly)).json()
  ctx.clock.advance(1000)
  const b = (await call('POST', PLANS, admin, { ...monthly, displayName: 'Staff sells it', selfService: false })).json()
  ctx.clock.advance(1000)
  const c = (await call('POST', PLANS, admin, { ...monthly, displayName: 'Global', type: 'GLOBAL_MEMBER' })).json()
  ctx.clock.advance(1000)
  const d = (await call('POST', PLANS, admin, { ...monthly, displayName: 'Old' })).json()
  await call('PATCH', `${PLANS}/${d.id}`, admin, { status: 'ARCHIVED' })

  const all = (await call('GET', `${PLANS}?ipp=2`, admin)).json()
  t.same(all.items.map((p: { id: string }) => p.id), [d.id, c.id])
  t.same(all._pagination, { page: 1, ipp: 2, count: 2, total: 4 })
  t.equal(all._links.next.href, `${PLANS}?page=2&ipp=2`)
  const active = (await call('GET', `${PLANS}?status=ACTIVE&type=BASIC_MEMBER`, admin)).json()
  t.same(active.items.map((p: { id: string }) => p.id), [b.id, a.id])
  const onSale = (await call('GET', '/apis/v2/memberships', member)).json()
  t.same(onSale.items.map((p: { id: string }) => p.id), [c.id, a.id], 'not the staff-only plan, not the archived one')
  const basic = (await call('GET', '/apis/v2/memberships?type=GLOBAL_MEMBER', member)).json()
  t.same(basic.items.map((p: { id: string }) => p.id), [c.id])
  t.equal((await call('GET', `${PLANS}?status=GONE`, admin)).statusCode, 400)
})

t.test('changes: a patch is checked as the whole plan it makes; a plan in use keeps its kind', async (t) => {
  const { ctx, admin, member, call } = await setup(t)
  const plan = (await call('POST', PLANS, admin, monthly)).json()
  ctx.clock.advance(60_000)
  const patched = await call('PATCH', `${PLANS}/${plan.id}`, admin, { price: 54.9, taxes: [{ name: 'VAT', percentage: 10, inclusive: true }] })
  t.equal(patched.statusCode, 200)
  t.match(patched.json(), { price: 54.9, taxes: [{ name: 'VAT', percentage: 10, inclusive: true }], fees: [{ name: 'Service' }], updatedDate: '2026-03-01T10:01:00.000Z' })
  const toFree = await call('PATCH', `${PLANS}/${plan.id}`, admin, { chargeType: 'FREE' })
  t.equal(toFree.statusCode, 400, 'FREE with the price it still has')
  t.match(errorOf(toFree).message, /a FREE plan charges nothing/)
  const cleared = await call('PATCH', `${PLANS}/${plan.id}`, admin, { pausePolicy: null, description: 'No pauses' })
  t.match(cleared.json(), { pausePolicy: null, description: 'No pauses' })

  await subscribe(ctx, plan.id, member.id)
  const kind = await call('PATCH', `${PLANS}/${plan.id}`, admin, { chargeType: 'YEARLY' })
  t.equal(kind.statusCode, 409)
  t.match(errorOf(kind).message, /keeps its type and chargeType/)
  t.equal((await call('PATCH', `${PLANS}/${plan.id}`, admin, { chargeType: 'MONTHLY', price: 59 })).statusCode, 200, 'the same kind again is no change')
})

t.test('delete removes a plan no one subscribed to, and archives one in use', async (t) => {
  const { ctx, admin, member, call } = await setup(t)
  const unused = (await call('POST', PLANS, admin, monthly)).json()
  const del = await call('DELETE', `${PLANS}/${unused.id}`, admin)
  t.equal(del.statusCode, 204)
  t.equal(del.body, '')
  t.equal((await call('GET', `${PLANS}/${unused.id}`, admin)).statusCode, 404)

  const used = (await call('POST', PLANS, admin, monthly)).json()
  await subscribe(ctx, used.id, member.id)
  const archived = await call('DELETE', `${PLANS}/${used.id}`, admin)
  t.equal(archived.statusCode, 200)
  t.match(archived.json(), { id: used.id, status: 'ARCHIVED' })
  t.equal((await call('GET', `${PLANS}/${used.id}`, admin)).json().status, 'ARCHIVED', 'still there')
  t.same((await call('GET', '/apis/v2/memberships', member)).json().items, [], 'off sale')
})

t.test('club memberships create|list|show', async (t) => {
  const ctx = await testApp(t)
  const env = { DATABASE_URL: ctx.config.DATABASE_URL }
  const run = async (...argv: string[]) => {
    const out: string[] = []
    const err: string[] = []
    const code = await runCli(argv, env, (s) => out.push(s), (s) => err.push(s))
    return { code, out: out.join('\n'), err: err.join('\n') }
  }
  const created = await run('memberships', 'create', '--name', 'Adult', '--type', 'BASIC_MEMBER', '--charge-type', 'MONTHLY', '--price', '49.90', '--tax', 'VAT:21', '--fee', 'Service:2.5', '--tax', 'City:1:inclusive')
  t.equal(created.code, 0, created.err)
  const plan = JSON.parse(created.out)
  t.match(plan, { price: 49.9, taxes: [{ name: 'VAT', percentage: 21, inclusive: false }, { name: 'City', percentage: 1, inclusive: true }], fees: [{ name: 'Service', percentage: 2.5 }] })
  t.same(JSON.parse((await run('memberships', 'show', plan.id)).out), plan)
  t.equal(JSON.parse((await run('memberships', 'list', '--status', 'ACTIVE')).out)._total, 1)

  const bad = await run('memberships', 'create', '--name', 'Free', '--type', 'BASIC_MEMBER', '--charge-type', 'FREE', '--price', '3')
  t.same([bad.code, bad.err], [1, 'club memberships create: price: a FREE plan charges nothing; leave it out or 0'])
  const badType = await run('memberships', 'create', '--name', 'X', '--type', 'GOLD', '--charge-type', 'MONTHLY', '--price', '3')
  t.equal(badType.code, 1)
  t.match(badType.err, /plan\.type must be one of/)
  const badTax = await run('memberships', 'create', '--name', 'X', '--type', 'BASIC_MEMBER', '--charge-type', 'MONTHLY', '--price', '3', '--tax', 'VAT')
  t.same([badTax.code, badTax.err], [2, 'club memberships create: --tax must be NAME:PERCENT or NAME:PERCENT:inclusive'])
  t.equal((await run('memberships', 'show', 'nope')).code, 1)
  t.equal((await run('memberships', 'create', '--name', 'X')).code, 2, 'missing flags are a usage error')
})
