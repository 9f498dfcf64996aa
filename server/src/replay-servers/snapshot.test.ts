// The server's look at a box's camera, against a real local HTTP server standing in for the box, and
// the rules of every call to a box: only at an address the box could own, one answer for any failure.
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createNetServer, type AddressInfo } from 'node:net'
import t from 'tap'
import { errorOf, userWithToken, testApp, type TestApp } from '../test-support/app.js'
import { loadConfig, parseBoxNetworks } from '../config.js'
import { BoxCallError, boxCallDeps, callBox, mayCall, pollAddressOf, type BoxResolver } from './box-call.js'
import { parseTrustProxy } from '../config.js'
import { ADMIN, adminOf, approve, area, camera, poll, putConfig, registeredBox, statusUrl } from './test-helpers.js'

const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4, 0xff, 0xd9])

type Box = (req: IncomingMessage, res: ServerResponse, token: string) => void

/** A box's local API on a loopback port: it answers `handler` to the right token and 401 to any other. */
async function boxStandIn(t: { teardown(fn: () => unknown): void }, handler: Box = (_req, res) => res.writeHead(200, { 'content-type': 'image/jpeg' }).end(JPEG)) {
  const seen: Array<{ url?: string; authorization?: string }> = []
  const box = { token: '', seen, url: '' }
  const server = createServer((req, res) => {
    seen.push({ url: req.url, authorization: req.headers.authorization })
    if (req.headers.authorization !== `Bearer ${box.token}`) {
      return res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ statusCode: 401, error: 'Unauthorized', message: 'a credential is required' }))
    }
    handler(req, res, box.token)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => { server.closeAllConnections(); server.close(r) }))
  box.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return box
}

/** An approved box with one camera that reported `serverUrl`, polling from loopback; answers its record id, serverId and token. */
async function approvedBox(ctx: TestApp, serverUrl?: string) {
  const admin = await adminOf(ctx)
  const { id, serverId } = await registeredBox(ctx, serverUrl ? { serverUrl } : {})
  await putConfig(ctx, admin, id, { cameras: [camera('cam-1')] })
  await approve(ctx, admin, id, { areaId: await area(ctx) })
  const token: string = (await poll(ctx, serverId)).json().accessToken
  return { id, token, admin, serverId }
}

const snapshotUrl = (id: string, cameraId = 'cam-1') => `${ADMIN}/${id}/cameras/${cameraId}/snapshot`

t.test("admin and staff see the box's picture; a member may not", async (t) => {
  const ctx = await testApp(t)
  const box = await boxStandIn(t)
  const { id, token, admin } = await approvedBox(ctx, box.url)
  box.token = token
  const res = await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'image/jpeg')
  t.equal(res.headers['cache-control'], 'no-store')
  t.same(res.rawPayload, JPEG)
  t.same(box.seen.at(-1), { url: '/cameras/cam-1/snapshot', authorization: `Bearer ${token}` }, "the box's token, in the header only")

  const staff = await userWithToken(ctx, 'staff')
  t.equal((await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: staff.authorization } })).statusCode, 200)
  const member = await userWithToken(ctx, 'member')
  const forbidden = await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: member.authorization } })
  t.equal(forbidden.statusCode, 403)
  errorOf(forbidden)
  const anonymous = await ctx.app.inject({ method: 'GET', url: snapshotUrl(id) })
  t.equal(anonymous.statusCode, 401)
  errorOf(anonymous)
  t.equal(box.seen.length, 2, 'refused callers never reach the box')
  t.notMatch(ctx.logs(), token, 'the token is never logged')

  // Each picture handed over is a look at footage in the log (a camera of no court: a look of no court).
  const log = await ctx.app.inject({ method: 'GET', url: '/apis/v2/admin/footage-access', headers: { authorization: admin } })
  const now = ctx.clock.now().toISOString()
  t.equal(log.json()._total, 2)
  // Both at the same instant of the test's clock: their order is not the point.
  const looks = [...log.json().items].sort((a, b) => a.actor.localeCompare(b.actor))
  t.match(looks, [
    { purpose: 'SNAPSHOT', actor: 'admin', camera: { id: 'cam-1' } },
    { purpose: 'SNAPSHOT', actor: 'staff', user: { id: staff.id }, camera: { id: 'cam-1' }, replayServer: { id }, court: null, start: now, end: now, address: '127.0.0.1' }
  ])
})

