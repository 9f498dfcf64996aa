// Status answers kept in memory must never outlive a change, wherever it was made; sightings held
// in memory must reach the database.
import { sql } from 'kysely'
import t from 'tap'
import { dialectOf } from '../db/database.js'
import { UnauthorizedError } from '../errors.js'
import { errorOf, testApp } from '../test-support/app.js'
import { authenticateDeviceToken, registerReplayServer } from './service.js'
import { approveReplayServerClaim, approveReplayServer, deleteReplayServer, getReplayServer, rejectReplayServer, revokeReplayServer, rotateReplayServerToken, setReplayServerConfig, setReplayServerTargetVersion } from './decisions.js'
import { storeRelease } from '../test-support/agent-releases.js'
import { ADMIN, adminOf, anotherProcess, approve, area, camera, poll, registeredBox } from './test-helpers.js'

/** Never flushed by the timer within a test: only flush() and close() write sightings. */
const NO_TIMED_FLUSH = { REPLAY_SIGHTING_FLUSH_MS: '60000' }

t.test('a change another process makes to the database is seen by the very next poll', async (t) => {
  const ctx = await testApp(t)
  const other = await anotherProcess(t, ctx)
  const [areaA, areaB] = [await area(ctx, 'Court A'), await area(ctx, 'Court B')]
  const { id, serverId } = await registeredBox(ctx, { version: '1.0.0' })

  // Each step: poll (so the answer is kept), change through the other connection, poll again
  // with the ETag the box holds. A kept answer would come back as a 304.
  let etag = ''
  const next = async (what: string) => {
    const res = await poll(ctx, serverId, '', { 'if-none-match': etag })
    t.equal(res.statusCode, 200, `${what}: a new answer`)
    t.not(res.headers.etag, etag, `${what}: a new ETag`)
    etag = res.headers.etag as string
    t.equal((await poll(ctx, serverId, '', { 'if-none-match': etag })).statusCode, 304, `${what}: then kept`)
    return res.json()
  }
  t.same(await next('registered'), { status: 'PENDING' })

  await approveReplayServer(other.db, id, { areaId: areaA }, other.deps)
  const approved = await next('approved')
  t.match(approved, { status: 'APPROVED', area: { id: areaA }, config: { cameras: [] } })
  t.equal((await authenticateDeviceToken(ctx.app.db, approved.accessToken)).replayServerId, id)

  await setReplayServerConfig(other.db, id, { cameras: [camera()] }, other.deps)
  t.same((await next('configured')).config, { cleanupEnabled: false, cameras: [camera()] })

  await approveReplayServer(other.db, id, { areaId: areaB }, other.deps)
  t.same((await next('moved')).area, { id: areaB })

  await storeRelease(other.db, ctx.config, '1.1.0')
  await setReplayServerTargetVersion(other.db, id, { version: '1.1.0' }, other.deps)
  // The box has not said its architecture: the version alone (device.test.ts has the download).
  t.same((await next('target version')).pendingUpdate, { version: '1.1.0' })

  // Another server process on the same file recorded the box's upgrade.
  await other.db.updateTable('replay_servers').set({ version: '1.1.0' }).where('id', '=', id).execute()
  t.notOk('pendingUpdate' in (await next('reported elsewhere')), 'the version recorded elsewhere is the one running')

  await rotateReplayServerToken(other.db, id, other.deps)
  const rotated = await next('token rotated')
  t.not(rotated.accessToken, approved.accessToken)
  t.equal((await authenticateDeviceToken(ctx.app.db, rotated.accessToken)).replayServerId, id)

  await revokeReplayServer(other.db, id, other.deps)
  t.same(await next('revoked'), { status: 'REVOKED' })

  await rejectReplayServer(other.db, id, other.deps)
  t.same(await next('rejected'), { status: 'REJECTED' })

  const again = await registerReplayServer(other.db, { deviceId: 'box-1' }, { sourceIp: '203.0.113.9', audience: 'http://localhost' }, other.deps)
  t.same((await poll(ctx, again.serverId)).json(), { status: 'PENDING' }, 're-registered: a pending claim')
  t.equal((await poll(ctx, serverId, '', { 'if-none-match': etag })).statusCode, 304, "a claim changes nothing of the box's answer")
  const claim = await other.db.selectFrom('replay_server_claims').select('id').executeTakeFirstOrThrow()
  await approveReplayServerClaim(other.db, id, claim.id, other.deps)
  const superseded = await poll(ctx, serverId)
  t.equal(superseded.statusCode, 404, 'claim accepted: the old serverId is unknown')
  t.match(errorOf(superseded).message, /register again/)
  t.same((await poll(ctx, again.serverId)).json(), { status: 'REJECTED' })

  await deleteReplayServer(other.db, id)
  t.equal((await poll(ctx, again.serverId)).statusCode, 404, 'deleted: unknown')
})

