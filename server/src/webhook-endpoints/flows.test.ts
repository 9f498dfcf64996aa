// What an integrator's receiver gets from the platform's own flows, each delivery checked with the
// `standardwebhooks` package: a membership bought, renewed by the CHARGE job, a renewal declined, a
// package issued and redeemed. Each delivery is the feed's event: same id (webhook-id), type, time
// and data.
import tap from 'tap'
import { eventTypes } from '@club/contract'
import { eventReader } from '../events/test-helpers.js'
import { monthlyPlan, SUBSCRIPTIONS } from '../memberships/test-fixtures.js'
import { caller, issued, packageTemplate, threeReplays } from '../packages/test-fixtures.js'
import { testApp, userWithToken } from '../test-support/app.js'
import { WebhookReceiver } from '../test-support/webhook-receiver.js'
import { setDefaultPaymentMethod } from '../users/payment-methods.js'

async function setup(t: Pick<typeof tap, 'teardown' | 'equal' | 'ok' | 'same'>) {
  const ctx = await testApp(t, { CLUB_TIMEZONE: 'Europe/Madrid', ACCESS_TOKEN_TTL_SECONDS: String(365 * 86400), WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' })
  ctx.clock.set('2026-01-31T09:00:00.000Z')
  const admin = await userWithToken(ctx, 'admin')
  const call = caller(ctx)
  const receiver = await WebhookReceiver.start(t, ctx.clock)
  const endpoint = await call('POST', '/apis/v2/admin/webhook-endpoints', admin, { url: receiver.url, eventTypes: [...eventTypes] })
  receiver.secret = endpoint.json().secret
  ctx.app.webhookDelivery.start()
  const events = eventReader(ctx.app.db)
  /** The feed's events since the last call, once the receiver has them all; each must match its delivery. */
  const delivered = async () => {
    const feed = await events.next()
    const received = await receiver.waitFor((r) => feed.every((e) => r.some((d) => d.id === e.id)))
    for (const event of feed) {
      const copies = received.filter((d) => d.id === event.id)
      t.equal(copies.length, 1, `${event.type} delivered once`)
      t.ok(copies[0]!.verified, `${event.type} verified by standardwebhooks`)
      t.same(JSON.parse(copies[0]!.body), { type: event.type, timestamp: event.timestamp, data: event.data }, `${event.type}: the feed's event`)
    }
    return feed.map((e) => e.type)
  }
  return { ctx, admin, call, delivered }
}

tap.test('a membership bought, renewed by the CHARGE job, then a renewal declined', async (t) => {
  const { ctx, admin, call, delivered } = await setup(t)
  const planId = (await call('POST', '/apis/v2/admin/memberships', admin, monthlyPlan)).json().id as string
  const member = await userWithToken(ctx, 'member')
  await setDefaultPaymentMethod(ctx.app.db, member.id, { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030 }, ctx.clock)
  t.equal((await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: planId } })).statusCode, 201)
  t.match(await delivered(), ['membership_subscription.created', 'membership_subscription.confirmed', 'order.paid'], 'bought')

  const charge = async (date: string) => {
    ctx.clock.set(date)
    t.equal((await call('POST', '/apis/v2/admin/membership-jobs', admin, { type: 'CHARGE', date })).statusCode, 201)
  }
  await charge('2026-02-28T09:00:00.000Z')
  t.same(await delivered(), ['order.paid', 'membership_subscription.renewed'], 'renewed by the CHARGE job')

  await setDefaultPaymentMethod(ctx.app.db, member.id, { brand: 'visa', last4: '9995', expMonth: 12, expYear: 2030 }, ctx.clock)
  await charge('2026-03-31T08:00:00.000Z')
  t.same(await delivered(), ['order.failed', 'membership_subscription.charge_failed', 'membership_subscription.condition_changed'], 'charge failed')
})

tap.test('a package issued and redeemed', async (t) => {
  const { ctx, delivered } = await setup(t)
  const staff = await userWithToken(ctx, 'staff')
  const member = await userWithToken(ctx, 'member')
  const templateId = await packageTemplate(ctx, staff, threeReplays)
  await delivered()
  await issued(ctx, staff, templateId, member.id)
  t.same(await delivered(), ['package.issued'])
  const redeemed = await caller(ctx)('POST', '/apis/v2/users/current/redemptions', member, { type: 'REPLAY', target: { replay: { id: 'a' } } })
  t.equal(redeemed.statusCode, 201)
  t.same(await delivered(), ['package_redemption.created'])
})
