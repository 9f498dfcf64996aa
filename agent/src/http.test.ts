// The local API over real HTTP on loopback: who may call it, the installer's sign-in, and that no
// flood of requests can start more decoders than the box allows.
import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import type { AgentHealth } from '@club/contract'
import { LocalPassword } from './access/local-password.js'
import { SessionStore, SignInAttempts } from './access/sessions.js'
import { ManualClock } from './clock.js'
import { countingDecoders } from './decoders.fixture.js'
import { clipHttpError } from './agent.js'
import { ClipError } from './clips/export.js'
import { DEFAULT_LIMITS, HttpError, buildLocalApi, type LocalApiLimits } from './http.js'
import { createLogger } from './log.js'

const TOKEN = 'device-token-0123456789'
const health: AgentHealth = {
  version: '1.0.0', deviceId: 'box-1', keyFingerprint: 'SHA256:Zmh6rfhivXdsj8GLjp+OIAiXFIVu4jOzkCpZHQ1fKSU', hostname: 'box', displayName: null, serverUrl: 'http://127.0.0.1:9', status: 'APPROVED',
  area: { id: 'area-1' }, connected: true, lastContactAt: null, pendingUpdate: null, cleanupEnabled: false, freeDiskBytes: 1,
  disk: { recordingsBytes: 0, retentionHours: 72, minFreeBytes: 2048, lastCleanupAt: null, lastCleanupDeleted: null },
  cameras: []
}
const clipRequest = (cameraId = 'cam-1') => ({ cameraId, start: '2026-03-01T10:00:00.000Z', end: '2026-03-01T10:00:05.000Z' })

