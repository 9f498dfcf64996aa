// Delivery of the outbox to a receiver on loopback that checks every delivery with the
// `standardwebhooks` package: the headers and body, retries with the same webhook-id, order per
// resource while a receiver is down, the secret's rotation overlap, a retry asked by an admin, the
// endpoint disabled (and the admins mailed) after 3 days of failures, and DNS answering a private
// address at delivery time. Time is the test's clock; waits are for the receiver or the worker.
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import type { EventType } from '@club/contract'
import { recordEvent } from '../events/outbox.js'
import { parseNetworks } from '../config.js'
import { issueTokenPair } from '../oauth2/tokens.js'
import { errorOf, testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { verifier, WebhookReceiver } from '../test-support/webhook-receiver.js'
import { endpointKey } from './secrets.js'
import { createWebhookEndpoint } from './service.js'
import { sendDelivery } from './sender.js'
import { DeliveryWorker, IN_FLIGHT } from './worker.js'

const PATH = '/apis/v2/admin/webhook-endpoints'
const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

async function setup(t: Parameters<typeof testApp>[0], eventTypes: EventType[] = ['package.issued', 'package.exhausted', 'replay.ready']) {
  const ctx = await testApp(t, { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' })
  const admin = await userWithToken(ctx, 'admin')
  const receiver = await WebhookReceiver.start(t, ctx.clock)
  // A fresh token for each call: the tests move the clock by days, past any token's life.
  const call = async (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) => {
    const lifetimes = { clock: ctx.clock, accessTokenTtlSeconds: ctx.config.ACCESS_TOKEN_TTL_SECONDS, refreshTokenTtlSeconds: ctx.config.REFRESH_TOKEN_TTL_SECONDS }
    const { access_token } = await issueTokenPair(ctx.app.db, { userId: admin.id, clientId: null, scope: 'api' }, lifetimes)
    return ctx.app.inject({ method, url, headers: { authorization: `Bearer ${access_token}` }, ...(payload ? { payload } : {}) })
  }
  const created = await call('POST', PATH, { url: receiver.url, eventTypes })
  if (created.statusCode !== 201) throw new Error(created.body)
  const endpoint = created.json()
  receiver.secret = endpoint.secret
  ctx.app.webhookDelivery.start()
  const deliveries = async () => (await call('GET', `${PATH}/${endpoint.id}/deliveries?ipp=100`)).json().items as any[]
  return { ctx, admin, receiver, call, endpoint, deliveries }
}

/** Commits one event, as a service does in the transaction of its change. */
function emit(ctx: TestApp, type: EventType, resourceId: string, data: object = { id: resourceId }) {
  return ctx.app.db.transaction().execute((trx) => recordEvent(trx, { type, resourceId, data }, ctx.clock.now()))
}

/** Moves the clock and lets the worker look again (as its poll would), then waits until it rests. */
async function later(ctx: TestApp, ms: number) {
  ctx.clock.advance(ms)
  ctx.app.webhookDelivery.nudge()
  await ctx.app.webhookDelivery.idle()
}

t.test('each event of a wanted type is POSTed once, verified by standardwebhooks: webhook-id is the event id, the body {type, timestamp, data}', async (t) => {
  const { ctx, receiver, deliveries } = await setup(t)
  const issued = await emit(ctx, 'package.issued', 'p1', { id: 'p1', remainingItems: 3 })
  await emit(ctx, 'user.created', 'u1')
  const ready = await emit(ctx, 'replay.ready', 'r1', { id: 'r1', status: 'READY' })
  const received = await receiver.waitFor((r) => r.length >= 2)
  await later(ctx, HOUR)
  t.same(
    received.map((d) => [d.id, d.type, d.verified, d.answered]),
    [
      [issued.id, 'package.issued', true, 204],
      [ready.id, 'replay.ready', true, 204]
    ],
    'the wanted types only, in order, each verified'
  )
  t.same(JSON.parse(received[0]!.body), { type: 'package.issued', timestamp: '2026-03-01T10:00:00.000Z', data: { id: 'p1', remainingItems: 3 } }, 'timestamp: when the change was committed')
  t.equal(received[0]!.timestamp, String(Date.parse('2026-03-01T10:00:00.000Z') / 1000), 'webhook-timestamp: Unix seconds of the attempt')
  t.match(received[0]!.signature, /^v1,[A-Za-z0-9+/]{43}=$/, 'one v1 signature')
  const list = await deliveries()
  t.same(list.map((d) => [d.event.id, d.status, d.responseStatus, d.attempts.length, d.nextAttemptDate]), [
    [ready.id, 'SUCCEEDED', 204, 1, null],
    [issued.id, 'SUCCEEDED', 204, 1, null]
  ], 'newest first, every attempt kept')
  t.type(list[0].durationMs, 'number')
})

t.test('a receiver answering 500 then 200 gets the event twice with the same webhook-id, then never again', async (t) => {
  const { ctx, receiver, deliveries } = await setup(t)
  let answers = 0
  receiver.answer = () => (++answers === 1 ? 500 : 200)
  const event = await emit(ctx, 'package.issued', 'p1')
  await receiver.waitFor((r) => r.length === 1)
  await ctx.app.webhookDelivery.idle()
  const [failed] = await deliveries()
  t.match(failed, { status: 'RETRYING', responseStatus: 500, attempts: [{ responseStatus: 500, error: null }] })
  const wait = Date.parse(failed.nextAttemptDate) - ctx.clock.now().getTime()
  t.ok(wait >= 3_750 && wait <= 6_250, `first retry after 5 s ± 25% (${wait} ms)`)
  await later(ctx, 1_000)
  t.equal(receiver.received.length, 1, 'not before it is due')
  await later(ctx, 10_000)
  await receiver.waitFor((r) => r.length === 2)
  t.same(receiver.received.map((d) => [d.id, d.answered]), [
    [event.id, 500],
    [event.id, 200]
  ])
  for (let i = 0; i < 5; i++) await later(ctx, DAY)
  t.equal(receiver.received.length, 2, 'never again')
  t.match(await deliveries(), [{ status: 'SUCCEEDED', responseStatus: 200, attempts: [{ responseStatus: 500 }, { responseStatus: 200 }] }])
})

t.test('a receiver down for a while gets everything, in order, afterwards; a resource waits behind its own failing event only', async (t) => {
  const { ctx, receiver, deliveries } = await setup(t)
  await receiver.close()
  const emitted: string[] = []
  const resourceOf = new Map<string, string>()
  for (const [type, resource] of [
    ['package.issued', 'a'],
    ['package.issued', 'b'],
    ['package.exhausted', 'a'],
    ['replay.ready', 'c'],
    ['package.exhausted', 'b'],
    ['package.issued', 'd']
  ] as const) {
    const { id } = await emit(ctx, type, resource)
    emitted.push(id)
    resourceOf.set(id, resource)
  }
  await ctx.app.webhookDelivery.idle()
  await later(ctx, 0)
  const down = await deliveries()
  const attemptsOf = (eventId: string) => down.find((d) => d.event.id === eventId).attempts.length
  t.same(emitted.map(attemptsOf), [1, 1, 0, 1, 0, 1], "a resource's later event is not tried while its earlier one fails")
  t.match(down.find((d) => d.event.id === emitted[0]).attempts[0], { responseStatus: null, error: 'ECONNREFUSED' })
  for (let i = 0; i < 6; i++) await later(ctx, 10 * MINUTE)
  t.equal(receiver.received.length, 0)
  await receiver.listen()
  await later(ctx, 12 * HOUR)
  await receiver.waitFor((r) => r.length === emitted.length)
  // The order promised is per resource: different resources' events are sent side by side.
  const perResource = (ids: string[]) => ['a', 'b', 'c', 'd'].map((resource) => ids.filter((id) => resourceOf.get(id) === resource))
  t.same(perResource(receiver.received.map((d) => d.id)), perResource(emitted), "all of them, each resource's in the order they were committed")
  t.same(new Set(receiver.received.map((d) => d.id)), new Set(emitted), 'each once')
  t.ok(receiver.received.every((d) => d.verified))
  t.same(new Set((await deliveries()).map((d) => d.status)), new Set(['SUCCEEDED']))
})

t.test('rotation: the old secret verifies during the 24 h overlap only, the new one from the rotation on', async (t) => {
  const { ctx, receiver, call, endpoint } = await setup(t)
  const old = endpoint.secret as string
  await emit(ctx, 'package.issued', 'before')
  await receiver.waitFor((r) => r.length === 1)
  const rotated = (await call('POST', `${PATH}/${endpoint.id}/secret`)).json().secret as string
  receiver.secret = rotated
  const verifies = (secret: string, i: number) => {
    const d = receiver.received[i]!
    try {
      verifier(secret, ctx.clock).verify(d.body, { 'webhook-id': d.id, 'webhook-timestamp': d.timestamp, 'webhook-signature': d.signature })
      return true
    } catch {
      return false
    }
  }
  t.same([verifies(old, 0), verifies(rotated, 0)], [true, false], 'before the rotation: the old one only')

  await later(ctx, 23 * HOUR)
  await emit(ctx, 'package.issued', 'overlap')
  await receiver.waitFor((r) => r.length === 2)
  t.equal(receiver.received[1]!.signature.split(' ').length, 2, 'two v1 signatures during the overlap')
  t.same([verifies(old, 1), verifies(rotated, 1)], [true, true], '23 h after: both')

  await later(ctx, HOUR + 1_000)
  await emit(ctx, 'package.issued', 'after')
  await receiver.waitFor((r) => r.length === 3)
  t.equal(receiver.received[2]!.signature.split(' ').length, 1)
  t.same([verifies(old, 2), verifies(rotated, 2)], [false, true], '24 h after: the new one only')
  t.ok(receiver.received.every((d) => d.verified))
})

t.test('an admin sends a delivery again: same webhook-id; not to a disabled endpoint, not another endpoint’s delivery', async (t) => {
  const { ctx, receiver, call, endpoint, deliveries } = await setup(t)
  const event = await emit(ctx, 'replay.ready', 'r1')
  await receiver.waitFor((r) => r.length === 1)
  await ctx.app.webhookDelivery.idle()
  const [delivery] = await deliveries()
  const retried = await call('POST', `${PATH}/${endpoint.id}/deliveries/${delivery.id}/retry`)
  t.equal(retried.statusCode, 202)
  t.match(retried.json(), { id: delivery.id, status: 'PENDING', nextAttemptDate: ctx.clock.now().toISOString() })
  await receiver.waitFor((r) => r.length === 2)
  t.same(receiver.received.map((d) => d.id), [event.id, event.id])

  const other = (await call('POST', PATH, { url: receiver.url, eventTypes: ['replay.ready'] })).json()
  const notIts = await call('POST', `${PATH}/${other.id}/deliveries/${delivery.id}/retry`)
  t.equal(notIts.statusCode, 404)
  t.match(errorOf(notIts).message, /has no delivery/)
  await call('PATCH', `${PATH}/${endpoint.id}`, { enabled: false })
  const disabled = await call('POST', `${PATH}/${endpoint.id}/deliveries/${delivery.id}/retry`)
  t.equal(disabled.statusCode, 409)
  t.match(errorOf(disabled).message, /is disabled/)
  await emit(ctx, 'replay.ready', 'r2')
  await later(ctx, MINUTE)
  const r2 = receiver.received.filter((d) => JSON.parse(d.body).data.id === 'r2')
  const signedBy = (secret: string) => (d: (typeof r2)[number]) => {
    try {
      verifier(secret, ctx.clock).verify(d.body, { 'webhook-id': d.id, 'webhook-timestamp': d.timestamp, 'webhook-signature': d.signature })
      return true
    } catch {
      return false
    }
  }
  t.ok(r2.length > 0 && r2.every(signedBy(other.secret)), 'the other endpoint is sent it')
  t.notOk(r2.some(signedBy(endpoint.secret)), 'the disabled endpoint is sent nothing')
})

t.test('an endpoint failing for 3 days is disabled, its admins mailed; enabling it sends what waited', async (t) => {
  const { ctx, admin, receiver, call, endpoint, deliveries } = await setup(t)
  receiver.answer = () => 503
  const first = await emit(ctx, 'package.issued', 'p1')
  await receiver.waitFor((r) => r.length === 1)
  await ctx.app.webhookDelivery.idle()
  t.match((await call('GET', `${PATH}/${endpoint.id}`)).json(), { enabled: true, failingSince: ctx.clock.now().toISOString() })
  let steps = 0
  while ((await call('GET', `${PATH}/${endpoint.id}`)).json().enabled && steps++ < 200) await later(ctx, HOUR)
  const disabled = (await call('GET', `${PATH}/${endpoint.id}`)).json()
  t.equal(disabled.enabled, false)
  t.match(disabled.disabledReason, /^every attempt failed from 2026-03-01T10:00:00.000Z/)
  t.ok(steps >= 72 && steps <= 80, `at the first failed attempt after 3 days (${steps} h; retries are at most 7.5 h apart)`)
  const attempts = receiver.received.length
  t.ok(attempts >= 10 && attempts <= 40, `retried with backoff, not every poll (${attempts} attempts in 3 days)`)
  const [gaveUp] = await deliveries()
  t.match(gaveUp, { status: 'FAILED', nextAttemptDate: null })
  const mails = await ctx.app.db.selectFrom('mail_outbox').selectAll().where('kind', '=', 'webhook-endpoint-disabled').execute()
  t.same(mails.map((m) => [m.recipient, m.status]), [[admin.email, 'sent']], 'the admin is mailed once')

  await emit(ctx, 'package.issued', 'p2')
  await later(ctx, HOUR)
  t.equal(receiver.received.length, attempts, 'nothing is sent to a disabled endpoint')
  receiver.answer = () => 200
  t.match((await call('PATCH', `${PATH}/${endpoint.id}`, { enabled: true })).json(), { enabled: true, disabledReason: null, failingSince: null })
  await receiver.waitFor((r) => r.some((d) => d.data.id === 'p2' && d.answered === 200))
  await ctx.app.webhookDelivery.idle()
  t.equal(receiver.received.filter((d) => d.id === first.id).length, attempts, 'the given-up delivery waits for an admin')

  // An admin's retry is a fresh round: its waits start again from 5 s, not from the 6 h the given-up round reached.
  receiver.answer = () => 503
  t.equal((await call('POST', `${PATH}/${endpoint.id}/deliveries/${gaveUp.id}/retry`)).statusCode, 202)
  await receiver.waitFor((r) => r.filter((d) => d.id === first.id).length === attempts + 1)
  await ctx.app.webhookDelivery.idle()
  const again = (await deliveries()).find((d) => d.id === gaveUp.id)
  t.match(again, { status: 'RETRYING', responseStatus: 503 })
  const wait = Date.parse(again.nextAttemptDate) - ctx.clock.now().getTime()
  t.ok(wait >= 3_750 && wait <= 6_250, `the retried delivery's next attempt after 5 s ± 25% (${wait} ms)`)
})

t.test('DNS answering a private address at delivery time (rebinding) gets no request; the attempt says why', async (t) => {
  const ctx = await testApp(t)
  const receiver = await WebhookReceiver.start(t, ctx.clock)
  let answer = ['93.184.215.14']
  const lookup = async (host: string) => (host === 'hooks.example.com' ? answer : [])
  const deps = { clock: ctx.clock, key: await endpointKey(ctx.app.db, ctx.config, ctx.clock), allowedNetworks: parseNetworks('X', ''), lookup }
  const endpoint = await createWebhookEndpoint(ctx.app.db, { url: `http://hooks.example.com:${receiver.port}/hooks`, eventTypes: ['replay.ready'] }, deps)
  answer = ['127.0.0.1']
  const worker = new DeliveryWorker({ db: ctx.app.db, clock: ctx.clock, config: ctx.config, log: ctx.app.log, mailer: () => { throw new Error('no mail') }, lookup })
  t.teardown(() => worker.stop())
  await emit(ctx, 'replay.ready', 'r1')
  worker.start()
  await worker.idle()
  const attempts = await ctx.app.db
    .selectFrom('endpoint_delivery_attempts')
    .innerJoin('endpoint_deliveries', 'endpoint_deliveries.id', 'endpoint_delivery_attempts.delivery_id')
    .select(['endpoint_delivery_attempts.error', 'endpoint_delivery_attempts.response_status', 'endpoint_deliveries.endpoint_id'])
    .execute()
  t.same(attempts, [{ error: '127.0.0.1 is not an address events may be sent to (WEBHOOK_ALLOWED_NETWORKS)', response_status: null, endpoint_id: endpoint.id }])
  t.equal(receiver.received.length, 0, 'no request reached the loopback receiver')
})

t.test('a redirect is a failed attempt, never followed (the URL checked is the URL called)', async (t) => {
  const { ctx, receiver, deliveries } = await setup(t)
  receiver.answer = () => 307
  await emit(ctx, 'package.issued', 'p1')
  await receiver.waitFor((r) => r.length === 1)
  await ctx.app.webhookDelivery.idle()
  t.match(await deliveries(), [{ status: 'RETRYING', responseStatus: 307 }])
  t.equal(receiver.received.length, 1, 'nothing else was called')
})

t.test('settled deliveries and their attempts are kept RETENTION_DAYS, then users-cleanup deletes them', async (t) => {
  const { ctx, receiver, deliveries } = await setup(t)
  await emit(ctx, 'package.issued', 'p1')
  await receiver.waitFor((r) => r.length === 1)
  await ctx.app.webhookDelivery.idle()
  await later(ctx, 89 * DAY)
  await ctx.app.jobs.run('users-cleanup', { trigger: 'cli' })
  t.equal((await deliveries()).length, 1, 'kept 89 days')
  await later(ctx, 2 * DAY)
  const run = await ctx.app.jobs.run('users-cleanup', { trigger: 'cli' })
  t.match(run, { kind: 'ran', run: { counts: { endpoint_deliveries_deleted: 1 } } })
  t.same(await deliveries(), [])
  t.same(await ctx.app.db.selectFrom('endpoint_delivery_attempts').selectAll().execute(), [], 'the attempts went with it')
})

t.test('a retry of a delivery whose event is past EVENT_RETENTION_DAYS is a 409 that changes nothing', async (t) => {
  const { ctx, receiver, call, endpoint, deliveries } = await setup(t)
  await emit(ctx, 'package.issued', 'p1')
  await receiver.waitFor((r) => r.length === 1)
  await ctx.app.webhookDelivery.idle()
  // The delivery is kept RETENTION_DAYS (90), its event EVENT_RETENTION_DAYS (30).
  await later(ctx, 31 * DAY)
  await ctx.app.jobs.run('users-cleanup', { trigger: 'cli' })
  const [kept] = await deliveries()
  const retried = await call('POST', `${PATH}/${endpoint.id}/deliveries/${kept.id}/retry`)
  t.equal(retried.statusCode, 409)
  t.match(errorOf(retried).message, /older than the events kept \(EVENT_RETENTION_DAYS\): it cannot be sent again/)
  await later(ctx, MINUTE)
  t.same(await deliveries(), [kept], 'the delivery as it was: no attempt, no new status')
  t.equal(receiver.received.length, 1)
})

t.test('no answer within the timeout is a failed attempt that says so', async (t) => {
  const held: ServerResponse[] = []
  const silent = createServer((_req, res) => void held.push(res))
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    silent.closeAllConnections()
    silent.close()
  })
  const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/`
  const allowed = parseNetworks('X', '127.0.0.1/32')
  const request = { url, eventId: 'evt_1', body: '{}', keys: [Buffer.alloc(32)], now: new Date() }
  const result = await sendDelivery(request, allowed, async () => [], 200)
  t.match(result, { status: null, error: 'no answer within 200 ms' })
  t.ok(result.durationMs >= 190 && result.durationMs < 5_000, `${result.durationMs} ms`)
  t.equal(held.length, 1, 'the request did arrive: only the answer was missing')
})

t.test('an endpoint moved, disabled or deleted while its lane is sending: the next attempts follow the change (only those under way go out)', async (t) => {
  const ctx = await testApp(t, { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' })
  const admin = await userWithToken(ctx, 'admin')
  const call = (method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    ctx.app.inject({ method, url, headers: { authorization: admin.authorization }, ...(payload ? { payload } : {}) })
  /** A receiver that, at its first request, has the admin change the endpoint, and answers nothing before that is done. */
  async function receiver(change: () => Promise<unknown> = async () => undefined) {
    const bodies: string[] = []
    let changed: Promise<unknown> | undefined
    const server = createServer((req, res) => {
      req.resume()
      req.on('end', async () => {
        bodies.push(req.url ?? '')
        await (changed ??= change())
        res.statusCode = 200
        res.end()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.teardown(() => {
      server.closeAllConnections()
      server.close()
    })
    return { bodies, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks` }
  }
  /** Events of 40 resources in one commit: one lane step has them all due. */
  const BURST = 40
  const burst = () =>
    ctx.app.db.transaction().execute(async (trx) => {
      for (let i = 0; i < BURST; i++) await recordEvent(trx, { type: 'package.issued', resourceId: `p${i}`, data: { id: `p${i}` } }, ctx.clock.now())
    })
  ctx.app.webhookDelivery.start()

  const moved = await receiver()
  let id = ''
  const old = await receiver(() => call('PATCH', `${PATH}/${id}`, { url: moved.url }))
  id = (await call('POST', PATH, { url: old.url, eventTypes: ['package.issued'] })).json().id
  await burst()
  await ctx.app.webhookDelivery.idle()
  t.ok(old.bodies.length <= IN_FLIGHT, `after the PATCH of its url, only the attempts under way went to the old one (${old.bodies.length})`)
  t.equal(old.bodies.length + moved.bodies.length, BURST, 'the rest went to the new url')

  const disabledAt = await receiver(() => call('PATCH', `${PATH}/${id}`, { enabled: false }))
  await call('PATCH', `${PATH}/${id}`, { url: disabledAt.url, enabled: true })
  await burst()
  await ctx.app.webhookDelivery.idle()
  t.ok(disabledAt.bodies.length <= IN_FLIGHT, `after the PATCH enabled=false, nothing more (${disabledAt.bodies.length})`)

  const deletedAt = await receiver(() => call('DELETE', `${PATH}/${id}`))
  await call('PATCH', `${PATH}/${id}`, { url: deletedAt.url, enabled: true })
  await burst()
  await ctx.app.webhookDelivery.idle()
  t.ok(deletedAt.bodies.length <= IN_FLIGHT, `after the DELETE, nothing more (${deletedAt.bodies.length})`)
})

