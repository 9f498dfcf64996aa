// The poll loop's reactions to what the server answers, against a local HTTP server speaking the
// device routes of the contract.
import t from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import pino from 'pino'
import { createPublicKey, verify } from 'node:crypto'
import { Value } from 'typebox/value'
import { BoxHealthReport, boxHealthSignatureText, boxKeyAdoptionText, boxKeyProofText, type CameraHealthReport, type ReplayServerStatusAnswer } from '@club/contract'
import { ManualClock } from '../clock.js'
import { tempDir } from '../temp-dir.fixture.js'
import { loadOrCreateBoxKey } from './box-key.js'
import { ControlClient } from './client.js'
import { StatusPoller, type PollerOptions } from './poller.js'
import { StateStore } from './state.js'

type Handler = (req: IncomingMessage, res: ServerResponse) => void

async function fixture(t: { teardown(fn: () => unknown): void }, answers: Handler[], extra: Pick<PollerOptions, 'boxKey' | 'clock' | 'health' | 'monotonic'> = {}) {
  const seen: Array<{ method?: string; url?: string; ifNoneMatch?: string; body?: string }> = []
  const server = createServer((req, res) => {
    const request: (typeof seen)[number] = { method: req.method, url: req.url, ifNoneMatch: req.headers['if-none-match'] as string | undefined }
    seen.push(request)
    const next = answers.shift()
    if (!next) return json(res, 500, { statusCode: 500, error: 'Internal Server Error', message: 'script ended' })
    let body = ''
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
    req.on('end', () => {
      if (body) request.body = body
      next(req, res)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => server.close(r)))
  const dir = mkdtempSync(join(tmpdir(), 'club-agent-poller-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const state = new StateStore(dir)
  const statuses: ReplayServerStatusAnswer[] = []
  const poller = new StatusPoller({
    // No test here waits for the timeout: it only bounds a hung answer, so it can be generous on a loaded machine.
    client: new ControlClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, timeoutMs: 30_000 }),
    state,
    identity: { deviceId: 'box-1', hostname: 'box', localIp: '10.0.0.5', version: '1.2.3', architecture: 'amd64' },
    publicUrl: 'http://10.0.0.5:8090',
    extraReport: () => ({ updateState: 'DOWNLOADING', updateVersion: '1.3.0' }),
    log: pino({ level: 'silent' }),
    random: () => 0.5,
    onStatus: (answer) => void statuses.push(answer),
    ...extra
  })
  return { poller, state, seen, statuses, port: (server.address() as AddressInfo).port }
}

const boxPublicKeyObject = (publicKey: string) =>
  createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey, 'base64').toString('base64url') }, format: 'jwk' })

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers })
  res.end(body === undefined ? undefined : JSON.stringify(body))
}

const registered: Handler = (_req, res) => json(res, 200, { serverId: 'sid-1', status: 'PENDING', pollInterval: 30 })
const approved: Handler = (_req, res) =>
  json(res, 200, { status: 'APPROVED', accessToken: 'tok', area: { id: 'a1' }, config: { cleanupEnabled: false, cameras: [] } }, { etag: '"v1"' })

t.test('registers, persists the serverId, then polls with its report and the ETag', async (t) => {
  const f = await fixture(t, [registered, approved, (_req, res) => json(res, 304, undefined)])
  t.equal(await f.poller.step(), 0, 'polls at once after registering')
  t.equal(f.state.load().serverId, 'sid-1')
  t.equal(await f.poller.step(), 30_000, 'then at the advised interval')
  t.same(f.state.load(), { serverId: 'sid-1', pollInterval: 30, accessToken: 'tok', config: { cleanupEnabled: false, cameras: [] } })
  t.equal(await f.poller.step(), 30_000)
  t.equal(f.statuses.length, 1, '304 changes nothing')
  // Registration takes only its own fields (the server refuses others); the architecture and the update go with polls.
  t.same(JSON.parse(f.seen[0]!.body!), { deviceId: 'box-1', hostname: 'box', version: '1.2.3', serverUrl: 'http://10.0.0.5:8090', localIp: '10.0.0.5' })
  t.equal(
    f.seen[1]!.url,
    '/apis/v2/replay-servers/device/sid-1/status?version=1.2.3&serverUrl=http%3A%2F%2F10.0.0.5%3A8090&localIp=10.0.0.5&architecture=amd64&updateState=DOWNLOADING&updateVersion=1.3.0'
  )
  t.equal(f.seen[1]!.ifNoneMatch, undefined)
  t.equal(f.seen[2]!.ifNoneMatch, '"v1"')
})

