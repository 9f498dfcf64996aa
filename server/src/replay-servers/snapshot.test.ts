// The server's look at a box's camera, against a real local HTTP server standing in for the box, and
// the rules of every call to a box: only at an address the box could own, one answer for any failure.
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createNetServer, type AddressInfo } from 'node:net'
import t from 'tap'
import { errorOf, userWithToken, testApp, type TestApp } from '../test-support/app.js'
import { loadConfig, parseBoxNetworks } from '../config.js'
import { mayCall } from './box-call.js'
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

/** Moves where the box's polls come from, as a poll from `address` does. */
async function pollFrom(ctx: TestApp, serverId: string, address: string) {
  const res = await ctx.app.inject({ method: 'GET', url: statusUrl(serverId), remoteAddress: address })
  if (res.statusCode !== 200) throw new Error(`poll failed: ${res.body}`)
}

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

t.test('the box is called at the address its polls come from, or inside BOX_NETWORKS', async (t) => {
  const ctx = await testApp(t, { BOX_NETWORKS: '192.0.2.0/24, 127.0.0.0/8' })
  const box = await boxStandIn(t)
  const { id, token, admin, serverId } = await approvedBox(ctx, box.url)
  box.token = token
  await pollFrom(ctx, serverId, '192.0.2.10')
  const res = await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })
  t.equal(res.statusCode, 200, 'a box behind NAT whose serverUrl is inside BOX_NETWORKS')
  t.same(res.rawPayload, JPEG)
  t.equal(box.seen.length, 1)
})

t.test('mayCall: the address polled from (IPv4-mapped or not, any loopback for a box on loopback) or BOX_NETWORKS, nothing else', async (t) => {
  const none = parseBoxNetworks('')
  t.ok(mayCall('10.0.0.5', '10.0.0.5', none))
  t.ok(mayCall('::ffff:10.0.0.5', '10.0.0.5', none))
  t.ok(mayCall('10.0.0.5', '::ffff:10.0.0.5', none))
  t.ok(mayCall('::ffff:a00:5', '10.0.0.5', none), 'the hex form the URL parser writes')
  t.notOk(mayCall('::ffff:7f00:1', '10.0.0.5', none))
  t.ok(mayCall('::1', '127.0.0.1', none), 'a box on the server\'s machine')
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
