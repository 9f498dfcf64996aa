import { randomUUID } from 'node:crypto'
import t from 'tap'
import { errorOf, testApp, userWithToken } from '../test-support/app.js'
import { storeRelease } from '../test-support/agent-releases.js'
import { windowOpening } from './updates.js'
import { ADMIN, adminOf, approve, area, camera, poll, putConfig, registeredBox } from './test-helpers.js'

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE'
const routes: Array<{ method: Method; path: (id: string) => string; body?: (areaId: string) => unknown }> = [
  { method: 'GET', path: (id) => `${ADMIN}/${id}` },
  { method: 'POST', path: (id) => `${ADMIN}/${id}/approve`, body: (areaId) => ({ areaId }) },
  { method: 'POST', path: (id) => `${ADMIN}/${id}/reject` },
  { method: 'POST', path: (id) => `${ADMIN}/${id}/revoke` },
  { method: 'POST', path: (id) => `${ADMIN}/${id}/rotate-token` },
  { method: 'DELETE', path: (id) => `${ADMIN}/${id}` },
  { method: 'PUT', path: (id) => `${ADMIN}/${id}/config`, body: () => ({ cameras: [] }) },
  { method: 'PUT', path: (id) => `${ADMIN}/${id}/target-version`, body: () => ({ version: '1.0.0' }) }
]

t.test('every admin route answers 401 without a token, 403 to a non-admin, 404 for an unknown id and 400 for a bad id', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const staff = await userWithToken(ctx, 'staff')
  const areaId = await area(ctx)
  const { id } = await registeredBox(ctx)
  const list = [{ method: 'GET' as Method, path: () => ADMIN }, ...routes]
  for (const route of list) {
    const name = `${route.method} ${route.path(':id')}`
    const payload = route.body?.(areaId) as object | undefined
    const anonymous = await ctx.app.inject({ method: route.method, url: route.path(id), payload })
    t.equal(anonymous.statusCode, 401, `${name} anonymous`)
    t.equal(anonymous.headers['www-authenticate'], 'Bearer')
    errorOf(anonymous)
    const forbidden = await ctx.app.inject({ method: route.method, url: route.path(id), payload, headers: { authorization: staff.authorization } })
    t.equal(forbidden.statusCode, 403, `${name} staff`)
    errorOf(forbidden)
    const badToken = await ctx.app.inject({ method: route.method, url: route.path(id), payload, headers: { authorization: 'Bearer not-a-token' } })
    t.equal(badToken.statusCode, 401, `${name} bad token`)
  }
  for (const route of routes) {
    const name = `${route.method} ${route.path(':id')}`
    const payload = route.body?.(areaId) as object | undefined
    const unknownId = randomUUID()
    const missing = await ctx.app.inject({ method: route.method, url: route.path(unknownId), payload, headers: { authorization: admin } })
    t.equal(missing.statusCode, 404, `${name} unknown id`)
    t.equal(errorOf(missing).message, `no replay server ${unknownId}`)
    const bad = await ctx.app.inject({ method: route.method, url: route.path('not-a-uuid'), payload, headers: { authorization: admin } })
    t.equal(bad.statusCode, 400, `${name} bad id`)
    t.match(errorOf(bad).message, /params\.id must match format "uuid"/)
  }
})

t.test('a device token is no admin credential', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const { id, serverId } = await registeredBox(ctx)
  await approve(ctx, admin, id, { areaId: await area(ctx) })
  const token = (await poll(ctx, serverId)).json().accessToken
  const res = await ctx.app.inject({ method: 'GET', url: ADMIN, headers: { authorization: `Bearer ${token}` } })
  t.equal(res.statusCode, 401)
})