t.test('polls arriving together all see a change committed before they arrived', async (t) => {
  const ctx = await testApp(t)
  const other = await anotherProcess(t, ctx)
  const areaId = await area(ctx)
  const boxes = [await registeredBox(ctx), await registeredBox(ctx, { deviceId: 'box-2' }), await registeredBox(ctx, { deviceId: 'box-3' })]
  const pollAll = () => Promise.all(boxes.map(async (box) => (await poll(ctx, box.serverId)).json().status))
  t.same(await pollAll(), ['PENDING', 'PENDING', 'PENDING'])
  await approveReplayServer(other.db, boxes[1]!.id, { areaId }, other.deps)
  t.same(await pollAll(), ['PENDING', 'APPROVED', 'PENDING'])
  await Promise.all(boxes.map((box) => approveReplayServer(other.db, box.id, { areaId }, other.deps)))
  t.same(await pollAll(), ['APPROVED', 'APPROVED', 'APPROVED'])
})

t.test('a report is compared with what the database holds, even after another process changed it', async (t) => {
  const ctx = await testApp(t)
  const other = await anotherProcess(t, ctx)
  const { id, serverId } = await registeredBox(ctx)
  const report = 'serverUrl=http%3A%2F%2F10.0.0.5%3A8080&localIp=10.0.0.5'
  await poll(ctx, serverId, report)
  await poll(ctx, serverId, report)
  await other.db.updateTable('replay_servers').set({ server_url: 'http://10.0.0.9:8080', local_ip: '10.0.0.9' }).where('id', '=', id).execute()
  await poll(ctx, serverId, report)
  t.match(await other.stored(id), { server_url: 'http://10.0.0.5:8080', local_ip: '10.0.0.5' }, 'what the box reports wins, at once')
})

t.test('a change through the API is seen at once, a deletion too', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const { id, serverId } = await registeredBox(ctx)
  await approve(ctx, admin, id, { areaId: await area(ctx) })
  const before = await poll(ctx, serverId)
  t.equal(before.json().status, 'APPROVED')
  const put = await ctx.app.inject({ method: 'PUT', url: `${ADMIN}/${id}/config`, headers: { authorization: admin }, payload: { cameras: [camera()] } })
  t.equal(put.statusCode, 200)
  const after = await poll(ctx, serverId, '', { 'if-none-match': before.headers.etag as string })
  t.equal(after.statusCode, 200)
  t.same(after.json().config.cameras, [camera()])
  t.equal((await ctx.app.inject({ method: 'DELETE', url: `${ADMIN}/${id}`, headers: { authorization: admin } })).statusCode, 204)
  t.equal((await poll(ctx, serverId)).statusCode, 404)
})

t.test('sightings reach the database with the next flush, and when the server closes', async (t) => {
  const ctx = await testApp(t, NO_TIMED_FLUSH)
  const other = await anotherProcess(t, ctx)
  const { id, serverId } = await registeredBox(ctx)
  const [a, b] = [await registeredBox(ctx, { deviceId: 'box-2' }), await registeredBox(ctx, { deviceId: 'box-3' })]

  ctx.clock.advance(60_000)
  for (const box of [serverId, a.serverId, b.serverId]) t.equal((await poll(ctx, box)).statusCode, 200)
  t.equal((await other.stored(id)).last_seen_at, '2026-03-01T10:00:00.000Z', 'held in memory until the flush')
  await ctx.app.replayServerPolls.flush()
  for (const box of [id, a.id, b.id]) t.equal((await other.stored(box)).last_seen_at, '2026-03-01T10:01:00.000Z', 'written by the flush')
  t.match(await getReplayServer(other.db, id, other.deps), { online: true, lastSeenAt: '2026-03-01T10:01:00.000Z' }, 'as `club devices show` sees it')

  ctx.clock.advance(60_000)
  await poll(ctx, serverId)
  await ctx.app.close()
  t.equal((await other.stored(id)).last_seen_at, '2026-03-01T10:02:00.000Z', 'written before the database closed')
})

