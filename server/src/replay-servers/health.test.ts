// A box's health in its poll (issue 48): kept only from signed polls, checked before anything is
// written, its clock measured by the server, shown to admins with its problems, filtered and summed.
import t from 'tap'
import { errorOf, testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { adminView, approvedBox, boxKey, proven, type BoxKey } from '../test-support/box-keys.js'
import { report, reportingBox, signedHealthQuery } from '../test-support/box-health.js'
import { ADMIN, adminOf, anotherProcess, approve, area, camera, poll, putConfig, registeredBox } from './test-helpers.js'
import { HEALTH_CHANGES_KEPT, recordHealth } from './health.js'

const healthTables = async (ctx: TestApp) => ({
  latest: await ctx.app.db.selectFrom('replay_server_health').selectAll().execute(),
  changes: await ctx.app.db.selectFrom('replay_server_health_changes').selectAll().execute()
})

t.test('a poll with health: the admin view shows it with since and its problems; null before the first report', async (t) => {
  const ctx = await testApp(t)
  const box = await reportingBox(t, ctx)
  t.equal((await adminView(ctx, box.admin, box.id)).health, null, 'no report yet: null')

  const first = ctx.clock.now().toISOString()
  t.equal((await box.send(report([{ id: 'cam-1' }, { id: 'cam-2', state: 'FAILED', problem: 'connection refused', restarts: 4 }]))).statusCode, 200)
  let view = await adminView(ctx, box.admin, box.id)
  t.match(view.health, {
    reportedAt: first,
    cameras: [
      { id: 'cam-1', state: 'RECORDING', since: first, problem: null },
      { id: 'cam-2', state: 'FAILED', since: first, restarts: 4, problem: 'connection refused' }
    ],
    disk: { freeBytes: 500e9, totalBytes: 1000e9, recordingsBytes: 400e9, hoursKept: 300 },
    temperatureCelsius: 51.5,
    memoryBytes: 80e6,
    uptimeSeconds: 3600,
    problems: ['CAMERA_FAILED']
  })

  ctx.clock.advance(60_000)
  const later = ctx.clock.now().toISOString()
  await box.send(report([{ id: 'cam-1' }, { id: 'cam-2' }], { freeBytes: 50e9 }))
  view = await adminView(ctx, box.admin, box.id)
  t.match(view.health.cameras, [{ id: 'cam-1', since: first }, { id: 'cam-2', state: 'RECORDING', since: later }], 'since moves only with the state')
  t.same(view.health.problems, ['DISK_LOW'], 'under 10% free: DISK_LOW (REPLAY_SERVER_DISK_FLOOR_PERCENT)')
  const list = (await ctx.app.inject({ method: 'GET', url: ADMIN, headers: { authorization: box.admin } })).json()
  t.same(list.items[0].health, view.health, 'the list shows the same')

  ctx.clock.advance(10 * 60_000)
  view = await adminView(ctx, box.admin, box.id)
  t.same(view.health.problems, ['DISK_LOW', 'OFFLINE'], 'silent for three poll intervals: OFFLINE too')

  const { changes } = await healthTables(ctx)
  t.same(
    changes.map((c) => `${c.subject}=${c.state}`).sort(),
    ['camera:cam-1=RECORDING', 'camera:cam-2=FAILED', 'camera:cam-2=RECORDING', 'disk=LOW'],
    'the history holds each change of state'
  )
})

t.test('the history of changes is bounded per box: the oldest go in the write that adds one', async (t) => {
  const ctx = await testApp(t)
  const box = await reportingBox(t, ctx)
  for (let i = 0; i < HEALTH_CHANGES_KEPT / 2 + 5; i++) {
    ctx.clock.advance(1000)
    t.equal((await box.send(report([{ id: 'cam-1', state: i % 2 ? 'RECORDING' : 'FAILED' }, { id: 'cam-2', state: i % 2 ? 'FAILED' : 'RECORDING' }]))).statusCode, 200)
  }
  const { changes } = await healthTables(ctx)
  t.equal(changes.length, HEALTH_CHANGES_KEPT)
  t.equal(changes.map((c) => c.at).sort()[0], new Date(Date.parse(ctx.clock.now().toISOString()) - (HEALTH_CHANGES_KEPT / 2 - 1) * 1000).toISOString(), 'the newest kept')
})

t.test('a bad health parameter: 400 naming it and what is wrong, nothing written', async (t) => {
  const ctx = await testApp(t)
  const box = await reportingBox(t, ctx)
  const bad: Array<[unknown, RegExp]> = [
    ['{"cameras": [', /querystring\.health: not JSON/],
    [{ ...report([{ id: 'cam-1' }]), disk: undefined }, /querystring\.health.*disk/],
    [report([{ id: 'cam-1', state: 'ON_FIRE' as never }]), /querystring\.health\.cameras\.0\.state must be one of/],
    [report([{ id: 'cam 1' }]), /querystring\.health\.cameras\.0\.id must match/],
    [report([{ id: 'cam-1' }, { id: 'cam-1' }]), /cam-1 is reported twice/],
    [report([], { freeBytes: 2, totalBytes: 1 }), /freeBytes: more than totalBytes/],
    [{ ...report([]), extra: 1 }, /querystring\.health/],
    // NaN-ish and huge numbers: JSON has no NaN; 1e999 parses as Infinity.
    ['{"cameras": [], "disk": {"freeBytes": NaN}}', /querystring\.health: not JSON/],
    [JSON.stringify(report([])).replace('"freeBytes":500000000000', '"freeBytes":1e999'), /querystring\.health\.disk\.freeBytes/],
    [JSON.stringify(report([])).replace('"uptimeSeconds":3600', '"uptimeSeconds":1e300'), /querystring\.health\.uptimeSeconds/],
    [report([{ id: 'cam-1', restarts: -1 }]), /querystring\.health\.cameras\.0\.restarts/],
    [report([{ id: 'cam-1', restarts: 1.5 }]), /querystring\.health\.cameras\.0\.restarts/],
    [report([{ id: 'cam-1', lastSegmentAt: 'yesterday' }]), /querystring\.health\.cameras\.0\.lastSegmentAt/],
    [report([{ id: 'cam-1', state: 'FAILED', problem: 'x'.repeat(201) }]), /querystring\.health\.cameras\.0\.problem/],
    [report(Array.from({ length: 65 }, (_, i) => ({ id: `c${i}` }))), /querystring\.health\.cameras/],
    ['"x"'.padEnd(16_001, ' '), /querystring\.health/]
  ]
  for (const [health, message] of bad) {
    const res = await box.send(health)
    t.equal(res.statusCode, 400, String(message))
    t.match(errorOf(res).message, message)
  }
  t.same(await healthTables(ctx), { latest: [], changes: [] }, 'nothing written')
  t.equal((await adminView(ctx, box.admin, box.id)).health, null)
})

t.test("a keyless box's health is not kept: its serverId alone is no proof, and whoever read it could turn players away", async (t) => {
  const ctx = await testApp(t)
  const box = await approvedBox(t, ctx)
  const res = await poll(ctx, box.serverId, new URLSearchParams({ health: JSON.stringify(report([{ id: 'cam-1', state: 'FAILED', problem: 'x' }])) }).toString())
  t.equal(res.statusCode, 200, 'answered as before')
  t.equal((await adminView(ctx, box.admin, box.id)).health, null, 'not kept')
  t.same(await healthTables(ctx), { latest: [], changes: [] })
  t.equal((await poll(ctx, box.serverId, 'health=nope')).statusCode, 400, 'still checked')
})

t.test("the box's clock offset is measured from its signed timestamp and half the round trip; a lying round trip is not used", async (t) => {
  const ctx = await testApp(t)
  const box = await reportingBox(t, ctx)
  const offset = async () => (await adminView(ctx, box.admin, box.id)).health
  // Ten seconds between polls: each signature must be newer than the last, whatever the box's clock says.
  const later = () => ctx.clock.advance(10_000)
  later()
  await box.send(report([{ id: 'cam-1' }]), { aheadMs: 800, roundTripMs: 400 })
  let health = await offset()
  t.ok(Math.abs(health.clockOffsetSeconds - 1.0) < 0.15, `1.0 s ahead: ${health.clockOffsetSeconds}`)
  t.same(health.problems, [])

  // A round trip of 10 minutes would move the offset by 5: unusable, the last measure stays.
  later()
  await box.send(report([{ id: 'cam-1' }]), { aheadMs: 0, roundTripMs: 600_000 })
  health = await offset()
  t.ok(Math.abs(health.clockOffsetSeconds - 1.0) < 0.15, `kept: ${health.clockOffsetSeconds}`)

  // Polls without a report measure it too; crossing the limit is written at once.
  const plain = (aheadMs: number) => (later(), poll(ctx, box.serverId, signedHealthQuery(ctx, box.key, box.serverId, { aheadMs, roundTripMs: 100 })))
  t.equal((await plain(-5_000)).statusCode, 200)
  health = await offset()
  t.ok(Math.abs(health.clockOffsetSeconds + 4.95) < 0.15, `5 s behind: ${health.clockOffsetSeconds}`)
  t.same(health.problems, ['CLOCK_SKEWED'])
  const stored = await ctx.app.db.selectFrom('replay_server_health').select('clock_offset_ms').executeTakeFirstOrThrow()
  await plain(-5_500)
  t.same(await ctx.app.db.selectFrom('replay_server_health').select('clock_offset_ms').executeTakeFirstOrThrow(), stored, 'still skewed: not written again')
  await plain(0)
  t.same((await offset()).problems, [], 'set right: the crossing back is written')
})

t.test('the list filters health=PROBLEM and OK in SQL, paged', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const areaId = await area(ctx)
  const boxes: Array<{ id: string; serverId: string; key: BoxKey }> = []
  for (let i = 0; i < 5; i++) {
    const key = boxKey()
    const box = await registeredBox(ctx, proven(ctx, key, { deviceId: `box-${i}` }))
    await approve(ctx, admin, box.id, { areaId })
    await putConfig(ctx, admin, box.id, { cameras: [camera()] })
    boxes.push({ ...box, key })
    ctx.clock.advance(1)
  }
  // Box 0 never reports and never polls again (registration counts as seen: let it go offline first).
  ctx.clock.advance(10 * 60_000)
  const states = ['RECORDING', 'FAILED', 'RECORDING', 'FAILED']
  for (let i = 1; i < 5; i++) {
    const box = boxes[i]!
    t.equal((await poll(ctx, box.serverId, signedHealthQuery(ctx, box.key, box.serverId, { health: report([{ id: 'cam-1', state: states[i - 1] as 'FAILED' }]) }))).statusCode, 200)
  }
  const list = async (query: string) => (await ctx.app.inject({ method: 'GET', url: `${ADMIN}?${query}`, headers: { authorization: admin } })).json()
  const ids = (page: { items: Array<{ id: string }> }) => page.items.map((b) => b.id)
  const problem1 = await list('health=PROBLEM&ipp=2')
  t.equal(problem1._total, 3, 'two FAILED and one offline')
  t.same(ids(problem1), [boxes[4]!.id, boxes[2]!.id], 'newest first')
  t.match(problem1._links.next.href, /health=PROBLEM/)
  const problem2 = await list('health=PROBLEM&ipp=2&page=2')
  t.same(ids(problem2), [boxes[0]!.id])
  const ok = await list('health=OK')
  t.same(ids(ok), [boxes[3]!.id, boxes[1]!.id])
  t.equal((await list('health=MAYBE')).statusCode, 400)
})