t.test('the admin view shows the record and never the serverId or the token', async (t) => {
  const ctx = await testApp(t, { REPLAY_POLL_INTERVAL_SECONDS: '10' })
  const admin = await adminOf(ctx)
  const areaId = await area(ctx)
  const { id, serverId } = await registeredBox(ctx, { hostname: 'replay-01', version: '1.0.0', localIp: '10.0.0.5', serverUrl: 'http://10.0.0.5:8080' })
  await approve(ctx, admin, id, { areaId, displayName: 'Court box' })
  const token = (await poll(ctx, serverId)).json().accessToken
  const res = await ctx.app.inject({ method: 'GET', url: `${ADMIN}/${id}`, headers: { authorization: admin } })
  t.equal(res.statusCode, 200)
  t.same(res.json(), {
    id,
    deviceId: 'box-1',
    hostname: 'replay-01',
    displayName: 'Court box',
    status: 'APPROVED',
    lastSeenAt: '2026-03-01T10:00:00.000Z',
    online: true,
    version: '1.0.0',
    localIp: '10.0.0.5',
    serverUrl: 'http://10.0.0.5:8080',
    area: { id: areaId },
    config: null,
    targetVersion: null,
    architecture: null,
    updateWindow: null,
    updateState: null,
    updateVersion: null,
    updateReason: null,
    keyFingerprint: null,
    keyAdoptedDate: null,
    keyAdoptedFrom: null,
    health: null,
    claims: [],
    createdDate: '2026-03-01T10:00:00.000Z',
    updatedDate: '2026-03-01T10:00:00.000Z',
    _links: { self: { href: `${ADMIN}/${id}` } }
  })
  t.notOk(res.body.includes(serverId))
  t.notOk(res.body.includes(token))
  ctx.clock.advance(30_001)
  const later = await ctx.app.inject({ method: 'GET', url: `${ADMIN}/${id}`, headers: { authorization: admin } })
  t.equal(later.json().online, false, 'offline after three missed poll intervals')
})

t.test('the list filters by status, online and deviceId, and pages', async (t) => {
  const ctx = await testApp(t, { REPLAY_POLL_INTERVAL_SECONDS: '10' })
  const admin = await adminOf(ctx)
  const areaId = await area(ctx)
  const boxes = []
  for (const deviceId of ['a', 'b', 'c', 'd']) {
    boxes.push(await registeredBox(ctx, { deviceId }))
    ctx.clock.advance(1000)
  }
  await approve(ctx, admin, boxes[0]!.id, { areaId })
  await ctx.app.inject({ method: 'POST', url: `${ADMIN}/${boxes[1]!.id}/reject`, headers: { authorization: admin } })
  ctx.clock.advance(60_000)
  await poll(ctx, boxes[2]!.serverId)

  const get = async (query: string) => (await ctx.app.inject({ method: 'GET', url: `${ADMIN}?${query}`, headers: { authorization: admin } })).json()
  const ids = (body: { items: Array<{ deviceId: string }> }) => body.items.map((i) => i.deviceId)
  // Newest registered first.
  t.same(ids(await get('status=PENDING')), ['d', 'c'])
  t.same(ids(await get('status=APPROVED')), ['a'])
  t.same(ids(await get('online=true')), ['c'])
  t.same(ids(await get('online=false')), ['d', 'b', 'a'])
  t.same(ids(await get('deviceId=d')), ['d'])
  t.same(ids(await get('status=PENDING&online=false')), ['d'])

  const page = await get('ipp=3&status=PENDING&page=1')
  t.same(page._pagination, { page: 1, ipp: 3, count: 2, total: 2 })
  const first = await get('ipp=3')
  t.same(ids(first), ['d', 'c', 'b'])
  t.equal(first._total, 4)
  t.equal(first._links.next.href, `${ADMIN}?page=2&ipp=3`)
  t.same(ids(await get('ipp=3&page=2')), ['a'])

  for (const query of ['status=LOST', 'online=maybe', 'ipp=101', 'page=0', 'colour=red']) {
    const res = await ctx.app.inject({ method: 'GET', url: `${ADMIN}?${query}`, headers: { authorization: admin } })
    t.equal(res.statusCode, 400, query)
    t.match(errorOf(res).message, /querystring/)
  }
})