t.test('an unreachable box is a 502, a silent one a 504 after the timeout; neither says more', async (t) => {
  const ctx = await testApp(t, { REPLAY_SNAPSHOT_TIMEOUT_MS: '300' })
  // A port that was free a moment ago: nothing listens there, so the connection is refused at once.
  const probe = createNetServer()
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r))
  const closedUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`
  await new Promise((r) => probe.close(r))
  const { id, admin, token } = await approvedBox(ctx, closedUrl)
  const refused = await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })
  t.equal(refused.statusCode, 502)
  t.same(errorOf(refused), { statusCode: 502, error: 'Bad Gateway', message: `replay server ${id} did not send a picture` }, 'no socket error code')

  const silent = await boxStandIn(t, () => {})
  silent.token = token
  await ctx.app.db.updateTable('replay_servers').set({ server_url: silent.url }).where('id', '=', id).execute()
  const late = await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })
  t.equal(late.statusCode, 504)
  t.equal(errorOf(late).message, `replay server ${id} did not send a picture within 300 ms`)
  t.notMatch(late.body, token)
})

t.test('unknown box or camera 404, a box not approved or without serverUrl 409', async (t) => {
  const ctx = await testApp(t)
  const box = await boxStandIn(t)
  const { id, admin } = await approvedBox(ctx, box.url)
  const get = (url: string) => ctx.app.inject({ method: 'GET', url, headers: { authorization: admin } })
  const unknownId = randomUUID()
  t.equal(errorOf(await get(snapshotUrl(unknownId))).message, `no replay server ${unknownId}`)
  const noCamera = await get(snapshotUrl(id, 'cam-9'))
  t.equal(noCamera.statusCode, 404)
  t.equal(errorOf(noCamera).message, `replay server ${id} has no camera cam-9`)
  t.equal((await get(snapshotUrl('not-a-uuid'))).statusCode, 400)
  t.equal((await get(snapshotUrl(id, 'cam%201'))).statusCode, 400, 'a camera id outside the contract')

  const { id: pending } = await registeredBox(ctx, { deviceId: 'box-2', serverUrl: box.url })
  await putConfig(ctx, admin, pending, { cameras: [camera('cam-1')] })
  const notApproved = await get(snapshotUrl(pending))
  t.equal(notApproved.statusCode, 409)
  t.match(errorOf(notApproved).message, /is PENDING/)

  const { id: silent } = await registeredBox(ctx, { deviceId: 'box-3' })
  await putConfig(ctx, admin, silent, { cameras: [camera('cam-1')] })
  await approve(ctx, admin, silent, { areaId: await area(ctx) })
  const noUrl = await get(snapshotUrl(silent))
  t.equal(noUrl.statusCode, 409)
  t.match(errorOf(noUrl).message, /has not reported the address of its local API/)
  t.equal(box.seen.length, 0, 'none of these asked the box')
})

t.test("whatever the box answers instead of a JPEG is the same 502: nothing of its answer is relayed, no redirect followed", async (t) => {
  const ctx = await testApp(t)
  const elsewhere = await boxStandIn(t)
  const answers: Array<(res: ServerResponse) => void> = [
    (res) => res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3' }).end(JSON.stringify({ statusCode: 429, error: 'Too Many Requests', message: 'the box is busy' })),
    (res) => res.writeHead(422, { 'content-type': 'application/json' }).end(JSON.stringify({ statusCode: 422, error: 'Unprocessable Entity', message: 'the LUT /x.cube cannot be read' })),
    (res) => res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ statusCode: 500, message: 'SSH-2.0-OpenSSH_9.2 internal text' })),
    (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>a captive portal</html>'),
    (res) => res.writeHead(200, { 'content-type': 'image/jpeg-not' }).end(JPEG),
    (res) => res.writeHead(302, { location: `${elsewhere.url}/cameras/cam-1/snapshot` }).end()
  ]
  const box = await boxStandIn(t, (_req, res) => answers.shift()!(res))
  const { id, token, admin } = await approvedBox(ctx, box.url)
  box.token = token
  elsewhere.token = token
  const expected = { statusCode: 502, error: 'Bad Gateway', message: `replay server ${id} did not send a picture` }
  for (const what of ['429', '422', 'an error message', 'HTML', 'another type', 'a redirect']) {
    const res = await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })
    t.same(errorOf(res), expected, what)
    t.notOk(res.headers['retry-after'], `${what}: no header of the box's`)
    t.notMatch(res.body, /busy|LUT|SSH|portal|elsewhere/, `${what}: nothing of the box's answer`)
  }
  t.equal(elsewhere.seen.length, 0, 'the redirect was not followed')
  box.token = 'the old token'
  t.same(errorOf(await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })), expected, 'a refused credential too')
})