t.test('the fleet summary counts boxes, cameras and versions; staff may not read it', async (t) => {
  const ctx = await testApp(t)
  const box = await reportingBox(t, ctx)
  await registeredBox(ctx, { deviceId: 'box-pending' })
  await box.send(report([{ id: 'cam-1' }, { id: 'cam-2', state: 'FAILED' }, { id: 'cam-3', state: 'PAUSED' }]))
  const fleet = await ctx.app.inject({ method: 'GET', url: '/apis/v2/admin/fleet', headers: { authorization: box.admin } })
  t.equal(fleet.statusCode, 200)
  t.same(fleet.json(), {
    boxes: { total: 2, byStatus: { PENDING: 1, APPROVED: 1, REJECTED: 0, REVOKED: 0 }, online: 1, offline: 0, withProblems: 1 },
    cameras: { RECORDING: 1, STARTING: 0, FAILED: 1, PAUSED: 1, DISABLED: 0 },
    versions: [{ version: null, boxes: 1 }],
    rollouts: []
  })
  const staff = (await userWithToken(ctx, 'staff')).authorization
  const refused = await ctx.app.inject({ method: 'GET', url: '/apis/v2/admin/fleet', headers: { authorization: staff } })
  t.equal(refused.statusCode, 403)
  errorOf(refused)
  t.equal((await ctx.app.inject({ method: 'GET', url: '/apis/v2/admin/fleet' })).statusCode, 401)
})

