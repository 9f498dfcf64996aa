// The replay and recording box events, from the flows that make them: a box registered and approved,
// a replay requested and READY or FAILED, an update the box reports failed. No secret in any payload.
import t from 'tap'
import { tellConnectivity } from '../replay-servers/connectivity.js'
import { ADMIN, approve, camera, poll, putConfig } from '../replay-servers/test-helpers.js'
import { DEVICE, REPLAYS, SHA, filmedVenue, storedClip } from '../replays/test-helpers.js'
import { eventReader } from './test-helpers.js'
import { migrateToLatest, migratorFor } from '../db/database.js'

t.test('a box registered then approved; a replay requested, READY, another FAILED; payloads as GET answers them', async (t) => {
  const { ctx, venue, admin, member, call, serverId, boxId, device, bucketDir } = await filmedVenue(t)
  const events = eventReader(ctx.app.db)
  const box = await events.next(['replay_server.registered', 'replay_server.approved'])
  t.same(box.map((e) => e.type), ['replay_server.registered', 'replay_server.approved'])
  t.match(box[0]!.data, { id: boxId, status: 'PENDING', deviceId: 'box-1' })
  t.match(box[1]!.data, { id: boxId, status: 'APPROVED', area: { id: venue.hall.id } })
  t.equal((await approve(ctx, admin, boxId, { areaId: venue.hall.id })).statusCode, 200)
  t.same(await events.next(), [], 'the same approval sent again changes nothing and tells nothing')
  await events.next()

  const created = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id }, seconds: 10 })).json()
  const requested = await events.next()
  t.same(requested.map((e) => e.type), ['replay.requested'])
  t.same(requested[0]!.data, created, 'the replay as its request answered it')
  const step = (id: string, body: object) => call('PUT', `${DEVICE}/${id}/status`, device, body)
  await step(created.id, { status: 'EXPORTING' })
  await step(created.id, { status: 'UPLOADING' })
  t.same(await events.next(), [], 'the steps between are not told')
  t.equal((await step(created.id, { status: 'READY', location: storedClip(bucketDir, `cam-1/${created.id}.mp4`), durationSeconds: 10, sizeBytes: 28, sha256: SHA })).statusCode, 200)
  const ready = await events.next()
  t.same(ready.map((e) => e.type), ['replay.ready'])
  const { downloadUrl: _url, downloadUrlExpiresAt: _expires, ...shown } = (await call('GET', `${REPLAYS}/${created.id}`, { authorization: admin })).json()
  t.same(ready[0]!.data, shown, 'READY as staff GET it, without the per-viewer download link')

  const other = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id }, seconds: 10 })).json()
  await events.next()
  await step(other.id, { status: 'FAILED', reason: 'camera_error' })
  const failed = await events.next()
  t.same(failed.map((e) => e.type), ['replay.failed'])
  t.match(failed[0]!.data, { id: other.id, status: 'FAILED', reason: 'camera_error' })

  const all = JSON.stringify(await eventReader(ctx.app.db).next())
  t.notOk(all.includes(serverId), 'no serverId in any payload')
  t.notOk(all.includes(device.authorization.slice('Bearer '.length)), 'no device token in any payload')
})

t.test('a box reporting a failed update, then a rolled back one: update_failed and rolled_back, each once', async (t) => {
  const { ctx, serverId, boxId, admin } = await filmedVenue(t)
  const events = eventReader(ctx.app.db)
  await events.next()
  const report = (state: string) => poll(ctx, serverId, `version=1.0.0&architecture=amd64&updateState=${state}&updateVersion=1.1.0&updateReason=disk%20full`)
  t.equal((await report('FAILED')).statusCode, 200)
  const failed = await events.next()
  t.same(failed.map((e) => e.type), ['replay_server.update_failed'])
  t.match(failed[0]!.data, { id: boxId, updateState: 'FAILED', updateVersion: '1.1.0', updateReason: 'disk full' })
  await report('FAILED')
  t.same(await events.next(), [], 'the same report again is no new event')
  await report('ROLLED_BACK')
  t.same((await events.next()).map((e) => e.type), ['replay_server.rolled_back'])
  const shown = (await ctx.app.inject({ method: 'GET', url: `${ADMIN}/${boxId}`, headers: { authorization: admin } })).json()
  t.equal(shown.updateState, 'ROLLED_BACK')
})

t.test('a box going offline and coming back: offline and online told once each, even by two tellers at once', async (t) => {
  const { ctx, serverId, boxId } = await filmedVenue(t)
  const interval = ctx.config.REPLAY_POLL_INTERVAL_SECONDS
  const tell = async () => {
    await ctx.app.replayServerPolls.flush()
    return tellConnectivity(ctx.app.db, ctx.clock.now(), interval)
  }
  const events = eventReader(ctx.app.db)
  await events.next()
  t.equal(await tell(), 1)
  const online = await events.next()
  t.same(online.map((e) => e.type), ['replay_server.online'])
  t.match(online[0]!.data, { id: boxId, online: true })
  t.equal(await tell(), 0, 'still online: nothing more')

  ctx.clock.set(new Date(ctx.clock.now().getTime() + 3 * interval * 1000 + 1000).toISOString())
  t.same(await Promise.all([tell(), tell()]).then((counts) => counts.reduce((a, b) => a + b)), 1, 'two tellers at once: one tells it')
  const offline = await events.next()
  t.same(offline.map((e) => e.type), ['replay_server.offline'])
  t.match(offline[0]!.data, { id: boxId, online: false })
  t.equal(await tell(), 0)

  await poll(ctx, serverId)
  await tell()
  t.same((await events.next()).map((e) => e.type), ['replay_server.online'], 'polling again: online again')
})