/** Moves where the box's polls come from, as a poll from `address` (with `headers`) does. */
async function pollFrom(ctx: TestApp, serverId: string, address: string, headers: Record<string, string> = {}) {
  const res = await ctx.app.inject({ method: 'GET', url: statusUrl(serverId), remoteAddress: address, headers })
  if (res.statusCode !== 200) throw new Error(`poll failed: ${res.body}`)
}

const notThePicture = (id: string) => ({ statusCode: 502, error: 'Bad Gateway', message: `replay server ${id} did not send a picture` })

t.test('with TRUST_PROXY=true, an X-Forwarded-For the box writes itself authorises no call', async (t) => {
  const ctx = await testApp(t, { TRUST_PROXY: 'true', REPLAY_SNAPSHOT_TIMEOUT_MS: '60000' })
  const loopbackService = await boxStandIn(t)
  const { id, token, admin, serverId } = await approvedBox(ctx, loopbackService.url)
  loopbackService.token = token
  const cases = [
    { claims: '127.0.0.1', serverUrl: loopbackService.url },
    { claims: '169.254.169.254', serverUrl: 'http://169.254.169.254/' },
    // An address no rule denies: only the header says the box is there.
    { claims: '10.0.0.1', serverUrl: 'http://10.0.0.1:6379/' }
  ]
  for (const { claims, serverUrl } of cases) {
    await pollFrom(ctx, serverId, '192.0.2.10', { 'x-forwarded-for': claims })
    await ctx.app.db.updateTable('replay_servers').set({ server_url: serverUrl }).where('id', '=', id).execute()
    const res = await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })
    t.same(errorOf(res), notThePicture(id), `X-Forwarded-For: ${claims}`)
  }
  t.equal(loopbackService.seen.length, 0, "the server's loopback was never called")
  t.equal(ctx.logs().match(/"reason":"not-the-box"/g)?.length, cases.length, 'each refused before any connection')
})

t.test("a box behind a reverse proxy on the server's machine is not on the server's loopback", async (t) => {
  const ctx = await testApp(t, { REPLAY_SNAPSHOT_TIMEOUT_MS: '60000' })
  const loopbackService = await boxStandIn(t)
  const { id, token, admin, serverId } = await approvedBox(ctx, loopbackService.url)
  loopbackService.token = token
  t.equal((await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })).statusCode, 200, 'straight from loopback: the same machine')
  for (const headers of [{ 'x-forwarded-for': '192.0.2.10' }, { forwarded: 'for=192.0.2.10' }, { 'x-forwarded-for': '127.0.0.1' }] as Array<Record<string, string>>) {
    await pollFrom(ctx, serverId, '127.0.0.1', headers)
    const res = await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })
    t.same(errorOf(res), notThePicture(id), JSON.stringify(headers))
  }
  t.equal(loopbackService.seen.length, 1, 'only the call straight from loopback reached it')
})