t.test('a report that changes no state is written with the next flush; one another process wrote over since is dropped, not written back', async (t) => {
  const ctx = await testApp(t, { REPLAY_SIGHTING_FLUSH_MS: '60000' })
  const box = await reportingBox(t, ctx)
  const stored = async () => ctx.app.db.selectFrom('replay_server_health').selectAll().executeTakeFirstOrThrow()
  await box.send(report([{ id: 'cam-1' }]))
  const first = await stored()
  ctx.clock.advance(30_000)
  await box.send(report([{ id: 'cam-1', restarts: 1 }], { freeBytes: 400e9 }))
  t.same(await stored(), first, 'the same states: nothing written by the poll itself')
  await ctx.app.replayServerPolls.flush()
  const flushed = await stored()
  t.equal(flushed.reported_at, ctx.clock.now().toISOString(), 'written with the flush')
  t.match(JSON.parse(flushed.report), { disk: { freeBytes: 400e9 } })
  t.match(JSON.parse(flushed.cameras), [{ id: 'cam-1', restarts: 1, since: first.reported_at }], 'since kept')

  // Another process takes a report of a FAILED camera meanwhile; this one's held figures must not undo it.
  ctx.clock.advance(30_000)
  await box.send(report([{ id: 'cam-1', restarts: 2 }]))
  const other = await anotherProcess(t, ctx)
  await recordHealth(other.db, box.id, report([{ id: 'cam-1', state: 'FAILED', problem: 'connection refused' }]), null, new Date(ctx.clock.now().getTime() + 1), 10)
  await ctx.app.replayServerPolls.flush()
  t.match(JSON.parse((await stored()).cameras), [{ id: 'cam-1', state: 'FAILED' }], "the other process's change stands")
  ctx.clock.advance(30_000)
  await box.send(report([{ id: 'cam-1' }]))
  t.match(JSON.parse((await stored()).cameras), [{ id: 'cam-1', state: 'RECORDING' }], 'the next report goes the whole way')
})

