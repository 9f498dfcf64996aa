import t from 'tap'
import { UnauthorizedError } from '../errors.js'
import { errorOf, testApp } from '../test-support/app.js'
import { authenticateDeviceToken } from './service.js'
import { storeRelease } from '../test-support/agent-releases.js'
import { ADMIN, adminOf, anotherProcess, approve, area, camera, poll, putConfig, register, registeredBox } from './test-helpers.js'

t.test('registration answers a serverId, PENDING and the configured poll interval', async (t) => {
  const ctx = await testApp(t, { REPLAY_POLL_INTERVAL_SECONDS: '15' })
  const res = await register(ctx, {
    deviceId: 'box-1',
    hostname: 'replay-01',
    version: '1.4.0',
    serverUrl: 'http://10.0.0.5:8080',
    localIp: '10.0.0.5'
  })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.same(Object.keys(body).sort(), ['pollInterval', 'serverId', 'status'])
  t.equal(body.status, 'PENDING')
  t.equal(body.pollInterval, 15)
  // At least 128 random bits: 256 here, base64url.
  t.match(body.serverId, /^[A-Za-z0-9_-]{43}$/)
  const stored = await ctx.app.db.selectFrom('replay_servers').selectAll().executeTakeFirstOrThrow()
  t.not(stored.server_id_hash, body.serverId, 'only a hash of the serverId is kept')
  t.notOk(JSON.stringify(stored).includes(body.serverId))
})

t.test('registration refuses each bad field with a 400 naming it', async (t) => {
  const ctx = await testApp(t)
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['missing deviceId', { deviceId: undefined }, /deviceId is required/],
    ['empty deviceId', { deviceId: '' }, /body\.deviceId/],
    ['deviceId over 200 characters', { deviceId: 'x'.repeat(201) }, /body\.deviceId/],
    ['deviceId with a control character', { deviceId: 'box\n1' }, /body\.deviceId/],
    ['deviceId not a string', { deviceId: 42 }, /body\.deviceId/],
    ['serverUrl not http(s)', { serverUrl: 'ftp://10.0.0.5/' }, /body\.serverUrl/],
    ['serverUrl not a URL', { serverUrl: 'box.local' }, /body\.serverUrl/],
    ['localIp not an IP address', { localIp: '10.0.0.256' }, /body\.localIp/],
    ['version not semver', { version: '1.4' }, /body\.version/],
    ['hostname too long', { hostname: 'h'.repeat(256) }, /body\.hostname/],
    ['an unknown field', { colour: 'red' }, /body\.colour is not allowed/]
  ]
  for (const [name, body, message] of cases) {
    const res = await register(ctx, body)
    t.equal(res.statusCode, 400, name)
    t.match(errorOf(res).message, message, name)
  }
  t.equal((await ctx.app.db.selectFrom('replay_servers').select('id').execute()).length, 0, 'nothing was stored')
  t.equal((await register(ctx, { localIp: '::1', version: '2.0.0-rc.1+build.5' })).statusCode, 200, 'IPv6 and full semver pass')
})

t.test('an unknown serverId answers 404 in the error shape', async (t) => {
  const ctx = await testApp(t)
  const res = await poll(ctx, 'no-such-server')
  t.equal(res.statusCode, 404)
  t.match(errorOf(res).message, /register again/)
})

t.test('a poll records lastSeenAt and the reported fields, and validates them', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const { serverId, id } = await registeredBox(ctx, { version: '1.0.0' })
  ctx.clock.advance(60_000)
  const res = await poll(ctx, serverId, 'version=1.1.0&serverUrl=https%3A%2F%2Fbox.example%3A8443&localIp=192.168.1.9')
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: 'PENDING' })
  const seen = (await ctx.app.inject({ method: 'GET', url: `${ADMIN}/${id}`, headers: { authorization: admin } })).json()
  t.match(seen, {
    lastSeenAt: '2026-03-01T10:01:00.000Z',
    version: '1.1.0',
    serverUrl: 'https://box.example:8443',
    localIp: '192.168.1.9',
    online: true
  })

  for (const [query, field] of [['version=v1', 'version'], ['serverUrl=nope', 'serverUrl'], ['localIp=1.2.3', 'localIp'], ['extra=1', 'extra']]) {
    const bad = await poll(ctx, serverId, query!)
    t.equal(bad.statusCode, 400, query)
    t.match(errorOf(bad).message, new RegExp(`querystring\\.${field}`), query)
  }
})

