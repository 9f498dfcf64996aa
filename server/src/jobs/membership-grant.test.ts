// The GRANT job: monthly under a YEARLY charge, once per date however often it runs, nothing while
// paused or in HOLD, and nothing after the membership ended.
import t from 'tap'
import { setDefaultPaymentMethod } from '../users/payment-methods.js'
import { monthlyPlan } from '../memberships/test-fixtures.js'
import { testApp, userWithToken } from '../test-support/app.js'
import { nextGrantAfter } from './membership-grant.js'

const SUBSCRIPTIONS = '/apis/v2/membership-subscriptions'

/** An app on UTC at 2026-01-31 10:00, an admin, a member, and a way to call it as either. */
async function setup(t: Parameters<typeof testApp>[0]) {
  const ctx = await testApp(t, { CLUB_TIMEZONE: 'UTC', ACCESS_TOKEN_TTL_SECONDS: String(365 * 86400) })
  ctx.clock.set('2026-01-31T10:00:00.000Z')
  const admin = await userWithToken(ctx, 'admin')
  const member = await userWithToken(ctx, 'member')
  const call = (method: 'GET' | 'POST', url: string, who: { authorization: string }, payload?: unknown) =>
    ctx.app.inject({ method, url, headers: { authorization: who.authorization }, ...(payload !== undefined ? { payload: payload as object } : {}) })
  return { ctx, admin, member, call }
}

t.test('perks monthly under a yearly charge, each date once, none while paused', async (t) => {
  const { ctx, admin, member, call } = await setup(t)
  const yearly = { ...monthlyPlan, chargeType: 'YEARLY', price: 500, pausePolicy: { minimumWeeks: 1, maximumWeeks: 8, pausesPerYear: 2, pauseFee: 0 } }
  const planId = (await call('POST', '/apis/v2/admin/memberships', admin, yearly)).json().id
  await setDefaultPaymentMethod(ctx.app.db, member.id, { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030 }, ctx.clock)
  const s = (await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: planId } })).json()
  const grant = async (date: string) => {
    ctx.clock.set(date)
    return (await call('POST', '/apis/v2/admin/membership-jobs', admin, { type: 'GRANT', date })).json()
  }
  t.match(await grant('2026-01-31T10:00:00.000Z'), { type: 'GRANT', job: { counts: { granted: 1 } }, users: { _total: 1 } }, 'the first month at the start')
  t.same((await grant('2026-01-31T10:00:00.000Z')).users.items, [], 'running again grants nothing')
  t.match(await grant('2026-02-28T10:00:00.000Z'), { job: { counts: { granted: 1 } } }, 'the 28th: the month is clamped')
  // Paused for two weeks from March 10: the March 31 grant moves to April 14, and it is granted then.
  ctx.clock.set('2026-03-10T10:00:00.000Z')
  t.equal((await call('POST', `${SUBSCRIPTIONS}/${s.id}/pauses`, member, { pauseDurationWeeks: 2 })).statusCode, 201)
  t.match((await call('GET', `${SUBSCRIPTIONS}/${s.id}`, member)).json(), { nextGrantDate: '2026-04-14T10:00:00.000Z', nextChargeDate: '2027-02-14T10:00:00.000Z' })
  t.same((await grant('2026-03-31T10:00:00.000Z')).users.items, [], 'nothing on the old date')
  t.match(await grant('2026-04-14T10:00:00.000Z'), { job: { counts: { granted: 1 } } })
  // Three months unrun: each owed month granted once, in one run.
  t.match(await grant('2026-07-20T00:00:00.000Z'), { job: { counts: { granted: 3 } } })
  const grants = await ctx.app.db.selectFrom('membership_grants').select(['grant_date', 'outcome']).orderBy('grant_date').execute()
  t.same(grants.map((g) => g.grant_date), [
    '2026-01-31T10:00:00.000Z',
    '2026-02-28T10:00:00.000Z',
    '2026-04-14T10:00:00.000Z',
    '2026-05-14T10:00:00.000Z',
    '2026-06-14T10:00:00.000Z',
    '2026-07-14T10:00:00.000Z'
  ])
  t.match((await call('GET', `${SUBSCRIPTIONS}/${s.id}`, member)).json(), { lastGrantDate: '2026-07-14T10:00:00.000Z', nextGrantDate: '2026-08-14T10:00:00.000Z' })

  // A pause scheduled ahead moves the next grant past it: no grant falls inside a pause.
  ctx.clock.set('2026-08-10T10:00:00.000Z')
  t.equal((await call('POST', `${SUBSCRIPTIONS}/${s.id}/pauses`, member, { pauseDurationWeeks: 1, pauseStartDate: '2026-08-13T00:00:00.000Z' })).statusCode, 201)
  t.match((await call('GET', `${SUBSCRIPTIONS}/${s.id}`, member)).json(), { nextGrantDate: '2026-08-21T10:00:00.000Z' }, 'moved past the pause')
})

t.test('the next grant after a date follows the anchor, clamped', async (t) => {
  const anchor = { local: '2026-01-31T10:00:00.000', timezone: 'UTC' }
  t.equal(nextGrantAfter(anchor, new Date('2026-01-31T10:00:00.000Z')).toISOString(), '2026-02-28T10:00:00.000Z')
  t.equal(nextGrantAfter(anchor, new Date('2026-02-28T10:00:00.000Z')).toISOString(), '2026-03-31T10:00:00.000Z')
  t.equal(nextGrantAfter(anchor, new Date('2026-02-01T00:00:00.000Z')).toISOString(), '2026-02-28T10:00:00.000Z')
})

t.test("each grant issues the plan's perk package once, valid from the grant date", async (t) => {
  const { ctx, admin, member, call } = await setup(t)
  const eventTemplate = (await call('POST', '/apis/v2/templates', admin, { name: 'Clinic', type: 'EVENT', data: {} })).json().id
  const refused = await call('POST', '/apis/v2/admin/memberships', admin, { ...monthlyPlan, perks: { packageTemplate: { id: eventTemplate } } })
  t.equal(refused.statusCode, 400)
  t.match(refused.json().message, /is of type EVENT, not PACKAGE/)
  const perk = (await call('POST', '/apis/v2/templates', admin, { name: '2 guest passes', type: 'PACKAGE', data: { validityDays: 31, items: [{ type: 'GUEST_SIGNUP', displayName: 'Guest pass', displayNamePlural: 'Guest passes', totalItems: 2 }] } })).json().id
  const planId = (await call('POST', '/apis/v2/admin/memberships', admin, { ...monthlyPlan, perks: { packageTemplate: { id: perk } } })).json().id
  await setDefaultPaymentMethod(ctx.app.db, member.id, { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030 }, ctx.clock)
  t.equal((await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: planId } })).statusCode, 201)
  for (const date of ['2026-01-31T10:00:00.000Z', '2026-01-31T10:00:00.000Z', '2026-02-28T10:00:00.000Z']) {
    ctx.clock.set(date)
    await call('POST', '/apis/v2/admin/membership-jobs', admin, { type: 'GRANT', date })
  }
  const packages = (await call('GET', '/apis/v2/packages', member)).json()
  t.equal(packages._total, 2, 'two grant dates, two packages, however often the job ran')
  t.same(packages.items.map((p: { expirationDate: string }) => p.expirationDate).sort(), ['2026-03-03T10:00:00.000Z', '2026-03-31T10:00:00.000Z'])
  t.match(packages.items[0], { displayName: '2 guest passes', template: { id: perk }, order: null, items: { items: [{ type: 'GUEST_SIGNUP', remainingItems: 2 }] } })
})