t.test('404: the serverId is gone, register again', async (t) => {
  const f = await fixture(t, [registered, (_req, res) => json(res, 404, { statusCode: 404, error: 'Not Found', message: 'register again' }), registered])
  await f.poller.step()
  t.equal(await f.poller.step(), 0)
  t.equal(f.state.load().serverId, undefined)
  await f.poller.step()
  t.same(f.seen.map((s) => s.method), ['POST', 'GET', 'POST'])
})

t.test("429 waits as long as Retry-After says", async (t) => {
  const f = await fixture(t, [(_req, res) => json(res, 429, { statusCode: 429, error: 'Too Many Requests', message: 'slow down' }, { 'retry-after': '42' })])
  t.equal(await f.poller.step(), 42_000)
})

t.test('5xx, unreachable and malformed answers back off, doubling, without throwing', async (t) => {
  const f = await fixture(t, [
    registered,
    (_req, res) => json(res, 503, { statusCode: 503, error: 'Service Unavailable', message: 'down' }),
    (_req, res) => json(res, 200, { status: 'SOMETHING' }),
    (req, res) => req.socket.destroy()
  ])
  await f.poller.step()
  t.same([await f.poller.step(), await f.poller.step(), await f.poller.step()], [2_000, 4_000, 8_000])
  t.equal(f.poller.connected, false)
  t.equal(f.state.load().serverId, 'sid-1', 'the identity survives')
})

t.test('REVOKED forgets the token and the configuration, and polls slowly', async (t) => {
  const f = await fixture(t, [registered, approved, (_req, res) => json(res, 200, { status: 'REVOKED' })])
  await f.poller.step()
  await f.poller.step()
  t.equal(await f.poller.step(), 300_000)
  t.same(f.state.load(), { serverId: 'sid-1', pollInterval: 30 })
  t.same(f.statuses.map((s) => s.status), ['APPROVED', 'REVOKED'])
})

t.test('each registration carries the box key and a fresh proof of it', async (t) => {
  const boxKey = loadOrCreateBoxKey(tempDir(t, 'club-agent-key-'))
  const clock = new ManualClock('2026-03-01T10:00:00.000Z')
  const gone: Handler = (_req, res) => json(res, 404, { statusCode: 404, error: 'Not Found', message: 'register again' })
  const f = await fixture(t, [registered, gone, registered], { boxKey, clock })
  await f.poller.step()
  clock.advance(90_000)
  await f.poller.step()
  await f.poller.step()
  const bodies = [f.seen[0]!, f.seen[2]!].map((s) => JSON.parse(s.body!))
  const polled = new URL(f.seen[1]!.url!, 'http://x').searchParams
  t.equal(polled.get('publicKey'), boxKey.publicKey, 'polls report the key, for a record made before it')
  const adoption = boxKeyAdoptionText({ serverId: 'sid-1', publicKey: boxKey.publicKey, timestamp: polled.get('keyTimestamp')! })
  t.ok(verify(null, Buffer.from(adoption), boxPublicKeyObject(boxKey.publicKey), Buffer.from(polled.get('keySignature')!, 'base64')), 'signed over its serverId')
  t.same(
    bodies.map((b) => b.keyProof.timestamp),
    ['2026-03-01T10:00:00.000Z', '2026-03-01T10:01:30.000Z'],
    'made at each registration, by the clock'
  )
  const key = boxPublicKeyObject(boxKey.publicKey)
  for (const body of bodies) {
    t.equal(body.publicKey, boxKey.publicKey)
    const text = boxKeyProofText({
      deviceId: 'box-1',
      publicKey: body.publicKey,
      timestamp: body.keyProof.timestamp,
      serverUrl: 'http://10.0.0.5:8090',
      audience: `http://127.0.0.1:${f.port}`
    })
    t.ok(verify(null, Buffer.from(text), key, Buffer.from(body.keyProof.signature, 'base64')), 'the server can check it with the public key alone')
  }
})