t.test("the server never calls its own port on loopback, even for a box on its machine", async (t) => {
  const box = await boxStandIn(t)
  const ctx = await testApp(t, { PORT: new URL(box.url).port })
  const { id, token, admin } = await approvedBox(ctx, box.url.replace('127.0.0.1', '127.0.0.2'))
  box.token = token
  t.same(errorOf(await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })), notThePicture(id))
  t.match(ctx.logs(), /is the server itself/)
  t.equal(box.seen.length, 0)
})

t.test('an answer larger than a snapshot is cut off: the same 502', async (t) => {
  const ctx = await testApp(t)
  const big = Buffer.alloc(10 * 1024 * 1024 + 1, 0xff)
  const box = await boxStandIn(t, (_req, res) => res.writeHead(200, { 'content-type': 'image/jpeg' }).end(big))
  const { id, token, admin } = await approvedBox(ctx, box.url)
  box.token = token
  t.same(errorOf(await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })), notThePicture(id))
  t.match(ctx.logs(), /"reason":"too-large"/)
})

/** Answers `answers` for every name, as a name server would; records the names asked. */
function fakeResolver(answers: { v4?: string[]; v6?: string[] } | 'never') {
  const asked: string[] = []
  const pending: Array<() => void> = []
  const answer = (list: string[] | undefined) => (host: string) => {
    asked.push(host)
    if (answers === 'never') return new Promise<string[]>((_, reject) => pending.push(() => reject(Object.assign(new Error('cancelled'), { code: 'ECANCELLED' }))))
    return list ? Promise.resolve(list) : Promise.reject(Object.assign(new Error('no data'), { code: 'ENODATA' }))
  }
  const resolver = { resolve4: answer(answers === 'never' ? [] : answers.v4), resolve6: answer(answers === 'never' ? [] : answers.v6), cancel: () => pending.splice(0).forEach((cancel) => cancel()) }
  return { asked, resolver: resolver as unknown as BoxResolver }
}

t.test('a hostname is resolved, and refused when it names an address the box may not own', async (t) => {
  const box = await boxStandIn(t)
  const port = new URL(box.url).port
  const row = { id: 'b', server_id_hash: 'h', token_generation: 1, server_url: `http://box.example:${port}`, poll_address: '192.0.2.10' }
  const deps = (answers: Parameters<typeof fakeResolver>[0], timeoutMs = 5000) => {
    const fake = fakeResolver(answers)
    return { fake, deps: { ...boxCallDeps({ REPLAY_SNAPSHOT_TIMEOUT_MS: timeoutMs, BOX_NETWORKS: '10.0.0.0/8', PORT: 3000 }, 'k'), resolver: () => fake.resolver } }
  }
  for (const v4 of [['127.0.0.1'], ['169.254.169.254'], ['224.0.0.1'], ['0.0.0.0']]) {
    const { fake, deps: d } = deps({ v4, v6: ['fe80::1'] })
    await t.rejects(callBox(d, row, 'x', { maxBytes: 10 }), { name: 'BoxCallError', reason: 'not-the-box' }, `${v4} refused`)
    t.same(fake.asked, ['box.example', 'box.example'])
  }
  // Even inside BOX_NETWORKS a special address is refused.
  const { deps: inside } = deps({ v4: ['169.254.169.254'] })
  await t.rejects(callBox({ ...inside, boxNetworks: parseBoxNetworks('0.0.0.0/0') }, row, 'x', { maxBytes: 10 }), { name: 'BoxCallError', reason: 'not-the-box' })
  const { deps: silent } = deps('never', 200)
  await t.rejects(callBox(silent, row, 'x', { maxBytes: 10 }), { name: 'BoxCallError', reason: 'timeout' }, 'a silent name server is cancelled by the timeout')
  const { deps: unknown } = deps({})
  await t.rejects(callBox(unknown, row, 'x', { maxBytes: 10 }), { name: 'BoxCallError', reason: 'unreachable' })
  // A box on the server's machine whose name resolves to loopback is called at exactly that address.
  const { deps: local } = deps({ v4: ['127.0.0.1'] })
  const answer = await callBox(local, { ...row, poll_address: '127.0.0.1' }, 'x', { maxBytes: 1000 }).catch((err: BoxCallError) => err)
  t.equal((answer as { status: number }).status, 401, 'it reached the stand-in (which refuses the token)')
  t.equal(box.seen.length, 1)
})