t.test('approval needs a known area; approving again moves the box and keeps its name', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const { id, serverId } = await registeredBox(ctx, { displayName: 'Box one' })
  const unknown = await approve(ctx, admin, id, { areaId: 'no-such-area' })
  t.equal(unknown.statusCode, 400)
  t.match(errorOf(unknown).message, /areaId no-such-area is not a known area/)
  for (const body of [{}, { areaId: '' }, { areaId: 'x', colour: 'red' }, { areaId: 'x', displayName: 7 }]) {
    const res = await approve(ctx, admin, id, body)
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.match(errorOf(res).message, /body/)
  }
  t.same((await poll(ctx, serverId)).json(), { status: 'PENDING' }, 'nothing changed')

  const [north, south] = [await area(ctx, 'North'), await area(ctx, 'South')]
  t.match((await approve(ctx, admin, id, { areaId: north })).json(), { status: 'APPROVED', area: { id: north }, displayName: 'Box one' })
  t.match((await approve(ctx, admin, id, { areaId: south, displayName: 'Moved' })).json(), { area: { id: south }, displayName: 'Moved' })
  t.same((await poll(ctx, serverId)).json().area, { id: south })
})

t.test('only an approved box can be revoked', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const { id } = await registeredBox(ctx)
  const res = await ctx.app.inject({ method: 'POST', url: `${ADMIN}/${id}/revoke`, headers: { authorization: admin } })
  t.equal(res.statusCode, 409)
  t.match(errorOf(res).message, /PENDING/)
})

t.test('deleting a record makes its serverId unknown, so the box registers afresh', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const { id, serverId } = await registeredBox(ctx)
  t.equal((await poll(ctx, serverId)).statusCode, 200, 'polled first, so its answer is kept')
  const res = await ctx.app.inject({ method: 'DELETE', url: `${ADMIN}/${id}`, headers: { authorization: admin } })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.equal((await poll(ctx, serverId)).statusCode, 404)
  t.equal((await ctx.app.inject({ method: 'GET', url: `${ADMIN}/${id}`, headers: { authorization: admin } })).statusCode, 404)
})

t.test('target version: semver or null', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const { id } = await registeredBox(ctx)
  const put = (payload: object) => ctx.app.inject({ method: 'PUT', url: `${ADMIN}/${id}/target-version`, headers: { authorization: admin }, payload })
  for (const body of [{ version: '2' }, { version: 'latest' }, {}, { version: '1.0.0', force: true }]) {
    const res = await put(body)
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.match(errorOf(res).message, /body/)
  }
  const notARelease = await put({ version: '2.1.0-beta.1' })
  t.equal(notARelease.statusCode, 400, 'a version the server holds no release of')
  t.match(errorOf(notARelease).message, /version 2\.1\.0-beta\.1 is not a release: add it with `club agent-releases add` first/)
  await storeRelease(ctx.app.db, ctx.config, '2.1.0-beta.1', 'arm64')
  t.equal((await put({ version: '2.1.0-beta.1' })).json().targetVersion, '2.1.0-beta.1', 'a box yet to report its architecture: a release of any')
  t.equal((await put({ version: null })).json().targetVersion, null)
})

