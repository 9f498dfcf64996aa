// The server's look at a box's camera, against a real local HTTP server standing in for the box.
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createNetServer, type AddressInfo } from 'node:net'
import t from 'tap'
import { errorOf, userWithToken, testApp, type TestApp } from '../test-support/app.js'
import { ADMIN, adminOf, approve, area, camera, poll, putConfig, registeredBox } from './test-helpers.js'

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

/** An approved box with one camera that reported `serverUrl`; answers its record id and its token. */
async function approvedBox(ctx: TestApp, serverUrl?: string) {
  const admin = await adminOf(ctx)
  const { id, serverId } = await registeredBox(ctx, serverUrl ? { serverUrl } : {})
  await putConfig(ctx, admin, id, { cameras: [camera('cam-1')] })
  await approve(ctx, admin, id, { areaId: await area(ctx) })
  const token: string = (await poll(ctx, serverId)).json().accessToken
  return { id, token, admin }
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

t.test('an unreachable box is a 504 saying so; a silent one too, after the timeout', async (t) => {
  const ctx = await testApp(t, { REPLAY_SNAPSHOT_TIMEOUT_MS: '300' })
  // A port that was free a moment ago: nothing listens there, so the connection is refused at once.
  const probe = createNetServer()
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r))
  const closedUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`
  await new Promise((r) => probe.close(r))
  const { id, admin, token } = await approvedBox(ctx, closedUrl)
  const refused = await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })
  t.equal(refused.statusCode, 504)
  t.equal(errorOf(refused).message, `the box at ${closedUrl} could not be reached (ECONNREFUSED)`)

  const silent = await boxStandIn(t, () => {})
  silent.token = token
  await ctx.app.db.updateTable('replay_servers').set({ server_url: silent.url }).where('id', '=', id).execute()
  const late = await ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })
  t.equal(late.statusCode, 504)
  t.equal(errorOf(late).message, `the box at ${silent.url} did not answer within 300 ms`)
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

t.test("the box's own refusals reach the admin in the error shape", async (t) => {
  const ctx = await testApp(t)
  const answers: Array<(res: ServerResponse) => void> = [
    (res) => res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3' }).end(JSON.stringify({ statusCode: 429, error: 'Too Many Requests', message: 'the box is busy' })),
    (res) => res.writeHead(422, { 'content-type': 'application/json' }).end(JSON.stringify({ statusCode: 422, error: 'Unprocessable Entity', message: 'the LUT /x.cube cannot be read' })),
    (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>a captive portal</html>'),
    (res) => res.writeHead(302, { location: 'http://elsewhere.example/' }).end()
  ]
  const box = await boxStandIn(t, (_req, res) => answers.shift()!(res))
  const { id, token, admin } = await approvedBox(ctx, box.url)
  box.token = token
  const get = () => ctx.app.inject({ method: 'GET', url: snapshotUrl(id), headers: { authorization: admin } })
  const busy = await get()
  t.equal(busy.statusCode, 429)
  t.equal(busy.headers['retry-after'], '3')
  t.match(errorOf(busy).message, /is busy: the box is busy/)
  const lut = await get()
  t.equal(lut.statusCode, 422)
  t.match(errorOf(lut).message, /the LUT \/x\.cube cannot be read/)
  const html = await get()
  t.equal(html.statusCode, 502)
  t.match(errorOf(html).message, /answered 200 instead of a picture/)
  const redirect = await get()
  t.equal(redirect.statusCode, 502, 'a redirect is not followed with the token')
  box.token = 'the old token'
  const refused = await get()
  t.equal(refused.statusCode, 502)
  t.match(errorOf(refused).message, /refused the server's credential/)
})

t.test('the route is in the OpenAPI document', async (t) => {
  const ctx = await testApp(t)
  const doc = (await ctx.app.inject({ method: 'GET', url: '/documentation/json' })).json()
  const route = doc.paths['/apis/v2/admin/replay-servers/{id}/cameras/{cameraId}/snapshot']
  t.ok(route?.get)
  t.same(route.get.security, [{ bearerAuth: [] }])
})