t.test('pollAddressOf: the peer, or what trusted proxies report; never a special address told in a header', async (t) => {
  const req = (ip: string, remoteAddress: string, headers: Record<string, string> = {}) => ({ ip, headers, socket: { remoteAddress } })
  const off = parseTrustProxy('false')
  const on = parseTrustProxy('true')
  const hop = parseTrustProxy('1')
  t.equal(pollAddressOf(req('192.0.2.10', '192.0.2.10'), off), '192.0.2.10')
  t.equal(pollAddressOf(req('127.0.0.1', '127.0.0.1'), off), '127.0.0.1', 'straight from loopback')
  t.equal(pollAddressOf(req('127.0.0.1', '127.0.0.1', { 'x-forwarded-for': '192.0.2.10' }), off), '127.0.0.1 (forwarded, not verified)', 'a local proxy')
  t.equal(pollAddressOf(req('192.0.2.1', '192.0.2.1', { forwarded: 'for=192.0.2.10' }), off), '192.0.2.1 (forwarded, not verified)')
  t.equal(pollAddressOf(req('127.0.0.1', '192.0.2.10', { 'x-forwarded-for': '127.0.0.1' }), on), '127.0.0.1 (forwarded, not verified)', 'TRUST_PROXY=true')
  t.equal(pollAddressOf(req('10.0.0.1', '192.0.2.10', { 'x-forwarded-for': '10.0.0.1' }), on), '10.0.0.1 (forwarded, not verified)')
  t.equal(pollAddressOf(req('192.0.2.10', '127.0.0.1', { 'x-forwarded-for': '192.0.2.10' }), hop), '192.0.2.10', 'what a counted proxy reports')
  t.equal(pollAddressOf(req('169.254.169.254', '127.0.0.1', { 'x-forwarded-for': '169.254.169.254' }), hop), '169.254.169.254 (forwarded, not verified)')
  t.equal(pollAddressOf(req('127.0.0.1', '127.0.0.1', { 'x-forwarded-for': '127.0.0.1' }), hop), '127.0.0.1 (forwarded, not verified)')
  t.equal(pollAddressOf(req('not an address', '127.0.0.1', { 'x-forwarded-for': 'not an address' }), hop), 'not an address (forwarded, not verified)')
  t.notOk(mayCall('192.0.2.10', '192.0.2.10 (forwarded, not verified)', parseBoxNetworks('')), 'a marked address authorises nothing')
})

t.test("a box polling from elsewhere cannot make the server call the server's loopback or a private address", async (t) => {
  // A long timeout: a refusal that waited for a connection would be a 504, not an immediate 502.
  const ctx = await testApp(t, { REPLAY_SNAPSHOT_TIMEOUT_MS: '60000' })
  const loopbackService = await boxStandIn(t)
  const port = new URL(loopbackService.url).port
  const { id, token, admin, serverId } = await approvedBox(ctx, loopbackService.url)
  loopbackService.token = token
  // 192.0.2.0/24 is documentation space: no traffic ever goes there, it is only where the polls "come from".
  await pollFrom(ctx, serverId, '192.0.2.10')
  const expected = { statusCode: 502, error: 'Bad Gateway', message: `replay server ${id} did not send a picture` }
  const urls = [
    loopbackService.url,
    `http://localhost:${port}`,
    `http://[::ffff:127.0.0.1]:${port}`,
    `http://[::ffff:7f00:1]:${port}`,
    'http://10.0.0.1:8090',
    'http://169.254.169.254',
    'http://[fd00::1]:8090'
  ]
  for (const serverUrl of urls) {
    await ctx.app.db.updateTable('replay_servers').set({ server_url: serverUrl }).where('id', '=', id).execute()
    const res = await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })
    t.same(errorOf(res), expected, serverUrl)
  }
  t.equal(loopbackService.seen.length, 0, "the server's loopback was never called")
  t.equal(ctx.logs().match(/"reason":"not-the-box"/g)?.length, urls.length, 'each refused before any connection')
  t.notMatch(ctx.logs(), token)
})

