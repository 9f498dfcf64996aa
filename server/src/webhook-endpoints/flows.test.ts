// What an integrator's receiver gets from the platform's own flows, each delivery checked with the
// `standardwebhooks` package: a membership bought, renewed by the CHARGE job, a renewal declined, a
// package issued and redeemed, a recording box approved, a replay READY. Each delivery is the feed's
// event: same id (webhook-id), type, time and data.
import tap from 'tap'
import { eventTypes } from '@club/contract'
import { eventReader } from '../events/test-helpers.js'
import { monthlyPlan, SUBSCRIPTIONS } from '../memberships/test-fixtures.js'
import { caller, issued, packageTemplate, threeReplays } from '../packages/test-fixtures.js'
import { testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { approve, registeredBox } from '../replay-servers/test-helpers.js'
import { DEVICE, REPLAYS, SHA, filmedVenue, storedClip } from '../replays/test-helpers.js'
import { WebhookReceiver } from '../test-support/webhook-receiver.js'
import { setDefaultPaymentMethod } from '../users/payment-methods.js'

const ALLOWED = { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' }

type Checks = Pick<typeof tap, 'teardown' | 'equal' | 'ok' | 'same'>

/** An endpoint for every event type at a receiver; `delivered()` answers the types the feed has told since last time, once each reached the receiver. */
async function receiving(t: Checks, ctx: TestApp) {
  const admin = await userWithToken(ctx, 'admin')
  const receiver = await WebhookReceiver.start(t, ctx.clock)
  const endpoint = await caller(ctx)('POST', '/apis/v2/admin/webhook-endpoints', admin, { url: receiver.url, eventTypes: [...eventTypes] })
  receiver.secret = endpoint.json().secret
  ctx.app.webhookDelivery.start()
  const events = eventReader(ctx.app.db)
  await events.next()
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
  return { admin, delivered }
}

async function setup(t: Checks) {
  const ctx = await testApp(t, { CLUB_TIMEZONE: 'Europe/Madrid', ACCESS_TOKEN_TTL_SECONDS: String(365 * 86400), ...ALLOWED })
  ctx.clock.set('2026-01-31T09:00:00.000Z')
  return { ctx, call: caller(ctx), ...(await receiving(t, ctx)) }
}

tap.test('a membership bought, renewed by the CHARGE job, then a renewal declined', async (t) => {
  const { ctx, admin, call, delivered } = await setup(t)
  const planId = (await call('POST', '/apis/v2/admin/memberships', admin, monthlyPlan)).json().id as string
  const member = await userWithToken(ctx, 'member')
  await setDefaultPaymentMethod(ctx.app.db, member.id, { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030 }, ctx.clock)
  t.equal((await call('POST', SUBSCRIPTIONS, member, { mode: 'ORDER', membership: { id: planId } })).statusCode, 201)
  t.same(await delivered(), ['user.created', 'membership_subscription.created', 'membership_subscription.confirmed', 'order.paid'], 'a member made, who bought a membership')

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
  t.same(await delivered(), ['user.created', 'user.created', 'template.created'])
  await issued(ctx, staff, templateId, member.id)
  t.same(await delivered(), ['package.issued'])
  const redeemed = await caller(ctx)('POST', '/apis/v2/users/current/redemptions', member, { type: 'REPLAY', target: { replay: { id: 'a' } } })
  t.equal(redeemed.statusCode, 201)
  t.same(await delivered(), ['package_redemption.created'])
})

tap.test('a recording box approved; a replay READY', async (t) => {
  const { ctx, venue, admin, member, call, device, bucketDir } = await filmedVenue(t, ALLOWED)
  const { delivered } = await receiving(t, ctx)
  const { id } = await registeredBox(ctx, { deviceId: 'box-2' })
  t.equal((await approve(ctx, admin, id, { areaId: venue.hall.id })).statusCode, 200)
  t.same(await delivered(), ['replay_server.registered', 'replay_server.approved'])

  const replay = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id }, seconds: 10 })).json()
  t.same(await delivered(), ['replay.requested'])
  await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'EXPORTING' })
  const ready = await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'READY', location: storedClip(bucketDir, `cam-1/${replay.id}.mp4`), durationSeconds: 10, sizeBytes: 28, sha256: SHA })
  t.equal(ready.statusCode, 200)
  t.same(await delivered(), ['replay.ready'])
})