t.test('a flush that fails keeps its sightings for the next one', async (t) => {
  const ctx = await testApp(t, NO_TIMED_FLUSH)
  const other = await anotherProcess(t, ctx)
  const { id, serverId } = await registeredBox(ctx)
  ctx.clock.advance(60_000)
  await poll(ctx, serverId)
  // Another process refuses the write, as a long-held lock would (after busy_timeout).
  if (dialectOf(other.db) === 'postgres') {
    await sql`create function refuse_sightings() returns trigger language plpgsql as $$ begin raise exception 'refused'; end $$`.execute(other.db)
    await sql`create trigger refuse_sightings before update of last_seen_at on replay_servers for each row execute function refuse_sightings()`.execute(other.db)
  } else {
    await sql`create trigger refuse_sightings before update of last_seen_at on replay_servers begin select raise(abort, 'refused'); end`.execute(other.db)
  }
  await t.rejects(ctx.app.replayServerPolls.flush(), /refused/)
  await sql`drop trigger refuse_sightings${dialectOf(other.db) === 'postgres' ? sql` on replay_servers` : sql``}`.execute(other.db)
  await ctx.app.replayServerPolls.flush()
  t.equal((await other.stored(id)).last_seen_at, '2026-03-01T10:01:00.000Z')
})

t.test('a batched sighting never undoes a newer write', async (t) => {
  const ctx = await testApp(t, NO_TIMED_FLUSH)
  const other = await anotherProcess(t, ctx)
  const admin = await adminOf(ctx)
  const { id, serverId } = await registeredBox(ctx, { version: '1.0.0' })
  await approve(ctx, admin, id, { areaId: await area(ctx) })

  ctx.clock.advance(2000)
  await poll(ctx, serverId, 'version=1.0.0')
  ctx.clock.advance(1000)
  await poll(ctx, serverId, 'version=1.0.1')
  t.match(await other.stored(id), { version: '1.0.1', last_seen_at: '2026-03-01T10:00:03.000Z' }, 'a changed report is written at once')
  await ctx.app.replayServerPolls.flush()
  t.equal((await other.stored(id)).last_seen_at, '2026-03-01T10:00:03.000Z', 'the earlier sighting does not move lastSeenAt back')

  ctx.clock.advance(1000)
  const token = (await poll(ctx, serverId)).json().accessToken
  await rotateReplayServerToken(other.db, id, other.deps)
  await ctx.app.replayServerPolls.flush()
  const stored = await other.stored(id)
  t.equal(stored.last_seen_at, '2026-03-01T10:00:03.000Z', 'a sighting under the replaced token is dropped')
  await t.rejects(authenticateDeviceToken(ctx.app.db, token), UnauthorizedError, 'and the replaced token stays replaced')
  const fresh = (await poll(ctx, serverId)).json().accessToken
  t.equal((await authenticateDeviceToken(ctx.app.db, fresh)).replayServerId, id)
})

t.test('an unknown serverId is a 404 and is not kept', async (t) => {
  const ctx = await testApp(t)
  const { serverId } = await registeredBox(ctx)
  for (let i = 0; i < 20; i++) {
    const res = await poll(ctx, `unknown-${i}`)
    t.equal(res.statusCode, 404)
    errorOf(res)
  }
  t.equal(ctx.app.replayServerPolls.size, 0)
  await poll(ctx, serverId)
  t.equal(ctx.app.replayServerPolls.size, 1, 'a known box is kept')
})

