// Fail fast for players (issue 48): a replay of a court whose every filming camera is FAILED, by the
// latest report of a box that polls, is a 503 at once naming the camera and since when, with nothing
// stored and nothing paid; one camera of the court still recording takes it.
import t, { type Test } from 'tap'
import { errorOf, userWithToken } from '../test-support/app.js'
import { boxKey, proven } from '../test-support/box-keys.js'
import { report, signedHealthQuery } from '../test-support/box-health.js'
import { issued, packageTemplate, threeReplays } from '../packages/test-fixtures.js'
import { approve, camera, poll, putConfig, registeredBox } from '../replay-servers/test-helpers.js'
import { REPLAYS, filmedVenue } from './test-helpers.js'

async function setup(t: Test) {
  const key = boxKey()
  const s = await filmedVenue(t, { REPLAYS_REQUIRE_PACKAGE: 'true' }, { key })
  // Two cameras film court 1.
  const config = { cameras: [camera('cam-1', { courtIds: [s.venue.court1.id] }), camera('cam-2', { courtIds: [s.venue.court1.id] })] }
  t.equal((await putConfig(s.ctx, s.admin, s.boxId, config)).statusCode, 200)
  const staff = await userWithToken(s.ctx, 'staff')
  const pkg = await issued(s.ctx, staff, await packageTemplate(s.ctx, staff, threeReplays), s.member.id)
  const remaining = async () => (await s.call('GET', `/apis/v2/packages/${pkg.id}`, s.member)).json().items.items[0].remainingItems as number
  const send = (health: unknown) => {
    s.ctx.clock.advance(1000)
    return poll(s.ctx, s.serverId, signedHealthQuery(s.ctx, key, s.serverId, { health }))
  }
  const ask = (body: Record<string, unknown> = {}) => s.call('POST', REPLAYS, s.member, { court: { id: s.venue.court1.id }, seconds: 10, ...body })
  const stored = async () => ({
    replays: (await s.ctx.app.db.selectFrom('replays').select('id').execute()).length,
    redemptions: (await s.ctx.app.db.selectFrom('package_redemptions').select('id').execute()).length
  })
  return { ...s, key, send, ask, remaining, stored }
}

t.test('every camera of the court FAILED: 503 at once, naming the camera and since when, nothing stored or paid', async (t) => {
  const s = await setup(t)
  const before = await s.stored()
  t.equal(await s.remaining(), 3)
  t.equal((await s.send(report([{ id: 'cam-1', state: 'FAILED', problem: 'connection refused' }, { id: 'cam-2', state: 'FAILED', problem: 'no such file' }]))).statusCode, 200)
  const since = s.ctx.clock.now().toISOString()
  s.ctx.clock.advance(5000)
  const res = await s.ask()
  t.equal(res.statusCode, 503)
  t.match(errorOf(res).message, new RegExp(`camera cam-1 filming court .* does not record since ${since}: no replay`))
  t.notMatch(errorOf(res).message, /connection refused/, "the box's own words about it are for staff (the admin view), not for whoever asks")
  t.same(res.json().camera, { id: 'cam-1', state: 'FAILED', since })
  t.equal(res.headers['retry-after'], String(s.ctx.config.REPLAY_POLL_INTERVAL_SECONDS))
  t.same(await s.stored(), before, 'no replay row, no redemption')
  t.equal(await s.remaining(), 3, 'no item spent')
  t.equal((await s.ask({ cameraId: 'cam-2' })).statusCode, 503, 'the named camera FAILED too')
})

t.test('one camera of the court still RECORDING: 201, cut from that one', async (t) => {
  const s = await setup(t)
  await s.send(report([{ id: 'cam-1', state: 'FAILED', problem: 'connection refused' }, { id: 'cam-2' }]))
  const res = await s.ask()
  t.equal(res.statusCode, 201)
  t.equal((await s.ctx.app.db.selectFrom('replays').select('camera_id').executeTakeFirstOrThrow()).camera_id, 'cam-2', 'the one that records')
  t.equal(await s.remaining(), 2)
  t.equal((await s.ask({ cameraId: 'cam-1' })).statusCode, 503, 'the FAILED one named: refused')
})

t.test('a box that stopped polling says nothing of its cameras now: its last FAILED does not refuse', async (t) => {
  const s = await setup(t)
  await s.send(report([{ id: 'cam-1', state: 'FAILED' }, { id: 'cam-2', state: 'FAILED' }]))
  s.ctx.clock.advance(3 * s.ctx.config.REPLAY_POLL_INTERVAL_SECONDS * 1000 + 1000)
  // Staff may ask for older footage; the member's replay must end now: the box is offline, asked as before.
  t.equal((await s.ask()).statusCode, 201)
})

t.test("another box's report of cameras with the same ids (FAILED) does not refuse this court: a report speaks only for its own box's cameras", async (t) => {
  const s = await setup(t)
  // A second box of the same area, with its own key, its cameras named like the first box's (filming no court yet).
  const otherKey = boxKey()
  const other = await registeredBox(s.ctx, proven(s.ctx, otherKey, { deviceId: 'box-2' }))
  t.equal((await approve(s.ctx, s.admin, other.id, { areaId: s.venue.hall.id })).statusCode, 200)
  t.equal((await putConfig(s.ctx, s.admin, other.id, { cameras: [camera('cam-1'), camera('cam-2')] })).statusCode, 200, 'configured')
  s.ctx.clock.advance(1000)
  const failed = report([{ id: 'cam-1', state: 'FAILED', problem: 'connection refused' }, { id: 'cam-2', state: 'FAILED', problem: 'connection refused' }])
  t.equal((await poll(s.ctx, other.serverId, signedHealthQuery(s.ctx, otherKey, other.serverId, { health: failed }))).statusCode, 200)
  // This box records, by its own report.
  t.equal((await s.send(report([{ id: 'cam-1' }, { id: 'cam-2' }]))).statusCode, 200)
  const res = await s.ask()
  t.equal(res.statusCode, 201, res.body)
  t.equal((await s.ctx.app.db.selectFrom('replays').select('replay_server_id').executeTakeFirstOrThrow()).replay_server_id, s.boxId, 'cut by this box')
})