t.test('PENDING → APPROVED → config → target version → REVOKED, seen through status polls', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const areaId = await area(ctx)
  const { serverId, id } = await registeredBox(ctx, { version: '1.0.0' })
  t.same((await poll(ctx, serverId)).json(), { status: 'PENDING' })

  t.equal((await approve(ctx, admin, id, { areaId, displayName: 'Centre court box' })).statusCode, 200)
  const approved = (await poll(ctx, serverId)).json()
  t.equal(approved.status, 'APPROVED')
  t.same(approved.area, { id: areaId })
  t.same(approved.config, { cleanupEnabled: false, cameras: [] }, 'an unconfigured box records nothing')
  t.match(approved.accessToken, /^[0-9a-f]{64}$/)
  t.notOk('pendingUpdate' in approved)
  t.same(await authenticateDeviceToken(ctx.app.db, approved.accessToken), { replayServerId: id, deviceId: 'box-1', areaId })
  t.equal((await poll(ctx, serverId)).json().accessToken, approved.accessToken, 'the same token on every poll')

  const config = { cloudStorageBucket: 'file:///var/lib/club/clips', logoPlacement: 'top-right', cameras: [camera('cam-1'), camera('cam-2', { isEnabled: false })] }
  t.equal((await putConfig(ctx, admin, id, config)).statusCode, 200)
  const configured = (await poll(ctx, serverId)).json()
  t.same(configured.config, {
    cloudStorageBucket: 'file:///var/lib/club/clips',
    logoPlacement: 'top-right',
    cleanupEnabled: false,
    cameras: [camera('cam-1'), camera('cam-2', { isEnabled: false })]
  })

  const release = await storeRelease(ctx.app.db, ctx.config, '1.2.0')
  const target = await ctx.app.inject({ method: 'PUT', url: `${ADMIN}/${id}/target-version`, headers: { authorization: admin }, payload: { version: '1.2.0' } })
  t.equal(target.statusCode, 200)
  t.equal(target.json().targetVersion, '1.2.0')
  t.same((await poll(ctx, serverId, 'version=1.0.0')).json().pendingUpdate, { version: '1.2.0' }, 'a box that does not say its architecture: the version only')
  t.same((await poll(ctx, serverId, 'version=1.0.0&architecture=amd64')).json().pendingUpdate, {
    version: '1.2.0',
    release: { version: '1.2.0', architecture: 'all', path: '/apis/v2/replay-servers/device/agent-releases/1.2.0/all', size: release.size, sha256: release.sha256, signature: release.signature }
  })
  t.notOk('pendingUpdate' in (await poll(ctx, serverId, 'version=1.2.0')).json(), 'no update once the box runs the target')
  t.notOk('pendingUpdate' in (await poll(ctx, serverId)).json(), 'the reported version is remembered')

  const revoked = await ctx.app.inject({ method: 'POST', url: `${ADMIN}/${id}/revoke`, headers: { authorization: admin } })
  t.equal(revoked.statusCode, 200)
  t.equal(revoked.json().status, 'REVOKED')
  t.same((await poll(ctx, serverId)).json(), { status: 'REVOKED' }, 'no token, area or config once revoked')
  await t.rejects(authenticateDeviceToken(ctx.app.db, approved.accessToken), UnauthorizedError, 'the token fails at once')
})