t.test('a host whose look-up does not answer is a failed attempt within the timeout too (the lease outlasts every attempt)', async (t) => {
  const request = { url: 'http://hooks.example.com/', eventId: 'evt_1', body: '{}', keys: [Buffer.alloc(32)], now: new Date() }
  let bound: NodeJS.Timeout | undefined
  const result = await Promise.race([
    sendDelivery(request, parseNetworks('X', ''), () => new Promise<string[]>(() => undefined), 200),
    new Promise<string>((resolve) => (bound = setTimeout(() => resolve('still waiting after 3 s'), 3_000)))
  ])
  clearTimeout(bound)
  t.match(result, { status: null, error: 'host hooks.example.com did not resolve within 200 ms' })
})


t.test('a resource with 500 and more events waiting behind a failing one holds up neither the others nor the worker (no lane spinning until its retry)', async (t) => {
  const { ctx, receiver } = await setup(t)
  receiver.answer = (d) => (d.data?.id === 'a' ? 500 : 204)
  await ctx.app.db.transaction().execute(async (trx) => {
    for (let i = 0; i < 520; i++) await recordEvent(trx, { type: 'package.exhausted', resourceId: 'a', data: { id: 'a', i } }, ctx.clock.now())
    await recordEvent(trx, { type: 'package.issued', resourceId: 'b', data: { id: 'b' } }, ctx.clock.now())
  })
  // Retries are due on the test's clock, so a worker spinning on a's lane would never rest: the bounds
  // only need to outlast a loaded machine's real work.
  await receiver.waitFor((r) => r.some((d) => d.data?.id === 'b'), 30_000)
  let bound: NodeJS.Timeout | undefined
  const rested = await Promise.race([
    ctx.app.webhookDelivery.idle().then(() => 'rested'),
    new Promise<string>((resolve) => (bound = setTimeout(() => resolve('still working after 30 s'), 30_000)))
  ])
  clearTimeout(bound)
  t.equal(rested, 'rested', 'the worker rests until the failed delivery is due')
  t.same(receiver.received.map((d) => [d.data?.id, d.answered]), [['a', 500], ['b', 204]], "a's later events wait behind its first; b is not held up")
})
