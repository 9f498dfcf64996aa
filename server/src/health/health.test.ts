import { createServer, type Server } from 'node:net'
import t from 'tap'
import { errorOf, testApp, userWithApiKey, userWithToken } from '../test-support/app.js'
import { poll, registeredBox } from '../replay-servers/test-helpers.js'

async function listening(t: { teardown(fn: () => unknown): void }): Promise<{ server: Server; port: number }> {
  // Accepts and ignores: the check only opens a connection and closes it.
  const server = createServer((socket) => socket.on('error', () => {}))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return { server, port: (server.address() as { port: number }).port }
}

t.test('liveness and readiness answer without a credential and say what they checked', async (t) => {
  const ctx = await testApp(t)
  const live = await ctx.app.inject({ url: '/health/live' })
  t.equal(live.statusCode, 200)
  t.same(live.json(), { status: 'ok' })
  const ready = await ctx.app.inject({ url: '/health/ready' })
  t.equal(ready.statusCode, 200)
  t.same(ready.json(), { status: 'ready', checks: { database: 'ok', migrations: 'ok', smtp: 'not configured', redis: 'not configured' } })
  t.notMatch(ctx.logs(), /health\/(live|ready)/, 'probes are not logged at info')
})

t.test('probes and scrapes are not rate limited, even with an API key', async (t) => {
  const ctx = await testApp(t, { API_KEY_RATE_LIMIT_MAX: '2' })
  const user = await userWithApiKey(ctx)
  const headers = { 'x-api-key': user.apiKey }
  for (let i = 0; i < 3; i++) {
    for (const url of ['/health/live', '/health/ready', '/metrics']) {
      const res = await ctx.app.inject({ url, headers })
      t.equal(res.statusCode, 200, `${url} #${i + 1}`)
      t.notOk(res.headers['x-ratelimit-limit'], 'not counted')
    }
  }
  t.equal((await ctx.app.inject({ url: '/apis/v2/users/current', headers })).statusCode, 200)
  t.equal((await ctx.app.inject({ url: '/apis/v2/users/current', headers })).statusCode, 200)
  t.equal((await ctx.app.inject({ url: '/apis/v2/users/current', headers })).statusCode, 429, 'the limit still holds elsewhere')
})

t.test('readiness is a 503 naming the database when it cannot answer', async (t) => {
  const ctx = await testApp(t)
  await ctx.app.db.destroy()
  const res = await ctx.app.inject({ url: '/health/ready' })
  t.equal(res.statusCode, 503)
  t.match(errorOf(res).message, /not ready: database: .+; migrations: /)
  t.equal((await ctx.app.inject({ url: '/health/live' })).statusCode, 200, 'the process still lives')
})

t.test('readiness checks the mail relay when SMTP_URL is set', async (t) => {
  const { port } = await listening(t)
  const up = await testApp(t, { SMTP_URL: `smtp://127.0.0.1:${port}` })
  const ok = await up.app.inject({ url: '/health/ready' })
  t.equal(ok.statusCode, 200)
  t.equal(ok.json().checks.smtp, 'ok')

  // A port that was just free: nothing listens there.
  const gone = await listening(t)
  await new Promise((resolve) => gone.server.close(resolve))
  const down = await testApp(t, { SMTP_URL: `smtp://user:s3cret@127.0.0.1:${gone.port}` })
  const res = await down.app.inject({ url: '/health/ready' })
  t.equal(res.statusCode, 503)
  t.match(errorOf(res).message, /smtp: ECONNREFUSED/)
  t.notMatch(res.body, /s3cret/, 'nothing secret shown')
  t.notMatch(down.logs(), /s3cret/)
})

/** Prometheus text → the value of each sample, by its name and labels as written. */
function samples(text: string): Map<string, number> {
  const map = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const at = line.lastIndexOf(' ')
    map.set(line.slice(0, at), Number(line.slice(at + 1)))
  }
  return map
}

