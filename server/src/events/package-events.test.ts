// The package events, from the flows that make them, with the GET answers as payloads.
import t from 'tap'
import { caller, issued, packageTemplate, threeReplays } from '../packages/test-fixtures.js'
import { testApp, userWithToken } from '../test-support/app.js'
import { eventReader } from './test-helpers.js'

const PACKAGES = '/apis/v2/packages'

t.test('a package issued, redeemed to the last item, a redemption cancelled, the package cancelled', async (t) => {
  const ctx = await testApp(t)
  const call = caller(ctx)
  const staff = await userWithToken(ctx, 'staff')
  const member = await userWithToken(ctx, 'member')
  const templateId = await packageTemplate(ctx, staff, threeReplays)
  const events = eventReader(ctx.app.db)
  await events.next()
  const pkg = await issued(ctx, staff, templateId, member.id)
  const issuedEvents = await events.next()
  t.same(issuedEvents.map((e) => e.type), ['package.issued'])
  t.same(issuedEvents[0]!.data, pkg, 'the package as the issue answered it')
  t.same(issuedEvents[0]!.data, (await call('GET', `${PACKAGES}/${pkg.id}`, member)).json(), 'and as GET answers it')

  const redeem = (id: string) => call('POST', '/apis/v2/users/current/redemptions', member, { type: 'REPLAY', target: { replay: { id } } })
  const first = await redeem('a')
  t.equal(first.statusCode, 201)
  const redeemed = await events.next()
  t.same(redeemed.map((e) => e.type), ['package_redemption.created'])
  t.same(redeemed[0]!.data, (await call('GET', `${PACKAGES}/${pkg.id}/redemptions/${first.json().id}`, member)).json(), 'the redemption as GET answers it')
  t.equal((await redeem('a')).statusCode, 200)
  t.same(await events.next(), [], 'a retried redemption is no new event')
  await redeem('b')
  await redeem('c')
  const last = await events.next()
  t.same(last.map((e) => e.type), ['package_redemption.created', 'package_redemption.created', 'package.exhausted'])
  t.match(last[2]!.data, { id: pkg.id, status: 'EXHAUSTED' })

  const cancelled = await call('DELETE', `${PACKAGES}/${pkg.id}/redemptions/${first.json().id}`, member)
  t.equal(cancelled.statusCode, 200, cancelled.body)
  const back = await events.next()
  t.same(back.map((e) => e.type), ['package_redemption.canceled'])
  t.same(back[0]!.data, cancelled.json())

  const canceled = await call('POST', `${PACKAGES}/${pkg.id}/cancel`, staff, {})
  t.equal(canceled.statusCode, 200, canceled.body)
  const end = await events.next()
  t.same(end.map((e) => e.type), ['package.canceled'])
  t.same(end[0]!.data, canceled.json())
})

t.test('the packages-expiry job: each package it expires is told once, as GET then answers it', async (t) => {
  const ctx = await testApp(t, { ACCESS_TOKEN_TTL_SECONDS: String(30 * 86400) })
  const staff = await userWithToken(ctx, 'staff')
  const member = await userWithToken(ctx, 'member')
  const templateId = await packageTemplate(ctx, staff, threeReplays)
  const pkg = await issued(ctx, staff, templateId, member.id, { expirationDate: '2026-03-05T10:00:00.000Z' })
  const events = eventReader(ctx.app.db)
  await events.next()
  ctx.clock.set('2026-03-06T10:00:00.000Z')
  const run = async () => {
    const outcome = await ctx.app.jobs.run('packages-expiry', { trigger: 'cli' })
    if (outcome.kind !== 'ran') throw new Error(outcome.kind)
    return outcome.run.counts
  }
  t.match(await run(), { expired: 1 })
  const expired = await events.next()
  t.same(expired.map((e) => [e.type, e.resource.id]), [['package.expired', pkg.id]])
  t.same(expired[0]!.data, (await caller(ctx)('GET', `${PACKAGES}/${pkg.id}`, member)).json())
  t.match(await run(), { expired: 0 })
  t.same(await events.next(), [], 'a second run tells nothing')
})
