// The reminder job: a renewal within REMINDER_RENEWAL_DAYS, a pause ending within 3 days and a
// package expiring within REMINDER_PACKAGE_DAYS with items left, each mailed once.
import t from 'tap'
import { monthlyPlan } from '../memberships/test-fixtures.js'
import { testApp, userWithToken } from '../test-support/app.js'
import { setDefaultPaymentMethod } from '../users/payment-methods.js'
import { insertPackage } from './test-helpers.js'

t.test('each reminder once, when due', async (t) => {
  const ctx = await testApp(t, { CLUB_TIMEZONE: 'Europe/Madrid', ACCESS_TOKEN_TTL_SECONDS: String(365 * 86400) })
  ctx.clock.set('2026-01-31T10:00:00.000Z')
  const admin = await userWithToken(ctx, 'admin')
  const renewing = await userWithToken(ctx, 'member')
  const pausing = await userWithToken(ctx, 'member')
  const holder = await userWithToken(ctx, 'member')
  const call = (method: 'POST', url: string, who: { authorization: string }, payload: object) =>
    ctx.app.inject({ method, url, headers: { authorization: who.authorization }, payload })
  const plan = { ...monthlyPlan, pausePolicy: { minimumWeeks: 1, maximumWeeks: 8, pausesPerYear: 2, pauseFee: 0 } }
  const planId = (await call('POST', '/apis/v2/admin/memberships', admin, plan)).json().id
  for (const member of [renewing, pausing]) {
    await setDefaultPaymentMethod(ctx.app.db, member.id, { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030 }, ctx.clock)
    t.equal((await call('POST', '/apis/v2/membership-subscriptions', member, { mode: 'ORDER', membership: { id: planId } })).statusCode, 201)
  }
  const paused = (await ctx.app.db.selectFrom('membership_subscriptions').select('id').where('member_id', '=', pausing.id).executeTakeFirstOrThrow()).id
  ctx.clock.set('2026-02-02T10:00:00.000Z')
  t.equal((await call('POST', `/apis/v2/membership-subscriptions/${paused}/pauses`, pausing, { pauseDurationWeeks: 2 })).statusCode, 201)
  // Packages expire on Feb 28: one with items left, one used up, one expiring later.
  const expiring = await insertPackage(ctx, holder.id, { expiration: '2026-02-28T12:00:00.000Z', remaining: 3 })
  await insertPackage(ctx, holder.id, { expiration: '2026-02-28T12:00:00.000Z', remaining: 0, status: 'EXHAUSTED' })
  await insertPackage(ctx, holder.id, { expiration: '2026-03-20T12:00:00.000Z', remaining: 5 })

  const run = async (at: string) => {
    ctx.clock.set(at)
    const outcome = await ctx.app.jobs.run('reminder', { trigger: 'cli' })
    return outcome.kind === 'ran' ? outcome.run.counts : {}
  }
  const mails = () => ctx.app.db.selectFrom('mail_outbox').select(['kind', 'recipient', 'subject', 'status']).orderBy('created_at').execute()

  t.same(await run('2026-02-12T10:00:00.000Z'), { renewal: 0, pause_end: 0, package_expiry: 0 }, 'nothing due yet')
  t.same(await run('2026-02-14T10:00:00.000Z'), { renewal: 0, package_expiry: 0, pause_end: 1 }, 'the pause ends on the 16th')
  t.same(await run('2026-02-15T10:00:00.000Z'), { renewal: 0, pause_end: 0, package_expiry: 0, pause_end_already: 1 }, 'and is not announced twice')
  t.same(await run('2026-02-21T13:00:00.000Z'), { renewal: 0, pause_end: 0, package_expiry: 1 }, 'the package with items left, 7 days ahead')
  t.same(await run('2026-02-25T11:00:00.000Z'), { pause_end: 0, package_expiry: 0, renewal: 1, package_expiry_already: 1 }, 'the renewal on the 28th, 3 days ahead')
  t.same(await run('2026-02-26T11:00:00.000Z'), { renewal: 0, pause_end: 0, package_expiry: 0, renewal_already: 1, package_expiry_already: 1 })
  const sent = await mails()
  t.match(sent, [
    { kind: 'reminder-pause-end', recipient: pausing.email, subject: /resumes on Monday 16 February 2026/, status: 'sent' },
    { kind: 'reminder-package-expiry', recipient: holder.email, subject: /10-class pass expires on Saturday 28 February 2026/ },
    { kind: 'reminder-renewal', recipient: renewing.email, subject: /renews on Saturday 28 February 2026/ }
  ])
  t.equal(sent.length, 3, 'three mails in all')
  t.match(await ctx.app.db.selectFrom('reminders_sent').select(['kind', 'subject_id']).where('kind', '=', 'reminder-package-expiry').execute(), [{ subject_id: expiring.id }])
  t.match(ctx.logs(), /49\.90 EUR will be charged/, 'the renewal mail names the amount')
})