t.test('the kept answers are bounded, and boxes beyond the bound are still answered right', async (t) => {
  for (const entries of ['2', '0']) {
    const ctx = await testApp(t, { REPLAY_STATUS_CACHE_ENTRIES: entries })
    const other = await anotherProcess(t, ctx)
    const areaId = await area(ctx)
    const boxes = [await registeredBox(ctx), await registeredBox(ctx, { deviceId: 'box-2' }), await registeredBox(ctx, { deviceId: 'box-3' })]
    for (let round = 0; round < 2; round++) {
      for (const box of boxes) t.same((await poll(ctx, box.serverId)).json(), { status: 'PENDING' }, `${entries} kept`)
    }
    t.equal(ctx.app.replayServerPolls.size, Number(entries))
    for (const box of boxes) await approveReplayServer(other.db, box.id, { areaId }, other.deps)
    for (const box of boxes) t.equal((await poll(ctx, box.serverId)).json().status, 'APPROVED', `${entries} kept`)
  }
})

t.test('after DEVICE_TOKEN_SECRET changes, polls hand out the new key\'s token and it works', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const { id, serverId } = await registeredBox(ctx)
  await approve(ctx, admin, id, { areaId: await area(ctx) })
  const oldToken = (await poll(ctx, serverId)).json().accessToken
  await ctx.app.close()

  const { buildApp } = await import('../app.js')
  const restarted = await buildApp({ config: { ...ctx.config, LOG_LEVEL: 'silent', DEVICE_TOKEN_SECRET: 'k'.repeat(40) }, clock: ctx.clock })
  t.teardown(() => restarted.close())
  const statusOf = async () => (await restarted.inject({ method: 'GET', url: `/apis/v2/replay-servers/device/${serverId}/status` })).json()
  const newToken = (await statusOf()).accessToken
  t.not(newToken, oldToken)
  t.equal((await authenticateDeviceToken(restarted.db, newToken)).replayServerId, id)
  await t.rejects(authenticateDeviceToken(restarted.db, oldToken), UnauthorizedError)
  t.equal((await statusOf()).accessToken, newToken, 'the same token on the next poll')
  t.equal((await authenticateDeviceToken(restarted.db, newToken)).replayServerId, id, 'and it still works')
})

t.test('a poll answered "not modified" before validation is still seen, validated and recorded like any other', async (t) => {
  const ctx = await testApp(t, NO_TIMED_FLUSH)
  const other = await anotherProcess(t, ctx)
  const { id, serverId } = await registeredBox(ctx, { version: '1.0.0', localIp: '10.0.0.7' })
  const first = await poll(ctx, serverId, 'version=1.0.0&localIp=10.0.0.7')
  const etag = first.headers.etag as string
  const same = { 'if-none-match': etag }

  ctx.clock.advance(60_000)
  const quick = await poll(ctx, serverId, 'version=1.0.0&localIp=10.0.0.7', same)
  t.equal(quick.statusCode, 304)
  t.equal(quick.body, '')
  t.match(quick.headers, { etag, 'cache-control': 'no-store', 'x-request-id': String })
  await ctx.app.replayServerPolls.flush()
  t.equal((await other.stored(id)).last_seen_at, '2026-03-01T10:01:00.000Z', 'its sighting is written')

  t.equal((await poll(ctx, serverId, 'version=1.0.0&extra=1', same)).statusCode, 400, 'an unknown query field is refused as before')
  t.equal((await poll(ctx, serverId, 'version=1.0.0&version=1.0.0', same)).statusCode, 400, 'so is a field given twice')
  t.equal((await poll(ctx, serverId, 'localIp=not-an-ip', same)).statusCode, 400, 'a changed report is validated')
  t.equal((await poll(ctx, serverId.toUpperCase(), '', same)).statusCode, 404, 'another serverId gets nothing kept for this one')

  const upgraded = await poll(ctx, serverId, 'version=1.1.0&localIp=10.0.0.7', same)
  t.equal(upgraded.statusCode, 304, 'the answer itself did not change')
  t.equal((await other.stored(id)).version, '1.1.0', 'but the new version is written at once')
})