async function localApi(t: { teardown(fn: () => unknown): void }, limits: Partial<LocalApiLimits> = {}, passwordCheck?: LocalPassword) {
  const dir = mkdtempSync(join(tmpdir(), 'club-agent-http-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const clock = new ManualClock()
  const fixture = countingDecoders(clock)
  const { decoders } = fixture
  let logs = ''
  const log = createLogger('info', new Writable({ write: (chunk, _e, done) => ((logs += chunk.toString()), done()) }))
  const password = new LocalPassword({ stateDir: dir, cost: 1024, clock })
  const app = await buildLocalApi(
    {
      live: () => ({ status: 'ok', recording: true }),
      health: async () => health,
      accessToken: () => TOKEN,
      snapshot: async (id) => {
        if (id === 'nope') throw new HttpError(404, 'there is no camera nope')
        return decoders.snapshot(id)
      },
      exportClip: (request) => decoders.submitExport(request) as never,
      exportJob: (id) => decoders.job(id) as never,
      exportJobs: () => decoders.listJobs() as never,
      replayRequests: () => {}
    },
    {
      password: passwordCheck ?? password,
      sessions: new SessionStore({ clock, ttlMs: 3_600_000 }),
      attempts: new SignInAttempts({ clock, maxAttempts: 3, windowMs: 15 * 60_000 })
    },
    log,
    { ...DEFAULT_LIMITS, ...limits }
  )
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const address = app.server.address() as { port: number }
  const url = `http://127.0.0.1:${address.port}`
  const call = (path: string, init: RequestInit = {}) => fetch(`${url}${path}`, init)
  const bearer = { authorization: `Bearer ${TOKEN}` }
  const signIn = (pw: string) =>
    call('/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: pw }) })
  return { ...fixture, url, call, bearer, signIn, password, command: new LocalPassword({ stateDir: dir, cost: 1024 }), port: address.port, logs: () => logs }
}

async function errorOf(res: Response) {
  const body = (await res.json()) as { statusCode: number; error: string; message: string }
  if (body.statusCode !== res.status || typeof body.message !== 'string' || typeof body.error !== 'string' || Object.keys(body).length !== 3) {
    throw new Error(`not the error shape: ${JSON.stringify(body)}`)
  }
  return body
}

const guarded: Array<{ method: string; path: string; body?: unknown }> = [
  { method: 'GET', path: '/health' },
  { method: 'GET', path: '/cameras' },
  { method: 'GET', path: '/cameras/cam-1/snapshot' },
  { method: 'POST', path: '/clips', body: clipRequest() },
  { method: 'GET', path: '/clips/jobs' },
  { method: 'GET', path: '/clips/jobs/some-id' },
  { method: 'DELETE', path: '/session' },
  { method: 'GET', path: '/no-such-route' }
]

t.test('every route but the liveness probe needs a credential', async (t) => {
  const api = await localApi(t)
  const live = await api.call('/health/live')
  t.equal(live.status, 200)
  t.same(await live.json(), { status: 'ok', recording: true }, 'only that it runs and records')
  for (const route of guarded) {
    const init = (headers: Record<string, string>): RequestInit => ({
      method: route.method,
      headers: { ...headers, ...(route.body ? { 'content-type': 'application/json' } : {}) },
      ...(route.body ? { body: JSON.stringify(route.body) } : {})
    })
    for (const [what, headers] of [
      ['none', {}],
      ['a wrong token', { authorization: 'Bearer not-the-token' }],
      ['the token without Bearer', { authorization: TOKEN }],
      ['a made-up cookie', { cookie: 'club_agent_session=made-up' }]
    ] as const) {
      const res = await api.call(route.path, init(headers))
      t.equal(res.status, 401, `${route.method} ${route.path} with ${what}`)
      t.equal(res.headers.get('www-authenticate'), 'Bearer')
      await errorOf(res)
    }
  }
  t.equal(api.counts.snapshots + api.counts.exports, 0, 'nothing ran for anyone without a credential')
})

t.test("the box's page and its scripts answer anyone; they hold no data", async (t) => {
  const api = await localApi(t)
  const page = await api.call('/')
  t.equal(page.status, 200)
  t.match(page.headers.get('content-type'), /^text\/html/)
  t.match(page.headers.get('content-security-policy'), /default-src 'none'; script-src 'self'/)
  const html = await page.text()
  t.notMatch(html, /box-1|device-token/, 'nothing of the box in the page itself')
  const script = /src="(\/assets\/[0-9a-f]{16}\/box\/main\.js)"/.exec(html)?.[1]
  t.ok(script)
  const asset = await api.call(script!)
  t.equal(asset.status, 200)
  t.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable')
  const consoleScript = await api.call(script!.replace('box/main.js', 'console/main.js'))
  t.equal(consoleScript.status, 404, "the server's console is not served by the box")
  await errorOf(consoleScript)
  t.equal((await api.call('/assets/0000000000000000/box/main.js')).status, 401, 'another build: an unknown route like any other')
})

t.test('with the device token every route answers', async (t) => {
  const api = await localApi(t)
  const get = (path: string) => api.call(path, { headers: api.bearer })
  t.same(await (await get('/health')).json(), health)
  t.same(await (await get('/cameras')).json(), [])
  const picture = get('/cameras/cam-1/snapshot')
  while (!api.pendingSnapshots.has('cam-1')) await new Promise((r) => setTimeout(r, 10))
  api.pendingSnapshots.get('cam-1')!.resolve(Buffer.from('jpeg'))
  const snapshot = await picture
  t.equal(snapshot.status, 200)
  t.equal(snapshot.headers.get('content-type'), 'image/jpeg')
  t.equal(Buffer.from(await snapshot.arrayBuffer()).toString(), 'jpeg')
  t.equal((await get('/clips/jobs')).status, 200)
  const missing = await get('/clips/jobs/some-id')
  t.equal(missing.status, 404)
  await errorOf(missing)
  const unknown = await get('/no-such-route')
  t.equal(unknown.status, 404, 'an unknown route is a 404 in the error shape')
  t.match((await errorOf(unknown)).message, /no-such-route not found/)
  const camera = await get('/cameras/nope/snapshot')
  t.equal(camera.status, 404)
  await errorOf(camera)
})

t.test('the installer signs in with the local password and holds a session cookie', async (t) => {
  const api = await localApi(t)
  const before = await api.signIn('anything')
  t.equal(before.status, 401, 'no password yet')
  await errorOf(before)
  const password = await api.command.rotate()

  const wrong = await api.signIn(`${password}x`)
  t.equal(wrong.status, 401)
  t.equal(wrong.headers.get('set-cookie'), null)
  await errorOf(wrong)

  const res = await api.signIn(password)
  t.equal(res.status, 204)
  const setCookie = res.headers.get('set-cookie')!
  t.match(setCookie, /^club_agent_session=[A-Za-z0-9_-]{43}; /)
  for (const flag of ['HttpOnly', 'SameSite=Strict', 'Path=/', 'Max-Age=3600']) t.match(setCookie, flag)
  t.notMatch(setCookie, /Secure/, 'plain http on the LAN: a Secure cookie would never come back')
  const cookie = setCookie.split(';')[0]!
  t.equal((await api.call('/health', { headers: { cookie } })).status, 200)
  t.equal((await api.call('/cameras', { headers: { cookie: `other=1; ${cookie}` } })).status, 200)

  t.equal((await api.call('/session', { method: 'DELETE', headers: { cookie } })).status, 204)
  t.equal((await api.call('/health', { headers: { cookie } })).status, 401, 'signed out')
  t.notMatch(api.logs(), password, 'the password is never logged')
  t.notMatch(api.logs(), cookie.split('=')[1]!, 'nor the cookie')

  for (const body of ['{"password":""}', '{"pass":"x"}', 'not json', JSON.stringify({ password: 'x'.repeat(201) })]) {
    const bad = await api.call('/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    t.equal(bad.status, 400, body.slice(0, 20))
    await errorOf(bad)
  }
})

t.test('sessions expire', async (t) => {
  const api = await localApi(t)
  const password = await api.command.rotate()
  const cookie = (await api.signIn(password)).headers.get('set-cookie')!.split(';')[0]!
  api.clock.advance(3_599_000)
  t.equal((await api.call('/health', { headers: { cookie } })).status, 200)
  api.clock.advance(1000)
  t.equal((await api.call('/health', { headers: { cookie } })).status, 401)
})

t.test('sign-in attempts are limited per address, counted on the clock', async (t) => {
  const api = await localApi(t)
  const password = await api.command.rotate()
  for (let i = 0; i < 3; i++) t.equal((await api.signIn('guess')).status, 401)
  const limited = await api.signIn(password)
  t.equal(limited.status, 429, 'even the right password waits')
  t.equal(limited.headers.get('retry-after'), '900')
  t.match((await errorOf(limited)).message, /too many sign-in attempts/)
  api.clock.advance(15 * 60_000)
  t.equal((await api.signIn(password)).status, 204, 'the window has passed')
})

t.test('at most two password checks run at once, box-wide', async (t) => {
  const checks: Array<() => void> = []
  const slow = { current: () => null, verify: () => new Promise((resolve) => checks.push(() => resolve({ ok: false }))) } as unknown as LocalPassword
  const api = await localApi(t, {}, slow)
  const first = [api.signIn('a'), api.signIn('b')]
  while (checks.length < 2) await new Promise((r) => setTimeout(r, 10))
  const third = await api.signIn('c')
  t.equal(third.status, 429)
  t.equal(third.headers.get('retry-after'), '1')
  await errorOf(third)
  checks.forEach((finish) => finish())
  t.same((await Promise.all(first)).map((r) => r.status), [401, 401])
  t.equal(checks.length, 2, 'the third never reached scrypt')
})

t.test('a new password ends every session, in the running agent', async (t) => {
  const api = await localApi(t)
  const first = await api.command.rotate()
  const cookie = (await api.signIn(first)).headers.get('set-cookie')!.split(';')[0]!
  t.equal((await api.call('/health', { headers: { cookie } })).status, 200)
  const second = await api.command.rotate()
  t.equal((await api.call('/health', { headers: { cookie } })).status, 401, 'the old session is over')
  t.equal((await api.signIn(first)).status, 401, 'the old password too')
  const fresh = (await api.signIn(second)).headers.get('set-cookie')!.split(';')[0]!
  t.equal((await api.call('/health', { headers: { cookie: fresh } })).status, 200)
})

t.test('30 concurrent snapshot requests for one camera start one process; across cameras the cap holds', async (t) => {
  const api = await localApi(t)
  const get = (id: string) => api.call(`/cameras/${id}/snapshot`, { headers: api.bearer })
  const flood = Array.from({ length: 30 }, () => get('cam-1'))
  while (!api.pendingSnapshots.has('cam-1')) await new Promise((r) => setTimeout(r, 10))
  // Every request reached the gate before the picture is ready: joined, not started.
  const picture = Buffer.from('jpeg-of-cam-1')
  api.pendingSnapshots.get('cam-1')!.resolve(picture)
  const answers = await Promise.all(flood)
  t.same(answers.map((r) => r.status), Array(30).fill(200))
  const bodies = await Promise.all(answers.map(async (r) => Buffer.from(await r.arrayBuffer()).toString()))
  t.ok(bodies.every((b) => b === 'jpeg-of-cam-1'), 'all the same picture')
  t.equal(api.counts.snapshots, 1, 'one ffmpeg')

  // Eight more requests over four other cameras; every picture is handed out as soon as it is asked for.
  const others = Promise.all(['cam-2', 'cam-3', 'cam-4', 'cam-5'].flatMap((id) => [get(id), get(id)]).map((p) => p.then((r) => r.status)))
  let settled = false
  void others.then(() => (settled = true))
  while (!settled) {
    for (const pending of api.pendingSnapshots.values()) pending.resolve(Buffer.from('jpeg'))
    await new Promise((r) => setTimeout(r, 10))
  }
  t.ok((await others).every((s) => s === 200 || s === 429), 'each answered a picture or 429')
  t.ok(api.counts.mostAtOnce <= 2, `never more than maxDecoders at once (${api.counts.mostAtOnce})`)
})

t.test('a refused snapshot is a 429 with Retry-After in the error shape', async (t) => {
  const api = await localApi(t)
  const get = (id: string) => api.call(`/cameras/${id}/snapshot`, { headers: api.bearer })
  const a = get('cam-a')
  const b = get('cam-b')
  while (api.pendingSnapshots.size < 2) await new Promise((r) => setTimeout(r, 10))
  const refused = await get('cam-c')
  t.equal(refused.status, 429)
  t.equal(refused.headers.get('retry-after'), '1')
  await errorOf(refused)
  t.equal(api.counts.snapshots, 2)
  api.pendingSnapshots.get('cam-a')!.resolve(Buffer.from('a'))
  api.pendingSnapshots.get('cam-b')!.resolve(Buffer.from('b'))
  t.same([(await a).status, (await b).status], [200, 200])
})

t.test('an export whose footage is still being written is a 503 with Retry-After in the error shape, not a 500', async (t) => {
  const api = await localApi(t)
  const answer = api.call('/clips', { method: 'POST', headers: { ...api.bearer, 'content-type': 'application/json' }, body: JSON.stringify(clipRequest()) })
  while (api.pendingExports.length < 1) await new Promise((r) => setTimeout(r, 10))
  const message = 'the footage of camera cam-1 between 2026-03-01T10:00:00.000Z and 2026-03-01T10:00:05.000Z is still being written: ask again in 2 s'
  api.pendingExports[0]!.reject(clipHttpError(new ClipError(503, message, 2)))
  const refused = await answer
  t.equal(refused.status, 503)
  t.equal(refused.headers.get('retry-after'), '2')
  t.same(await errorOf(refused), { statusCode: 503, error: 'Service Unavailable', message })
  t.notMatch(api.logs(), /request failed/, 'said on purpose: not logged as a failure')
})

t.test('an export queued behind another reports its place; the synchronous answer still works', async (t) => {
  const api = await localApi(t)
  const post = (body: unknown, prefer?: string) =>
    api.call('/clips', { method: 'POST', headers: { ...api.bearer, 'content-type': 'application/json', ...(prefer ? { prefer } : {}) }, body: JSON.stringify(body) })
  const waiting = post(clipRequest('cam-1'))
  while (api.pendingExports.length < 1) await new Promise((r) => setTimeout(r, 10))
  const queued = await post(clipRequest('cam-2'), 'respond-async')
  t.equal(queued.status, 202)
  t.equal(queued.headers.get('preference-applied'), 'respond-async')
  const job = (await queued.json()) as { id: string; state: string; position: number }
  t.match(job, { cameraId: 'cam-2', state: 'queued', position: 1 })
  t.equal(queued.headers.get('location'), `/clips/jobs/${job.id}`)
  const followed = await api.call(`/clips/jobs/${job.id}`, { headers: api.bearer })
  t.match(await followed.json(), { id: job.id, state: 'queued', position: 1 })
  const list = (await (await api.call('/clips/jobs', { headers: api.bearer })).json()) as Array<{ cameraId: string; state: string; position: number | null }>
  t.same(list.map((j) => [j.cameraId, j.state, j.position]), [['cam-1', 'running', null], ['cam-2', 'queued', 1]])
  t.equal(api.counts.exports, 1, 'one at a time')

  const clip = { id: 'c1', cameraId: 'cam-1', start: clipRequest().start, end: clipRequest().end, duration: 5, location: 'file:///x.mp4' }
  api.pendingExports[0]!.resolve(clip)
  const done = await waiting
  t.equal(done.status, 200)
  t.same(await done.json(), clip, 'the caller that waited gets its clip as before')
  while (api.pendingExports.length < 2) await new Promise((r) => setTimeout(r, 10))
  t.match(await (await api.call(`/clips/jobs/${job.id}`, { headers: api.bearer })).json(), { state: 'running', position: null })
})

t.test("a caller of the local API cannot ask for a replay's export options (whole interval, kept on the box)", async (t) => {
  const api = await localApi(t)
  for (const option of [{ whole: true }, { keepLocal: true }]) {
    const res = await api.call('/clips', { method: 'POST', headers: { ...api.bearer, 'content-type': 'application/json' }, body: JSON.stringify({ ...clipRequest(), ...option }) })
    t.equal(res.status, 400, JSON.stringify(option))
    t.match((await errorOf(res)).message, /additional properties/, 'refused as a field the request may not carry')
  }
  t.equal(api.counts.exports, 0, 'no export started')
})

t.test('bodies, URLs and slow clients are bounded; errors keep the shape', async (t) => {
  const api = await localApi(t)
  const big = await api.call('/clips', {
    method: 'POST', headers: { ...api.bearer, 'content-type': 'application/json' }, body: JSON.stringify({ ...clipRequest(), pad: 'x'.repeat(20_000) })
  })
  t.equal(big.status, 413)
  await errorOf(big)
  const extra = await api.call('/clips', { method: 'POST', headers: { ...api.bearer, 'content-type': 'application/json' }, body: JSON.stringify({ ...clipRequest(), colour: 'red' }) })
  t.equal(extra.status, 400)
  await errorOf(extra)
  const longParam = await api.call(`/cameras/${'x'.repeat(300)}/snapshot`, { headers: api.bearer })
  t.equal(longParam.status, 414, 'a parameter longer than maxParamLength')
  await errorOf(longParam)

  // A client that sends half a request head and then nothing is cut, whatever it intends. Its own box
  // with short timeouts: the requests above may take more than 300 ms on a loaded machine.
  const impatient = await localApi(t, { headersTimeoutMs: 200, requestTimeoutMs: 300, connectionsCheckingIntervalMs: 50 })
  const socket = connect(impatient.port, '127.0.0.1')
  let received = ''
  socket.on('data', (d) => (received += d))
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  socket.write('GET /health HTTP/1.1\r\nHost: box\r\n')
  await new Promise<void>((resolve) => socket.once('close', () => resolve()))
  t.match(received, /^HTTP\/1\.1 408/, 'the server closed the connection with 408')
})

t.test('the logger censors credentials wherever they appear', async (t) => {
  let out = ''
  const log = createLogger('info', new Writable({ write: (chunk, _e, done) => ((out += chunk.toString()), done()) }))
  log.info({ req: { headers: { authorization: 'Bearer s3cret-a', cookie: 'club_agent_session=s3cret-b' } }, res: { headers: { 'set-cookie': 's3cret-c' } }, password: 's3cret-d' }, 'x')
  t.notMatch(out, /s3cret/)
})