t.test('the status answer carries an ETag; a matching If-None-Match answers 304 with no body', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const { serverId, id } = await registeredBox(ctx)
  const first = await poll(ctx, serverId)
  const etag = first.headers.etag as string
  t.match(etag, /^"[0-9a-f]{64}"$/)
  t.equal(first.headers['cache-control'], 'no-store')

  ctx.clock.advance(30_000)
  const again = await poll(ctx, serverId, '', { 'if-none-match': etag })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')
  t.equal(again.headers['content-length'], undefined, 'no Content-Length announcing a body that is not sent')
  t.equal(again.headers.etag, etag)
  t.equal((await poll(ctx, serverId, '', { 'if-none-match': `"other", W/${etag}` })).statusCode, 304, 'lists and weak tags match')
  t.equal((await poll(ctx, serverId, '', { 'if-none-match': '"other"' })).statusCode, 200)
  const seen = (await ctx.app.inject({ method: 'GET', url: `${ADMIN}/${id}`, headers: { authorization: admin } })).json()
  t.equal(seen.lastSeenAt, '2026-03-01T10:00:30.000Z', 'a 304 poll still counts as a sighting')

  await approve(ctx, admin, id, { areaId: await area(ctx) })
  const changed = await poll(ctx, serverId, '', { 'if-none-match': etag })
  t.equal(changed.statusCode, 200, 'a changed answer has a new ETag')
  t.not(changed.headers.etag, etag)
  t.equal(changed.json().status, 'APPROVED')
})

// Registering a known deviceId again: claims.test.ts.

t.test('rotating the token invalidates the old one at once and the next poll carries the new one', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const { id, serverId } = await registeredBox(ctx)
  await approve(ctx, admin, id, { areaId: await area(ctx) })
  const before = await poll(ctx, serverId)
  const oldToken = before.json().accessToken

  const rotated = await ctx.app.inject({ method: 'POST', url: `${ADMIN}/${id}/rotate-token`, headers: { authorization: admin } })
  t.equal(rotated.statusCode, 200)
  t.notOk(JSON.stringify(rotated.json()).includes(oldToken), 'the admin answer shows no token')
  await t.rejects(authenticateDeviceToken(ctx.app.db, oldToken), UnauthorizedError)

  const after = await poll(ctx, serverId, '', { 'if-none-match': before.headers.etag as string })
  t.equal(after.statusCode, 200, 'the new token changes the ETag')
  const newToken = after.json().accessToken
  t.not(newToken, oldToken)
  t.equal((await authenticateDeviceToken(ctx.app.db, newToken)).replayServerId, id)
})

t.test('the device token key survives a restart when none is configured', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const { id, serverId } = await registeredBox(ctx)
  await approve(ctx, admin, id, { areaId: await area(ctx) })
  const token = (await poll(ctx, serverId)).json().accessToken
  const { buildApp } = await import('../app.js')
  const second = await buildApp({ config: { ...ctx.config, LOG_LEVEL: 'silent' }, clock: ctx.clock })
  t.teardown(() => second.close())
  const res = await second.inject({ method: 'GET', url: `/apis/v2/replay-servers/device/${serverId}/status` })
  t.equal(res.json().accessToken, token)
})

t.test('the serverId and the access token never reach the log', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const { id, serverId } = await registeredBox(ctx)
  await approve(ctx, admin, id, { areaId: await area(ctx) })
  const token = (await poll(ctx, serverId, 'version=1.0.0')).json().accessToken
  await poll(ctx, 'not-a-known-server-id')
  const logs = ctx.logs()
  t.match(logs, /replay-servers\/device\/\[redacted\]\/status/)
  t.notOk(logs.includes(serverId))
  t.notOk(logs.includes(token))
  t.notOk(logs.includes('not-a-known-server-id'))
})

