// The receivers: Standard Webhooks authentication (each way a delivery can be wrong), one run per
// delivery, the optional {date} body, and a failed job answered 500 and retried.
import t from 'tap'
import { Webhook } from 'standardwebhooks'
import { testApp, userWithToken, errorOf } from '../test-support/app.js'
import { SECRET, deliver, newSecret, runsOf } from '../jobs/test-helpers.js'

const REPLAYS = '/apis/v2/webhooks/replays/cleanup'
const RECEIVERS = [
  '/apis/v2/webhooks/events/court-locking',
  '/apis/v2/webhooks/events/reminder',
  '/apis/v2/webhooks/events/summary',
  '/apis/v2/webhooks/users/cleanup',
  REPLAYS
]

t.test('a delivery signed with the secret runs its job; every wrong one is a 401', async (t) => {
  const ctx = await testApp(t, { WEBHOOK_SECRET: SECRET })
  for (const path of RECEIVERS) {
    const res = await deliver(ctx, path)
    t.equal(res.statusCode, 201, path)
    t.equal(res.body, '', `${path}: no content`)
  }
  t.equal((await runsOf(ctx, 'court-locking')).length, 1)
  t.match(await runsOf(ctx, 'replays-cleanup'), [{ trigger: 'webhook', status: 'succeeded', note: null }])

  const refused = async (label: string, delivery: Parameters<typeof deliver>[2], message: RegExp) => {
    const res = await deliver(ctx, REPLAYS, delivery)
    t.equal(res.statusCode, 401, label)
    t.match(errorOf(res).message, message, label)
    t.equal(res.headers['www-authenticate'], 'StandardWebhooks', label)
  }
  await refused('wrong secret', { secrets: [newSecret()] }, /matches none/)
  await refused('6 minutes old', { timestamp: Math.floor(ctx.clock.now().getTime() / 1000) - 360 }, /more than 5 minutes old/)
  await refused('6 minutes ahead', { timestamp: Math.floor(ctx.clock.now().getTime() / 1000) + 360 }, /ahead/)
  await refused('not a number', { headers: { 'webhook-timestamp': 'yesterday' } }, /Unix seconds/)
  await refused('no signature', { headers: { 'webhook-signature': '' } }, /needs the webhook-id/)
  await refused('no id', { headers: { 'webhook-id': '' } }, /needs the webhook-id/)
  await refused('another scheme version', { headers: { 'webhook-signature': 'v2,AAAA' } }, /matches none/)
  // The body as signed, then altered on the way.
  const signed = await deliver(ctx, REPLAYS, { body: '{"date":"2026-03-01T09:00:00Z"}', headers: {} })
  t.equal(signed.statusCode, 201)
  const tampered = await ctx.app.inject({
    method: 'POST',
    url: REPLAYS,
    headers: { ...(await signedHeaders(ctx, '{"date":"2026-03-01T09:00:00Z"}')), 'content-type': 'application/json' },
    payload: '{"date":"2026-02-01T09:00:00Z"}'
  })
  t.equal(tampered.statusCode, 401, 'altered body')
  // Within the tolerance either way is fine.
  t.equal((await deliver(ctx, REPLAYS, { timestamp: Math.floor(ctx.clock.now().getTime() / 1000) - 290 })).statusCode, 201)
  t.equal((await deliver(ctx, REPLAYS, { timestamp: Math.floor(ctx.clock.now().getTime() / 1000) + 290 })).statusCode, 201)
  t.notMatch(ctx.logs(), SECRET.slice(6), 'the secret is never logged')
})

async function signedHeaders(ctx: Awaited<ReturnType<typeof testApp>>, body: string) {
  const id = `msg_${Math.random().toString(36).slice(2)}`
  const wh = new Webhook(SECRET)
  return { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(ctx.clock.now().getTime() / 1000)), 'webhook-signature': wh.sign(id, ctx.clock.now(), body) }
}

t.test('the standardwebhooks package signs what the receivers accept', async (t) => {
  const ctx = await testApp(t, { WEBHOOK_SECRET: SECRET })
  const body = '{"date":"2026-03-01T09:00:00Z"}'
  const res = await ctx.app.inject({ method: 'POST', url: REPLAYS, headers: { ...(await signedHeaders(ctx, body)), 'content-type': 'application/json' }, payload: body })
  t.equal(res.statusCode, 201)
  t.match(await runsOf(ctx, 'replays-cleanup'), [{ date: '2026-03-01T09:00:00.000Z' }], 'run as of the body date')
})