t.test('replays-cleanup: a READY replay past REPLAY_RETENTION_DAYS is told expired once', async (t) => {
  const { ctx, venue, member, call, device, bucketDir } = await filmedVenue(t, { REPLAY_RETENTION_DAYS: '7' })
  const created = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id }, seconds: 10 })).json()
  for (const body of [{ status: 'EXPORTING' }, { status: 'UPLOADING' }, { status: 'READY', location: storedClip(bucketDir, `cam-1/${created.id}.mp4`), durationSeconds: 10, sizeBytes: 28, sha256: SHA }]) {
    await call('PUT', `${DEVICE}/${created.id}/status`, device, body)
  }
  const events = eventReader(ctx.app.db)
  await events.next()
  ctx.clock.set('2026-03-09T10:00:00.000Z')
  const run = () => ctx.app.jobs.run('replays-cleanup', { trigger: 'cli' })
  t.equal((await run()).kind, 'ran')
  const expired = await events.next()
  t.same(expired.map((e) => e.type), ['replay.expired'])
  t.match(expired[0]!.data, { id: created.id, status: 'EXPIRED' })
  await run()
  t.same(await events.next(), [], 'a second run tells nothing')
})

t.test("no camera's or box's password reaches an event: URLs with credentials are masked in every payload, the admin GET unchanged", async (t) => {
  const { ctx, admin, serverId, boxId, bucket } = await filmedVenue(t, {}, { serverUrl: 'http://box:b0x-pass@10.0.0.5:8080/' })
  const feed = 'rtsp://admin:s3cret-Pa55@10.0.0.20:554/stream1'
  const odd = 'rtsp://viewer:p@ss:w0rd@10.0.0.21/live'
  const config = { cloudStorageBucket: bucket, cameras: [camera('cam-1', { feed }), camera('cam-2', { feed: odd })] }
  t.equal((await putConfig(ctx, admin, boxId, config)).statusCode, 200)
  // A claim beside the box, reporting its own serverUrl with credentials.
  await ctx.app.inject({ method: 'POST', url: '/apis/v2/replay-servers/device', remoteAddress: '203.0.113.9', payload: { deviceId: 'box-1', serverUrl: 'http://x:claim-pass@10.0.0.9/' } })
  const events = eventReader(ctx.app.db)
  await events.next()
  const interval = ctx.config.REPLAY_POLL_INTERVAL_SECONDS
  await poll(ctx, serverId)
  await ctx.app.replayServerPolls.flush()
  await tellConnectivity(ctx.app.db, ctx.clock.now(), interval)
  ctx.clock.set(new Date(ctx.clock.now().getTime() + 3 * interval * 1000 + 1000).toISOString())
  await tellConnectivity(ctx.app.db, ctx.clock.now(), interval)
  const told = await events.next()
  t.same(told.map((e) => e.type), ['replay_server.online', 'replay_server.offline'])
  for (const event of told) {
    const text = JSON.stringify(event.data)
    t.notMatch(text, /s3cret|b0x-pass|p@ss|w0rd|claim-pass/, `${event.type}: no password`)
    t.match(event.data, {
      serverUrl: 'http://box:***@10.0.0.5:8080/',
      config: { cameras: [{ feed: 'rtsp://admin:***@10.0.0.20:554/stream1' }, { feed: 'rtsp://viewer:***@10.0.0.21/live' }] },
      claims: [{ serverUrl: 'http://x:***@10.0.0.9/' }]
    })
  }
  const view = (await ctx.app.inject({ method: 'GET', url: `${ADMIN}/${boxId}`, headers: { authorization: admin } })).json()
  t.match(view, { serverUrl: 'http://box:b0x-pass@10.0.0.5:8080/', config: { cameras: [{ feed }, { feed: odd }] } }, 'an admin still reads them')
})

t.test('migration 0035 masks the URL passwords of events written before', async (t) => {
  const { ctx, admin, serverId, boxId, bucket } = await filmedVenue(t)
  const db = ctx.app.db
  const feed = 'rtsp://admin:s3cret-Pa55@10.0.0.20:554/stream1'
  t.equal((await putConfig(ctx, admin, boxId, { cloudStorageBucket: bucket, cameras: [camera('cam-1', { feed })] })).statusCode, 200)
  await poll(ctx, serverId)
  await ctx.app.replayServerPolls.flush()
  // An event as the code before wrote it: the payload as the admin's GET answers it.
  const view = (await ctx.app.inject({ method: 'GET', url: `${ADMIN}/${boxId}`, headers: { authorization: admin } })).json()
  // Back to before 0035 only now: the app reads tables added since (0037's health) to answer.
  await migratorFor(db).migrateTo('0034_redemption_delivered')
  await db.updateTable('outbox_events').set({ data: JSON.stringify(view) }).where('type', '=', 'replay_server.approved').execute()
  t.match((await eventReader(db).next(['replay_server.approved']))[0]!.data, { config: { cameras: [{ feed }] } }, 'stored with the password before')
  await migrateToLatest(db)
  const [approved] = await eventReader(db).next(['replay_server.approved'])
  t.match(approved!.data, { id: boxId, config: { cameras: [{ feed: 'rtsp://admin:***@10.0.0.20:554/stream1' }] } })
  t.notMatch(JSON.stringify(approved!.data), /s3cret/)
})