t.test("a signed poll sent again (a query copied from a log, answered 304) does not measure the clock", async (t) => {
  const ctx = await testApp(t)
  const box = await reportingBox(t, ctx)
  await box.send(report([{ id: 'cam-1' }]))
  ctx.clock.advance(1000)
  const query = signedHealthQuery(ctx, box.key, box.serverId, { roundTripMs: 10 })
  const first = await poll(ctx, box.serverId, query)
  t.equal(first.statusCode, 200)
  ctx.clock.advance(60_000)
  const again = await poll(ctx, box.serverId, query, { 'if-none-match': first.headers.etag as string })
  t.equal(again.statusCode, 304, 'answered from the kept answer, as before')
  await ctx.app.replayServerPolls.flush()
  const health = (await adminView(ctx, box.admin, box.id)).health
  t.same(health.problems, [], 'not measured 60 s behind')
  t.ok(Math.abs(health.clockOffsetSeconds) < 1)
})

t.test("a report swapped into a box's signed poll (its query read from a log, sent to a process that has not taken it): 401, nothing kept, the box's own poll still counts", async (t) => {
  const ctx = await testApp(t)
  const box = await reportingBox(t, ctx)
  await box.send(report([{ id: 'cam-1' }]))
  ctx.clock.advance(1000)
  const own = new URLSearchParams(signedHealthQuery(ctx, box.key, box.serverId, { health: report([{ id: 'cam-1' }]) }))
  const swapped = new URLSearchParams(own)
  swapped.set('health', JSON.stringify(report([{ id: 'cam-1', state: 'FAILED', problem: 'connection refused' }])))
  const unsigned = new URLSearchParams(swapped)
  unsigned.delete('healthSignature')
  for (const [what, query] of [['its signature kept', swapped], ['its signature dropped', unsigned]] as const) {
    const res = await poll(ctx, box.serverId, query.toString())
    t.equal(res.statusCode, 401, what)
    t.match(errorOf(res).message, /health is not signed by the box's key/, what)
  }
  t.same((await adminView(ctx, box.admin, box.id)).health.problems, [], 'no camera FAILED')
  t.equal((await poll(ctx, box.serverId, own.toString())).statusCode, 200, "the box's own poll, with that signature, is taken")
})