t.test("BOX_NETWORKS never opens the server's loopback to a box polling from elsewhere", async (t) => {
  const ctx = await testApp(t, { BOX_NETWORKS: '192.0.2.0/24, 127.0.0.0/8' })
  const box = await boxStandIn(t)
  const { id, token, admin, serverId } = await approvedBox(ctx, box.url)
  box.token = token
  await pollFrom(ctx, serverId, '192.0.2.10')
  t.same(errorOf(await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })), notThePicture(id))
  t.equal(box.seen.length, 0)
})

t.test('mayCall: the address polled from (IPv4-mapped or not, any loopback for a box on loopback) or BOX_NETWORKS, nothing else', async (t) => {
  const none = parseBoxNetworks('')
  t.ok(mayCall('10.0.0.5', '10.0.0.5', none))
  t.ok(mayCall('::ffff:10.0.0.5', '10.0.0.5', none))
  t.ok(mayCall('10.0.0.5', '::ffff:10.0.0.5', none))
  t.ok(mayCall('::ffff:a00:5', '10.0.0.5', none), 'the hex form the URL parser writes')
  t.notOk(mayCall('::ffff:7f00:1', '10.0.0.5', none))
  t.ok(mayCall('::1', '127.0.0.1', none), 'a box on the server\'s machine')
  t.notOk(mayCall('169.254.169.254', '169.254.169.254', none), 'link-local: never, even polled from')
  const everything = parseBoxNetworks('0.0.0.0/0,::/0')
  for (const special of ['169.254.169.254', 'fe80::1', '0.0.0.0', '::', '224.0.0.1', 'ff02::1', '255.255.255.255', '127.0.0.1', '::1']) {
    t.notOk(mayCall(special, '192.0.2.10', everything), `${special}: never, even inside BOX_NETWORKS`)
  }
  t.notOk(mayCall('127.0.0.1', '10.0.0.5', none))
  t.notOk(mayCall('10.0.0.6', '10.0.0.5', none))
  t.notOk(mayCall('10.0.0.5', null, none), 'a box that never polled')
  t.notOk(mayCall('localhost', '127.0.0.1', none), 'only addresses, never names')
  const vpn = parseBoxNetworks('10.20.0.0/16,fd00::/64')
  t.ok(mayCall('10.20.3.4', '198.51.100.7', vpn))
  t.ok(mayCall('::ffff:10.20.3.4', '198.51.100.7', vpn))
  t.ok(mayCall('fd00::42', '198.51.100.7', vpn))
  t.notOk(mayCall('10.21.0.1', '198.51.100.7', vpn))
  for (const bad of ['10.0.0.0', '10.0.0.0/33', 'fd00::/129', 'example.org/8', '10.0.0.0/8;rm']) {
    t.throws(() => loadConfig({ BOX_NETWORKS: bad }), /^BOX_NETWORKS=.* is not valid: .* is not a CIDR such as 10\.20\.0\.0\/16/, bad)
  }
})

t.test('the route is in the OpenAPI document', async (t) => {
  const ctx = await testApp(t)
  const doc = (await ctx.app.inject({ method: 'GET', url: '/documentation/json' })).json()
  const route = doc.paths['/apis/v2/admin/replay-servers/{id}/cameras/{cameraId}/snapshot']
  t.ok(route?.get)
  t.same(route.get.security, [{ bearerAuth: [] }])
})