t.test("target version: a release for the box's architecture; a new target offers again what rolled back", async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const areaId = await area(ctx)
  const { id, serverId } = await registeredBox(ctx, { version: '1.0.0' })
  await approve(ctx, admin, id, { areaId })
  t.equal((await poll(ctx, serverId, 'version=1.0.0&architecture=amd64')).statusCode, 200)
  const put = (payload: object) => ctx.app.inject({ method: 'PUT', url: `${ADMIN}/${id}/target-version`, headers: { authorization: admin }, payload })
  await storeRelease(ctx.app.db, ctx.config, '1.1.0', 'arm64')
  const otherArchitecture = await put({ version: '1.1.0' })
  t.equal(otherArchitecture.statusCode, 400)
  t.match(errorOf(otherArchitecture).message, /not a release for the box's architecture amd64/)
  const buildMetadata = await put({ version: '1.1.0+build.5' })
  t.equal(buildMetadata.statusCode, 400)
  t.match(errorOf(buildMetadata).message, /version 1\.1\.0\+build\.5 carries build metadata/)
  const release = await storeRelease(ctx.app.db, ctx.config, '1.1.0', 'amd64')
  const running = await storeRelease(ctx.app.db, ctx.config, '1.0.0', 'all')
  t.match((await put({ version: '1.1.0', updateWindow: '02:00-05:00' })).json(), { targetVersion: '1.1.0', updateWindow: '02:00-05:00' })

  const offered = (await poll(ctx, serverId, 'version=1.0.0&architecture=amd64')).json().pendingUpdate
  t.same(offered, {
    version: '1.1.0',
    release: { version: '1.1.0', architecture: 'amd64', path: '/apis/v2/replay-servers/device/agent-releases/1.1.0/amd64', size: release.size, sha256: release.sha256, signature: release.signature },
    rollback: { version: '1.0.0', architecture: 'all', path: '/apis/v2/replay-servers/device/agent-releases/1.0.0/all', size: running.size, sha256: running.sha256, signature: running.signature },
    // 10:00 UTC on 1 March: the window's next opening is the next night, in the club's timezone.
    window: windowOpening('02:00-05:00', ctx.config.CLUB_TIMEZONE, ctx.clock.now())
  })

  const rolledBack = 'version=1.0.0&architecture=amd64&updateState=ROLLED_BACK&updateVersion=1.1.0&updateReason=did%20not%20start'
  t.notOk('pendingUpdate' in (await poll(ctx, serverId, rolledBack)).json(), 'a version that rolled back is not offered again')
  const list = (query: string) => ctx.app.inject({ url: `${ADMIN}?${query}`, headers: { authorization: admin } })
  t.same((await list('updateState=ROLLED_BACK')).json().items.map((b: { id: string }) => b.id), [id])
  t.match((await list('updateState=ROLLED_BACK')).json().items[0], { updateState: 'ROLLED_BACK', updateVersion: '1.1.0', updateReason: 'did not start' })
  t.same((await list('updateState=INSTALLING')).json().items, [])
  t.equal((await list('updateState=LATER')).statusCode, 400)

  await storeRelease(ctx.app.db, ctx.config, '1.2.0', 'all')
  t.match((await put({ version: '1.2.0' })).json(), { targetVersion: '1.2.0', updateState: null }, 'a new target clears the rollback')
  t.match((await poll(ctx, serverId, 'version=1.0.0&architecture=amd64')).json().pendingUpdate, {
    version: '1.2.0',
    release: { path: '/apis/v2/replay-servers/device/agent-releases/1.2.0/all' }
  })
})