t.test('rotated keys: several signatures, several secrets', async (t) => {
  const old = newSecret()
  const next = newSecret()
  const ctx = await testApp(t, { WEBHOOK_SECRET: `${old} ${next}` })
  t.equal((await deliver(ctx, REPLAYS, { secrets: [old] })).statusCode, 201, 'a sender still on the old key')
  t.equal((await deliver(ctx, REPLAYS, { secrets: [next] })).statusCode, 201, 'a sender on the new key')
  t.equal((await deliver(ctx, REPLAYS, { secrets: [newSecret(), next] })).statusCode, 201, 'one of several signatures matches')
  t.equal((await deliver(ctx, REPLAYS, { secrets: [newSecret(), newSecret()] })).statusCode, 401, 'none matches')
})

t.test('without WEBHOOK_SECRET the receivers answer 503 and the server warned at start', async (t) => {
  const ctx = await testApp(t)
  const res = await deliver(ctx, REPLAYS)
  t.equal(res.statusCode, 503)
  t.match(errorOf(res).message, /no WEBHOOK_SECRET/)
  t.match(ctx.logs(), /WEBHOOK_SECRET is not set/)
  t.same(await runsOf(ctx, 'replays-cleanup'), [])
})

t.test('a repeated delivery runs once; a body other than {date} is a 400', async (t) => {
  const ctx = await testApp(t, { WEBHOOK_SECRET: SECRET })
  const first = await deliver(ctx, REPLAYS, { id: 'msg_once' })
  const again = await deliver(ctx, REPLAYS, { id: 'msg_once' })
  t.equal(first.statusCode, 201)
  t.equal(again.statusCode, 201, 'the sender is told it is done')
  t.equal((await runsOf(ctx, 'replays-cleanup')).length, 1, 'and it ran once')
  t.match(await runsOf(ctx, 'replays-cleanup'), [{ delivery: 'msg_once' }])
  // The same id on another receiver is another delivery.
  t.equal((await deliver(ctx, '/apis/v2/webhooks/events/court-locking', { id: 'msg_once' })).statusCode, 201)
  t.equal((await runsOf(ctx, 'court-locking')).length, 1)

  for (const [body, message] of [
    ['{"date":"yesterday"}', /date/],
    ['{"when":"2026-01-01T00:00:00Z"}', /when/],
    ['[1]', /object/],
    ['{"date":', /not valid JSON/]
  ] as const) {
    const res = await deliver(ctx, REPLAYS, { body })
    t.equal(res.statusCode, 400, body)
    t.match(errorOf(res).message, message, body)
  }
  t.equal((await runsOf(ctx, 'replays-cleanup')).length, 1, 'refused bodies run nothing')
})

t.test('a job that fails answers 500 with its run recorded as failed; the retry runs it', async (t) => {
  // A mail relay that refuses connections: the reminder cannot be sent.
  const ctx = await testApp(t, { WEBHOOK_SECRET: SECRET, SMTP_URL: 'smtp://127.0.0.1:1' })
  ctx.clock.set('2026-03-02T00:10:00.000Z')
  const admin = await userWithToken(ctx, 'admin')
  const summary = '/apis/v2/webhooks/events/summary'
  const failed = await deliver(ctx, summary, { id: 'msg_fails' })
  t.equal(failed.statusCode, 500)
  t.match(errorOf(failed).message, /summary job failed; its run .* is recorded as failed/)
  const runs = await ctx.app.inject({ url: '/apis/v2/admin/job-runs?job=summary&status=failed', headers: { authorization: admin.authorization } })
  t.match(runs.json(), { _total: 1, items: [{ job: 'summary', trigger: 'webhook', status: 'failed', delivery: 'msg_fails', error: /not sent/ }] })
  // The scheduler retries the same delivery: it runs again (and fails again here), not "done".
  t.equal((await deliver(ctx, summary, { id: 'msg_fails' })).statusCode, 500)
  t.equal((await runsOf(ctx, 'summary')).length, 2)
  t.equal((await ctx.app.db.selectFrom('summaries').selectAll().execute()).length, 1, 'the summary itself was kept once')
})