t.test('a registration the server refuses (a clock off by minutes) is retried with backoff, reached, not "unreachable"', async (t) => {
  const boxKey = loadOrCreateBoxKey(tempDir(t, 'club-agent-key-'))
  const stale: Handler = (_req, res) =>
    json(res, 400, { statusCode: 400, error: 'Bad Request', message: "body.keyProof: the proof's timestamp is not within 120 s of the server's clock" })
  const f = await fixture(t, [stale, stale, registered], { boxKey })
  t.same([await f.poller.step(), await f.poller.step()], [2_000, 4_000], 'backs off as for any failure')
  t.equal(f.poller.connected, true, 'the server was reached: it said why')
  t.equal(f.state.load().serverId, undefined, 'nothing to poll meanwhile: no claim to wait on')
  t.equal(await f.poller.step(), 0, 'once the clock is right, registered')
  t.equal(f.state.load().serverId, 'sid-1')
})

t.test('the "do not film" intervals of an answer are kept with its configuration, and go when an answer has none', async (t) => {
  const doNotFilm = [{ court: { id: 'c1' }, start: '2026-03-01T10:00:00.000Z', end: '2026-03-01T12:00:00.000Z' }]
  const withIntervals: Handler = (_req, res) =>
    json(res, 200, { status: 'APPROVED', accessToken: 'tok', area: { id: 'a1' }, config: { cleanupEnabled: false, cameras: [] }, doNotFilm }, { etag: '"v2"' })
  const f = await fixture(t, [registered, withIntervals, approved])
  await f.poller.step()
  await f.poller.step()
  t.same(f.state.load().doNotFilm, doNotFilm, 'a box restarted without the server still knows them')
  await f.poller.step()
  t.notOk('doNotFilm' in f.state.load(), 'an answer without any clears them')
})

/** A box's health as the agent would report it: `cameras` cameras RECORDING unless `over` says otherwise. */
function healthOf(cameras: number, over: Partial<CameraHealthReport> = {}): BoxHealthReport {
  return {
    cameras: Array.from({ length: cameras }, (_, i) => ({ id: `cam-${i + 1}`, state: 'RECORDING', lastSegmentAt: '2026-03-01T09:59:50.000Z', restarts: 0, problem: null, ...over })),
    disk: { freeBytes: 100e9, totalBytes: 500e9, recordingsBytes: 200e9, hoursKept: 80 },
    temperatureCelsius: null,
    memoryBytes: 80e6,
    uptimeSeconds: 60
  }
}

const queryOf = (seen: { url?: string }) => new URL(seen.url!, 'http://x').searchParams
const notModified: Handler = (_req, res) => json(res, 304, undefined)

t.test("a poll carries the health report only when it is news, and every signed poll the previous poll's round trip", async (t) => {
  const boxKey = loadOrCreateBoxKey(tempDir(t, 'club-agent-key-'))
  const clock = new ManualClock('2026-03-01T10:00:00.000Z')
  // The round trip by a monotonic clock the test moves while the server answers: 37 ms each time.
  let monotonic = 1_000
  const slow = (handler: Handler): Handler => (req, res) => {
    monotonic += 37
    handler(req, res)
  }
  let health = healthOf(2)
  const f = await fixture(t, [registered, slow(approved), slow(notModified), slow(notModified), slow(notModified), slow(notModified)], {
    boxKey, clock, monotonic: () => monotonic, health: () => health
  })
  await f.poller.step()
  await f.poller.step()
  const first = queryOf(f.seen[1]!)
  t.same(JSON.parse(first.get('health')!), health, 'the first poll after a start carries it')
  const healthText = boxHealthSignatureText({ serverId: 'sid-1', timestamp: first.get('keyTimestamp')!, health: first.get('health')! })
  t.ok(
    verify(null, Buffer.from(healthText), boxPublicKeyObject(first.get('publicKey')!), Buffer.from(first.get('healthSignature') ?? '', 'base64')),
    'the report signed by the box key with the poll\'s timestamp (the server keeps no report it does not sign)'
  )
  t.equal(first.get('roundTripMs'), null, 'no round trip measured yet')

  clock.advance(30_000)
  health = { ...healthOf(2), uptimeSeconds: 90, memoryBytes: 81e6 }
  await f.poller.step()
  t.equal(queryOf(f.seen[2]!).get('health'), null, 'unchanged: nothing, so the server answers from its cache')
  t.equal(queryOf(f.seen[2]!).get('roundTripMs'), '37', "the previous poll's round trip")

  clock.advance(30_000)
  health = healthOf(2, { state: 'FAILED', problem: 'connection refused' })
  await f.poller.step()
  t.match(JSON.parse(queryOf(f.seen[3]!).get('health')!), { cameras: [{ state: 'FAILED', problem: 'connection refused' }, { state: 'FAILED' }] }, 'a camera failed: at once')

  clock.advance(4 * 60_000)
  await f.poller.step()
  t.equal(queryOf(f.seen[4]!).get('health'), null, 'four minutes later, nothing new')
  clock.advance(60_000)
  await f.poller.step()
  t.ok(Value.Check(BoxHealthReport, JSON.parse(queryOf(f.seen[5]!).get('health')!)), 'five minutes after the last: the heartbeat')
  t.equal(queryOf(f.seen[5]!).get('roundTripMs'), '37')
})

