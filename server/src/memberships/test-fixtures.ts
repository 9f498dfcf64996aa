// A plan as the membership tests sell it: monthly, with an initiation fee, a fee and a tax; and the
// enrolment tests' starting point.
import { setDefaultPaymentMethod } from '../users/payment-methods.js'
import { testApp, userWithToken, type Teardown } from '../test-support/app.js'

export const SUBSCRIPTIONS = '/apis/v2/membership-subscriptions'
type Who = { id: string; email: string; authorization: string }
export const monthlyPlan = {
  displayName: 'Adult monthly',
  type: 'BASIC_MEMBER',
  chargeType: 'MONTHLY',
  price: 49.9,
  initiationFee: 25,
  taxes: [{ name: 'VAT', percentage: 21 }],
  fees: [{ name: 'Service', percentage: 2.5 }]
}

/** The monthly plan with a fee per added member: 49.90 a month, 10.00 per member, 2.5% fee, 21% VAT. */
export const familyPlan = { ...monthlyPlan, additionalMemberFee: 10 }

/**
 * An app on a fixed clock (31 January, Madrid) with an admin, staff and the family plan, and helpers
 * to make owners of CONFIRMED subscriptions and members to add to them; `env` adds settings.
 */
export async function enrollmentSetup(t: Teardown, env: Record<string, string> = {}) {
  const ctx = await testApp(t, { CLUB_TIMEZONE: 'Europe/Madrid', ACCESS_TOKEN_TTL_SECONDS: String(365 * 86400), ...env })
  ctx.clock.set('2026-01-31T09:00:00.000Z') // 10:00 in Madrid
  const admin = await userWithToken(ctx, 'admin')
  const staff = await userWithToken(ctx, 'staff')
  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, who: Who | { authorization: string } | undefined, payload?: unknown) =>
    ctx.app.inject({ method, url, headers: who ? { authorization: who.authorization } : {}, ...(payload !== undefined ? { payload: payload as object } : {}) })
  const plan = async (body: Record<string, unknown> = familyPlan) => {
    const res = await call('POST', '/apis/v2/admin/memberships', admin, body)
    if (res.statusCode !== 201) throw new Error(res.body)
    return res.json().id as string
  }
  const planId = await plan()
  const card = (who: { id: string }, last4 = '4242') =>
    setDefaultPaymentMethod(ctx.app.db, who.id, { brand: 'visa', last4, expMonth: 12, expYear: 2030 }, ctx.clock)
  /** A member who bought the plan: the owner of a CONFIRMED subscription. */
  const owner = async (id = planId) => {
    const who = await userWithToken(ctx, 'member')
    await card(who)
    const res = await call('POST', SUBSCRIPTIONS, who, { mode: 'ORDER', membership: { id } })
    if (res.statusCode !== 201) throw new Error(res.body)
    return { who, subscription: res.json(), url: `${SUBSCRIPTIONS}/${res.json().id}/enrollments` }
  }
  const member = (first?: string, last?: string) =>
    userWithToken(ctx, 'member').then(async (who) => {
      if (first) await ctx.app.db.updateTable('users').set({ first_name: first, last_name: last ?? null }).where('id', '=', who.id).execute()
      return who
    })
  const run = async (date: string) => {
    ctx.clock.set(date)
    const res = await call('POST', '/apis/v2/admin/membership-jobs', admin, { type: 'CHARGE', date })
    if (res.statusCode !== 201) throw new Error(res.body)
    return res.json()
  }
  const enrollmentCount = async () => (await ctx.app.db.selectFrom('membership_enrollments').select('id').execute()).length
  return { ctx, admin, staff, call, plan, planId, card, owner, member, run, enrollmentCount }
}