t.test('the metrics count requests by route pattern and status, polls, caches, boxes and the process', async (t) => {
  const ctx = await testApp(t)
  const { serverId } = await registeredBox(ctx)
  const first = await poll(ctx, serverId)
  await poll(ctx, serverId, '', { 'if-none-match': first.headers.etag as string })
  const member = await userWithToken(ctx)
  for (let i = 0; i < 3; i++) await ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: member.authorization } })
  await ctx.app.inject({ url: '/apis/v2/no/such/route' })

  const res = await ctx.app.inject({ url: '/metrics' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  const m = samples(res.body)
  t.equal(m.get('http_request_duration_seconds_count{method="GET",route="/apis/v2/users/current",status_code="200"}'), 3)
  t.equal(m.get('http_request_duration_seconds_count{method="GET",route="unmatched",status_code="404"}'), 1)
  t.notOk([...m.keys()].some((k) => k.includes(serverId)), 'no raw URL (and no serverId) in a label')
  t.equal(m.get('club_replay_status_polls_total{answer="200"}'), 1)
  t.equal(m.get('club_replay_status_polls_total{answer="304"}'), 1)
  t.equal(m.get('club_replay_servers{status="PENDING",online="true"}'), 1)
  t.ok((m.get('club_db_query_duration_seconds_count{kind="read"}') ?? 0) > 0, 'database reads are timed')
  t.ok((m.get('club_db_query_duration_seconds_count{kind="write"}') ?? 0) > 0, 'and writes')
  t.ok([...m.keys()].some((k) => k.startsWith('club_read_cache_lookups_total{cache=')), 'read caches report hits and misses')
  t.ok(m.has('nodejs_eventloop_lag_seconds'), 'event-loop lag')
  t.ok(m.has('process_resident_memory_bytes') || m.has('nodejs_heap_size_used_bytes'), 'memory')
  t.match(res.body, /# TYPE club_job_runs_total counter/)
  t.match(res.body, /# TYPE club_mail_sends_total counter/)
  t.match(res.body, /# TYPE club_phone_sends_total counter/)
})

t.test('mail and phone sends are counted by outcome', async (t) => {
  const ctx = await testApp(t)
  const member = await userWithToken(ctx)
  await ctx.app.inject({ method: 'PATCH', url: '/apis/v2/oauth2/users/credentials', payload: { email: member.email } })
  await ctx.app.background.idle()
  await ctx.app.inject({ method: 'POST', url: '/apis/v2/signup/phone-verifications', payload: { phoneNumber: '+4915112345678' } })
  const m = samples((await ctx.app.inject({ url: '/metrics' })).body)
  t.equal(m.get('club_mail_sends_total{outcome="sent"}'), 1)
  t.equal(m.get('club_phone_sends_total{outcome="sent"}'), 1)
})

t.test('with METRICS_TOKEN set, /metrics needs it as a Bearer token', async (t) => {
  const token = 'a-scrape-token-of-enough-length'
  const ctx = await testApp(t, { METRICS_TOKEN: token })
  const none = await ctx.app.inject({ url: '/metrics' })
  t.equal(none.statusCode, 401)
  errorOf(none)
  t.equal((await ctx.app.inject({ url: '/metrics', headers: { authorization: 'Bearer wrong' } })).statusCode, 401)
  t.equal((await ctx.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${token}` } })).statusCode, 200)
  t.notMatch(ctx.logs(), token)
})

t.test('every answer carries its request id, which is in the log lines of the request', async (t) => {
  const ctx = await testApp(t)
  const res = await ctx.app.inject({ url: '/apis/v2/users/current' })
  t.equal(res.statusCode, 401)
  const id = res.headers['x-request-id'] as string
  t.match(id, /^[0-9a-f-]{36}$/)
  const lines = ctx.logs().trim().split('\n').map((l) => JSON.parse(l))
  t.equal(lines.filter((l) => l.reqId === id).length, 1, 'its one request line names it')
  const spoofed = await ctx.app.inject({ url: '/health/live', headers: { 'x-request-id': 'chosen-by-client' } })
  t.not(spoofed.headers['x-request-id'], 'chosen-by-client', 'a client talking straight to the server cannot choose it')
  const notFound = await ctx.app.inject({ url: `/apis/v2/templates/${'z'.repeat(200)}` })
  t.ok(notFound.headers['x-request-id'], 'on answers from the router too')
})

t.test('behind a trusted proxy, its x-request-id is kept', async (t) => {
  const ctx = await testApp(t, { TRUST_PROXY: '127.0.0.1' })
  const res = await ctx.app.inject({ url: '/apis/v2/users/current', headers: { 'x-request-id': 'lb-1234' } })
  t.equal(res.headers['x-request-id'], 'lb-1234')
  t.match(ctx.logs(), /"reqId":"lb-1234"/)
  const forged = await ctx.app.inject({ url: '/health/live', headers: { 'x-request-id': 'bad\u0001id' } })
  t.not(forged.headers['x-request-id'], 'bad\u0001id', 'an id that is not short and printable is replaced')
})