t.test('registration is rate limited per client IP', async (t) => {
  const ctx = await testApp(t, { REPLAY_REGISTRATION_RATE_LIMIT_MAX: '2' })
  t.equal((await register(ctx, { deviceId: 'a' })).statusCode, 200)
  t.equal((await register(ctx, { deviceId: 'b' })).statusCode, 200)
  const limited = await register(ctx, { deviceId: 'c' })
  t.equal(limited.statusCode, 429)
  t.match(errorOf(limited).message, /at most 2 per 1 minute/)
  t.ok(Number(limited.headers['retry-after']) > 0)
  const other = await ctx.app.inject({ method: 'POST', url: '/apis/v2/replay-servers/device', payload: { deviceId: 'd' }, remoteAddress: '10.9.9.9' })
  t.equal(other.statusCode, 200, 'another address has its own count')
})

t.test('app.auth.device() admits an approved box by its access token and nothing else', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const areaId = await area(ctx)
  const { id, serverId } = await registeredBox(ctx)
  // A route of the kind a box calls, on an instance with the same plugins as the API.
  const { default: Fastify } = await import('fastify')
  const { default: services } = await import('../plugins/services.js')
  const { default: errors } = await import('../plugins/errors.js')
  const { default: auth } = await import('../plugins/auth.js')
  const app = Fastify()
  await app.register(services, { db: ctx.app.db, config: ctx.config, clock: ctx.clock, paymentProvider: ctx.app.paymentProvider, ownsDb: false })
  await app.register(errors)
  await app.register(auth)
  app.get('/device-only', { preHandler: app.auth.device() }, async (request) => request.principal)
  t.teardown(() => app.close())
  const call = (authorization?: string) =>
    app.inject({ method: 'GET', url: '/device-only', headers: authorization ? { authorization } : {} })

  const none = await call()
  t.equal(none.statusCode, 401)
  t.equal(none.headers['www-authenticate'], 'Bearer')
  const pendingToken = await call(`Bearer ${'0'.repeat(64)}`)
  t.equal(pendingToken.statusCode, 401)
  t.equal(pendingToken.headers['www-authenticate'], 'Bearer error="invalid_token"')
  errorOf(pendingToken)
  t.equal((await call(admin)).statusCode, 401, 'a user token is no device token')

  await approve(ctx, admin, id, { areaId })
  const token = (await poll(ctx, serverId)).json().accessToken
  const ok = await call(`Bearer ${token}`)
  t.equal(ok.statusCode, 200)
  t.same(ok.json(), { kind: 'device', via: 'device-token', replayServerId: id, deviceId: 'box-1', areaId })
  await ctx.app.inject({ method: 'POST', url: `${ADMIN}/${id}/revoke`, headers: { authorization: admin } })
  t.equal((await call(`Bearer ${token}`)).statusCode, 401, 'revocation takes effect at once')
})

t.test('polls in a tight loop are written once per flush, but a changed report at once', async (t) => {
  const ctx = await testApp(t, { REPLAY_SIGHTING_FLUSH_MS: '60000' })
  const admin = await adminOf(ctx)
  const other = await anotherProcess(t, ctx)
  const { id, serverId } = await registeredBox(ctx, { version: '1.0.0' })
  const seen = async () => (await ctx.app.inject({ method: 'GET', url: `${ADMIN}/${id}`, headers: { authorization: admin } })).json()
  for (let i = 0; i < 5; i++) {
    ctx.clock.advance(100)
    await poll(ctx, serverId, 'version=1.0.0')
  }
  t.equal((await other.stored(id)).last_seen_at, '2026-03-01T10:00:00.000Z', 'not written per poll')
  t.equal((await seen()).lastSeenAt, '2026-03-01T10:00:00.500Z', 'but the admin sees the latest sighting')
  ctx.clock.advance(100)
  await poll(ctx, serverId, 'version=1.0.1')
  t.match(await other.stored(id), { last_seen_at: '2026-03-01T10:00:00.600Z', version: '1.0.1' }, 'a new version is written at once')
})