t.test('configuration: every field is validated, a bad one is a 400 naming it and changes nothing', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const { id } = await registeredBox(ctx)
  const good = {
    apiBaseUrl: 'https://api.example.org',
    cloudStorageBucket: 'gs://club-clips',
    logoPath: '/etc/club/logo.png',
    logoPlacement: 'bottom-right',
    cloudCredentialsPath: '/etc/club/credentials.json',
    postrollPath: '/etc/club/postroll.mp4',
    cleanupEnabled: true,
    cameras: [
      camera('cam-1', {
        feed2: 'srt://10.0.0.21:9000',
        videoCodec: 'hevc',
        audioCodec: 'opus',
        distortion1: -0.25,
        distortion2: 1,
        rotation: -360,
        scale: 0.1,
        vignette: Math.PI / 2,
        lutPath: '/etc/club/court.cube'
      }),
      camera('cam-2', { feed: 'file:///var/lib/club/test.mp4', videoCodec: 'copy', audioCodec: 'none' }),
      camera('cam-3', { feed: 'https://10.0.0.22/live.m3u8' }),
      camera('cam-4', { feed: 'rtsps://10.0.0.23/live' })
    ]
  }
  const saved = await putConfig(ctx, admin, id, good)
  t.equal(saved.statusCode, 200)
  t.same(saved.json().config, good)

  const withCamera = (extra: Record<string, unknown>) => ({ cameras: [camera('cam-1', extra)] })
  const cases: Array<[unknown, RegExp]> = [
    [{ ...good, apiBaseUrl: 'ftp://api.example.org' }, /body\.apiBaseUrl/],
    [{ ...good, cloudStorageBucket: '' }, /body\.cloudStorageBucket/],
    [{ ...good, logoPath: '' }, /body\.logoPath/],
    [{ ...good, logoPlacement: 'middle' }, /body\.logoPlacement must be one of top-left, top-right, bottom-left, bottom-right, center/],
    [{ ...good, cloudCredentialsPath: 5 }, /body\.cloudCredentialsPath/],
    [{ ...good, postrollPath: '' }, /body\.postrollPath/],
    [{ ...good, cleanupEnabled: 'yes' }, /body\.cleanupEnabled/],
    [{ ...good, cameras: 'cam-1' }, /body\.cameras/],
    [{ ...good, retention: 7 }, /body\.retention is not allowed/],
    [{ cameras: [{ name: 'no id', feed: 'rtsp://x/y' }] }, /body\.cameras\.0\.id is required/],
    [{ cameras: [{ id: 'cam-1' }] }, /body\.cameras\.0\.feed is required/],
    [withCamera({ id: 'cam 1' }), /body\.cameras\.0\.id/],
    [withCamera({ name: 'n'.repeat(201) }), /body\.cameras\.0\.name/],
    [withCamera({ feed: 'udp://10.0.0.20:1234' }), /body\.cameras\.0\.feed/],
    [withCamera({ feed2: 'rtmp://10.0.0.20/live' }), /body\.cameras\.0\.feed2/],
    [withCamera({ isEnabled: 'true' }), /body\.cameras\.0\.isEnabled/],
    [withCamera({ videoCodec: 'vp9' }), /body\.cameras\.0\.videoCodec must be one of h264, hevc, copy/],
    [withCamera({ audioCodec: 'mp3' }), /body\.cameras\.0\.audioCodec must be one of aac, opus, none/],
    [withCamera({ distortion1: -1.01 }), /body\.cameras\.0\.distortion1/],
    [withCamera({ distortion2: 1.5 }), /body\.cameras\.0\.distortion2/],
    [withCamera({ rotation: 361 }), /body\.cameras\.0\.rotation/],
    [withCamera({ scale: 0.05 }), /body\.cameras\.0\.scale/],
    [withCamera({ scale: 4.5 }), /body\.cameras\.0\.scale/],
    [withCamera({ vignette: -0.1 }), /body\.cameras\.0\.vignette/],
    [withCamera({ vignette: 1.6 }), /body\.cameras\.0\.vignette/],
    [withCamera({ lutPath: '' }), /body\.cameras\.0\.lutPath/],
    [withCamera({ zoom: 2 }), /body\.cameras\.0\.zoom is not allowed/],
    [{ cameras: [camera('cam-1'), camera('cam-2'), camera('cam-1')] }, /cameras\[2\]\.id "cam-1" is already the id of cameras\[0\]/]
  ]
  for (const [body, message] of cases) {
    const res = await putConfig(ctx, admin, id, body)
    t.equal(res.statusCode, 400, String(message))
    t.match(errorOf(res).message, message)
  }
  const after = await ctx.app.inject({ method: 'GET', url: `${ADMIN}/${id}`, headers: { authorization: admin } })
  t.same(after.json().config, good, 'the stored configuration is unchanged')

  const minimal = await putConfig(ctx, admin, id, { cameras: [{ id: 'cam-9', feed: 'rtsp://10.0.0.9/s' }] })
  t.same(minimal.json().config, { cleanupEnabled: false, cameras: [{ id: 'cam-9', feed: 'rtsp://10.0.0.9/s', isEnabled: true }] }, 'defaults filled in')
})

t.test('the routes appear in the OpenAPI document', async (t) => {
  const ctx = await testApp(t)
  const doc = (await ctx.app.inject({ method: 'GET', url: '/documentation/json' })).json()
  const paths = Object.keys(doc.paths)
  for (const path of [
    '/apis/v2/replay-servers/device',
    '/apis/v2/replay-servers/device/{serverId}/status',
    '/apis/v2/admin/replay-servers',
    '/apis/v2/admin/replay-servers/{id}',
    '/apis/v2/admin/replay-servers/{id}/approve',
    '/apis/v2/admin/replay-servers/{id}/reject',
    '/apis/v2/admin/replay-servers/{id}/revoke',
    '/apis/v2/admin/replay-servers/{id}/rotate-token',
    '/apis/v2/admin/replay-servers/{id}/config',
    '/apis/v2/admin/replay-servers/{id}/target-version'
  ]) {
    t.ok(paths.includes(path), path)
  }
  t.ok(doc.paths['/apis/v2/admin/replay-servers/{id}'].delete)
  t.same(doc.paths['/apis/v2/admin/replay-servers'].get.security, [{ bearerAuth: [] }])
})