t.test('without a box key a poll says no round trip: the server could not use it', async (t) => {
  let monotonic = 0
  const f = await fixture(t, [registered, approved, notModified], { monotonic: () => (monotonic += 5), health: () => healthOf(1) })
  await f.poller.step()
  await f.poller.step()
  await f.poller.step()
  t.equal(queryOf(f.seen[2]!).get('roundTripMs'), null)
})

t.test('a report whose poll failed goes again with the next; one the server refuses does not block the polls', async (t) => {
  const clock = new ManualClock('2026-03-01T10:00:00.000Z')
  const down: Handler = (_req, res) => json(res, 503, { statusCode: 503, error: 'Service Unavailable', message: 'down' })
  const refused: Handler = (_req, res) => json(res, 400, { statusCode: 400, error: 'Bad Request', message: 'querystring.health: not a BoxHealthReport' })
  let health = healthOf(1)
  const f = await fixture(t, [registered, down, approved, notModified, refused, approved], { clock, health: () => health })
  await f.poller.step()
  await f.poller.step()
  t.ok(queryOf(f.seen[1]!).get('health'), 'the first report, to a server that is down')
  clock.advance(2_000)
  await f.poller.step()
  t.ok(queryOf(f.seen[2]!).get('health'), 'sent again: it never arrived')
  clock.advance(30_000)
  await f.poller.step()
  t.equal(queryOf(f.seen[3]!).get('health'), null, 'delivered: not again')

  clock.advance(30_000)
  health = healthOf(1, { state: 'FAILED', problem: 'no such file' })
  await f.poller.step()
  t.ok(queryOf(f.seen[4]!).get('health'), 'a change, which this server refuses')
  clock.advance(2_000)
  t.equal(await f.poller.step(), 30_000, 'the next poll is answered')
  t.equal(queryOf(f.seen[5]!).get('health'), null, 'because it goes without the refused report')
})

t.test("64 cameras each FAILED with a 200-character problem reach a server with Node's default header limit", async (t) => {
  const problem = `Nonmatching transport in server reply ${'x'.repeat(200)}`.slice(0, 200)
  const f = await fixture(t, [registered, approved], { boxKey: loadOrCreateBoxKey(tempDir(t, 'club-agent-key-')), health: () => healthOf(64, { state: 'FAILED', problem }) })
  await f.poller.step()
  t.equal(await f.poller.step(), 30_000, 'answered, not refused with 431')
  const sent = JSON.parse(queryOf(f.seen[1]!).get('health')!) as BoxHealthReport
  t.ok(Value.Check(BoxHealthReport, sent))
  t.equal(sent.cameras.length, 64)
  t.ok(sent.cameras.every((c) => c.state === 'FAILED' && c.problem && problem.startsWith(c.problem.slice(0, -1))), `each problem shortened to ${sent.cameras[0]!.problem!.length} characters`)
  t.equal(f.statuses.length, 1)
})
