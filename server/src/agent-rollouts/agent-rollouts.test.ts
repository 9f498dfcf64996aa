// Staged rollouts with simulated boxes polling the real status route, an injected clock and
// injected box health (recordingSince): what each box is offered is read from its own poll answers.
import t from 'tap'
import { errorOf, testApp, userWithApiKey, userWithToken, type TestApp } from '../test-support/app.js'
import { storeRelease } from '../test-support/agent-releases.js'
import { adminOf, approve, area, camera, poll, putConfig, registeredBox } from '../replay-servers/test-helpers.js'
import { secondServerProcess } from '../test-support/second-server.js'
import { activeRollouts, groupSizes, type RecordingSince } from './service.js'
import { recordHealth } from '../replay-servers/health.js'

const ROLLOUTS = '/apis/v2/admin/agent-rollouts'
const OLD = '1.0.0'
const NEW = '1.1.0'

/** A simulated box: polls with the version it runs; remembers every version it was ever offered. */
interface Box {
  id: string
  serverId: string
  version: string
  /** What the box reports about its update (ROLLED_BACK of NEW for a bad release). */
  update?: { state: string; version: string; reason: string }
  offered: Set<string>
  /** The version its latest poll was offered, if any. */
  pending?: string
}

async function pollBox(ctx: TestApp, box: Box): Promise<void> {
  const update = box.update ? `&updateState=${box.update.state}&updateVersion=${box.update.version}&updateReason=${encodeURIComponent(box.update.reason)}` : ''
  const res = await poll(ctx, box.serverId, `version=${box.version}&architecture=amd64${update}`)
  if (res.statusCode !== 200) throw new Error(`poll failed: ${res.statusCode} ${res.body}`)
  box.pending = res.json().pendingUpdate?.version
  if (box.pending) box.offered.add(box.pending)
}

/** `count` approved boxes in one area, each having polled once with OLD; releases OLD and NEW stored. */
async function fleet(ctx: TestApp, count: number, prefix = 'box') {
  const admin = await adminOf(ctx)
  const areaId = await area(ctx)
  await storeRelease(ctx.app.db, ctx.config, OLD).catch(() => undefined)
  await storeRelease(ctx.app.db, ctx.config, NEW).catch(() => undefined)
  const boxes: Box[] = []
  for (let i = 0; i < count; i++) {
    const { serverId, id } = await registeredBox(ctx, { deviceId: `${prefix}-${i}` })
    const approved = await approve(ctx, admin, id, { areaId })
    if (approved.statusCode !== 200) throw new Error(`approval failed: ${approved.body}`)
    const box: Box = { id, serverId, version: OLD, offered: new Set() }
    await pollBox(ctx, box)
    boxes.push(box)
  }
  return { admin, areaId, boxes }
}

const create = (ctx: TestApp, authorization: string, body: Record<string, unknown>) =>
  ctx.app.inject({ method: 'POST', url: ROLLOUTS, headers: { authorization }, payload: body })
const read = async (ctx: TestApp, authorization: string, id: string) => (await ctx.app.inject({ method: 'GET', url: `${ROLLOUTS}/${id}`, headers: { authorization } })).json()
const act = (ctx: TestApp, authorization: string, id: string, what: string) =>
  ctx.app.inject({ method: 'POST', url: `${ROLLOUTS}/${id}/${what}`, headers: { authorization } })

/** The rollout's events in the outbox, in order. */
async function eventsOf(ctx: TestApp, id: string): Promise<string[]> {
  const rows = await ctx.app.db.selectFrom('outbox_events').select('type').where('resource_id', '=', id).orderBy('seq').execute()
  return rows.map((r) => r.type)
}

/** A good box: installs what it is offered (its next poll reports the version). */
const install = (box: Box) => {
  if (box.pending) box.version = box.pending
}

/** Every box polls, acts, polls again; then the rollout advances. */
async function round(ctx: TestApp, boxes: Box[], acts: (box: Box) => void = install) {
  for (const box of boxes) {
    await pollBox(ctx, box)
    acts(box)
    await pollBox(ctx, box)
  }
  await ctx.app.agentRollouts.advance()
}

const groupOf = (rollout: any, box: Box): number => rollout.groups.find((g: any) => g.boxes.some((b: any) => b.id === box.id)).position
const stateOf = (rollout: any, box: Box): string => rollout.groups.flatMap((g: any) => g.boxes).find((b: any) => b.id === box.id).state

t.test('a good release walks its groups in order and completes', async (t) => {
  const ctx = await testApp(t)
  const { admin, boxes } = await fleet(ctx, 10)
  const res = await create(ctx, admin, { version: NEW, groups: [{ boxes: [{ id: boxes[9]!.id }] }, { percent: 30 }, { percent: 70 }], errorThresholdPercent: 10, healthSeconds: 0 })
  t.equal(res.statusCode, 201, res.body)
  const rollout = res.json()
  t.match(rollout, { version: NEW, status: 'RUNNING', healthSeconds: 0, successThresholdPercent: 100, silentTimeoutMinutes: 60, createdBy: { id: /./ }, _links: { self: { href: `${ROLLOUTS}/${rollout.id}` } } })
  t.same(rollout.groups.map((g: any) => g.boxes.length), [1, 3, 6], 'the canary, then 30 % and 70 % of the other nine (2.7 rounds up to 3)')
  t.same(rollout.groups.map((g: any) => g.status), ['OPEN', 'WAITING', 'WAITING'], 'the first group opens at once')
  t.match(rollout.groups[0], { offered: 1, pending: 1, succeeded: 0, failed: 0 })

  // The round in which each box was first offered the release, from its own poll answers.
  const firstOffered = new Map<string, number>()
  for (let r = 1; r <= 8; r++) {
    await round(ctx, boxes)
    for (const box of boxes) if (box.offered.has(NEW) && !firstOffered.has(box.id)) firstOffered.set(box.id, r)
  }
  const done = await read(ctx, admin, rollout.id)
  t.equal(done.status, 'COMPLETED')
  t.same(done.groups.map((g: any) => g.status), ['COMPLETED', 'COMPLETED', 'COMPLETED'])
  t.match(done, { offered: 10, succeeded: 10, failed: 0, pending: 0, excluded: 0 })
  const roundOf = (position: number) => [...new Set(boxes.filter((b) => groupOf(done, b) === position).map((b) => firstOffered.get(b.id)))]
  t.same([roundOf(1), roundOf(2), roundOf(3)], [[1], [2], [3]], 'each group offered only after the one before completed, all of a group at once')
  t.ok(boxes.every((b) => b.version === NEW), 'every box runs the release')
  t.same(await eventsOf(ctx, rollout.id), [
    'agent_rollout.started',
    'agent_rollout.group_completed',
    'agent_rollout.group_completed',
    'agent_rollout.group_completed',
    'agent_rollout.completed'
  ])
  const event = await ctx.app.db.selectFrom('outbox_events').select('data').where('resource_id', '=', rollout.id).where('type', '=', 'agent_rollout.completed').executeTakeFirstOrThrow()
  t.match(JSON.parse(event.data), { id: rollout.id, status: 'COMPLETED', succeeded: 10 }, "the event's data is the rollout")

  const list = await ctx.app.inject({ method: 'GET', url: `${ROLLOUTS}?status=COMPLETED`, headers: { authorization: admin } })
  t.match(list.json(), { items: [{ id: rollout.id }], _total: 1, _pagination: { page: 1, total: 1 } })
})

t.test('a bad release halts in its first group and no box outside it is ever offered the release', async (t) => {
  const ctx = await testApp(t)
  const { admin, boxes } = await fleet(ctx, 6)
  const res = await create(ctx, admin, { version: NEW, groups: [{ percent: 50 }, { percent: 50 }], errorThresholdPercent: 30, healthSeconds: 0 })
  t.equal(res.statusCode, 201, res.body)
  const id = res.json().id
  const first = boxes.filter((b) => groupOf(res.json(), b) === 1)
  const second = boxes.filter((b) => groupOf(res.json(), b) === 2)
  // The first box of group 1 installs, fails to come up and rolls back; the others have not installed yet.
  const bad = first[0]!
  const rollBack = (box: Box) => {
    if (box === bad && box.pending) box.update = { state: 'ROLLED_BACK', version: NEW, reason: 'the agent did not come up' }
  }
  for (let r = 0; r < 5; r++) await round(ctx, boxes, rollBack)
  const halted = await read(ctx, admin, id)
  t.equal(halted.status, 'HALTED')
  t.match(halted.haltedReason, /group 1: 1 of its boxes failed .*ROLLED_BACK: the agent did not come up/)
  t.same(halted.groups.map((g: any) => g.status), ['HALTED', 'WAITING'])
  t.equal(stateOf(halted, bad), 'FAILED')
  t.ok(second.every((b) => b.offered.size === 0), 'no box of the second group was ever offered anything')
  t.ok(first.every((b) => b.pending === undefined), 'the offer is withdrawn from the first group: its boxes not running it are no longer offered it')
  t.same(await eventsOf(ctx, id), ['agent_rollout.started', 'agent_rollout.halted'])
  t.equal((await act(ctx, admin, id, 'resume')).statusCode, 409, 'a halted rollout stays halted')
})

t.test("a box that runs the version but whose cameras stop recording within healthSeconds counts as failed", async (t) => {
  const recording = new Map<string, Date | null>()
  const recordingSince: RecordingSince = async (_db, boxId) => recording.get(boxId) ?? null
  const ctx = await testApp(t, {}, undefined, { recordingSince })
  const { admin, boxes } = await fleet(ctx, 2)
  const [steady, flaky] = boxes as [Box, Box]
  const res = await create(ctx, admin, { version: NEW, groups: [{ percent: 100 }], errorThresholdPercent: 100, successThresholdPercent: 50 })
  t.equal(res.statusCode, 201, res.body)
  const id = res.json().id
  t.equal(res.json().healthSeconds, 600, 'ten minutes by default')
  await round(ctx, boxes)
  let now = await read(ctx, admin, id)
  t.same([stateOf(now, steady), stateOf(now, flaky)], ['UPDATED', 'UPDATED'], 'running the version, cameras not yet recording: watched')
  recording.set(steady.id, ctx.clock.now())
  recording.set(flaky.id, ctx.clock.now())
  ctx.clock.advance(300_000)
  await round(ctx, boxes)
  now = await read(ctx, admin, id)
  t.same([stateOf(now, steady), stateOf(now, flaky)], ['UPDATED', 'UPDATED'], 'recording for five minutes: not yet')
  recording.set(flaky.id, null)
  ctx.clock.advance(200_000)
  await round(ctx, boxes)
  now = await read(ctx, admin, id)
  t.equal(stateOf(now, flaky), 'FAILED')
  t.match(now.groups[0].boxes.find((b: any) => b.id === flaky.id).reason, /cameras stopped recording/)
  recording.set(flaky.id, ctx.clock.now())
  ctx.clock.advance(100_000)
  await round(ctx, boxes)
  now = await read(ctx, admin, id)
  t.equal(stateOf(now, steady), 'SUCCEEDED', 'recording for healthSeconds since it ran the version')
  t.equal(stateOf(now, flaky), 'FAILED', 'recording again does not undo it')
  t.equal(now.status, 'COMPLETED', 'one of two is the success threshold of 50 %; one failure is under the error threshold of 100 %')
})

t.test('a silent box counts as failed after its timeout; a box that polls is not silent', async (t) => {
  const ctx = await testApp(t)
  const { admin, boxes } = await fleet(ctx, 2)
  const [silent, waiting] = boxes as [Box, Box]
  const res = await create(ctx, admin, { version: NEW, groups: [{ percent: 100 }], errorThresholdPercent: 100, healthSeconds: 0, silentTimeoutMinutes: 30 })
  const id = res.json().id
  // The waiting box polls (its update window is not open yet, say) but does not install; the silent one never polls again.
  const stay = () => undefined
  ctx.clock.advance(29 * 60_000)
  await round(ctx, [waiting], stay)
  t.same((await read(ctx, admin, id)).groups[0].boxes.map((b: any) => b.state), ['OFFERED', 'OFFERED'], 'within the timeout: pending')
  ctx.clock.advance(60_000)
  await round(ctx, [waiting], stay)
  const now = await read(ctx, admin, id)
  t.equal(stateOf(now, silent), 'FAILED')
  t.match(now.groups[0].boxes.find((b: any) => b.id === silent.id).reason, /silent since/)
  t.equal(stateOf(now, waiting), 'OFFERED', 'the box that polls is still pending')
  t.match(now, { status: 'RUNNING', failed: 1, pending: 1 })
})

t.test('pause, resume and cancel', async (t) => {
  const ctx = await testApp(t)
  const { admin, boxes } = await fleet(ctx, 6)
  const res = await create(ctx, admin, { version: NEW, groups: [{ percent: 33.3 }, { percent: 33.3 }, { percent: 33.4 }], errorThresholdPercent: 50, healthSeconds: 0 })
  const id = res.json().id
  t.same(res.json().groups.map((g: any) => g.boxes.length), [2, 2, 2])
  const inGroup = (n: number) => boxes.filter((b) => groupOf(res.json(), b) === n)

  const paused = await act(ctx, admin, id, 'pause')
  t.equal(paused.statusCode, 200)
  t.equal(paused.json().status, 'PAUSED')
  const again = await act(ctx, admin, id, 'pause')
  t.equal(again.statusCode, 409)
  t.match(errorOf(again).message, /the rollout is PAUSED; only a RUNNING rollout can be paused/)
  for (let r = 0; r < 3; r++) await round(ctx, boxes)
  t.ok(inGroup(1).every((b) => b.version === NEW), 'offers made before the pause stand')
  t.ok(inGroup(2).every((b) => b.offered.size === 0), 'no group opens while paused')
  t.equal((await read(ctx, admin, id)).groups[0].status, 'OPEN')

  const resumed = await act(ctx, admin, id, 'resume')
  t.equal(resumed.statusCode, 200)
  t.match(resumed.json(), { status: 'RUNNING', groups: [{ status: 'COMPLETED' }, { status: 'OPEN' }, { status: 'WAITING' }] }, 'resuming completes the group that reached its threshold and opens the next at once')
  t.equal((await act(ctx, admin, id, 'resume')).statusCode, 409)
  for (const box of inGroup(2)) await pollBox(ctx, box)
  t.ok(inGroup(2).every((b) => b.pending === NEW), 'the second group is offered the release')

  const cancelled = await act(ctx, admin, id, 'cancel')
  t.equal(cancelled.statusCode, 200)
  t.equal(cancelled.json().status, 'CANCELLED')
  for (let r = 0; r < 3; r++) await round(ctx, boxes, () => undefined)
  t.ok(inGroup(2).every((b) => b.pending === undefined && b.version === OLD), 'boxes not yet updated are no longer offered it')
  t.ok(inGroup(1).every((b) => b.version === NEW), 'updated boxes keep it')
  t.ok(inGroup(3).every((b) => b.offered.size === 0))
  const cancelAgain = await act(ctx, admin, id, 'cancel')
  t.equal(cancelAgain.statusCode, 409)
  t.match(errorOf(cancelAgain).message, /the rollout is CANCELLED; only a RUNNING or PAUSED rollout can be cancelled/)
  t.same(await eventsOf(ctx, id), ['agent_rollout.started', 'agent_rollout.group_completed', 'agent_rollout.cancelled'])
  t.equal((await act(ctx, admin, '00000000-0000-4000-8000-000000000000', 'pause')).statusCode, 404)
})

t.test("a box's own target set by hand wins: the rollout shows it excluded and never offers it", async (t) => {
  const ctx = await testApp(t)
  const { admin, boxes } = await fleet(ctx, 3)
  await storeRelease(ctx.app.db, ctx.config, '1.0.5')
  const [own, later, plain] = boxes as [Box, Box, Box]
  const target = (box: Box, version: string) =>
    ctx.app.inject({ method: 'PUT', url: `/apis/v2/admin/replay-servers/${box.id}/target-version`, headers: { authorization: admin }, payload: { version } })
  t.equal((await target(own, '1.0.5')).statusCode, 200)
  const res = await create(ctx, admin, { version: NEW, groups: [{ percent: 100 }], errorThresholdPercent: 100, healthSeconds: 0 })
  t.equal(res.statusCode, 201, res.body)
  const id = res.json().id
  t.equal(stateOf(res.json(), own), 'EXCLUDED')
  t.match(res.json().groups[0].boxes.find((b: any) => b.id === own.id).reason, /own target version 1.0.5 was set by hand/)
  await pollBox(ctx, later)
  t.equal(later.pending, NEW)
  t.equal((await target(later, '1.0.5')).statusCode, 200, 'an admin sets a target by hand during the rollout')
  await round(ctx, [own, plain])
  await pollBox(ctx, later)
  const now = await read(ctx, admin, id)
  t.equal(stateOf(now, later), 'EXCLUDED')
  t.equal(later.pending, '1.0.5', 'its own target stands')
  t.ok(!own.offered.has(NEW), 'the box excluded at the start was never offered the release')
  t.match(now, { status: 'COMPLETED', excluded: 2, succeeded: 1 }, 'excluded boxes do not count toward the thresholds')
})

t.test('bad inputs are 400 naming the field; a box in a running rollout is 409; members and staff are 403', async (t) => {
  const ctx = await testApp(t)
  const { admin, boxes } = await fleet(ctx, 3)
  const otherArea = await area(ctx, 'Elsewhere')
  const { id: unapproved } = await registeredBox(ctx, { deviceId: 'pending-box' })
  const base = { version: NEW, groups: [{ percent: 100 }], errorThresholdPercent: 10 }
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['unknown version', { ...base, version: '9.9.9' }, /version 9\.9\.9 is not an uploaded release/],
    ['not a version', { ...base, version: 'latest' }, /version/],
    ['percents under 100', { ...base, groups: [{ percent: 50 }, { percent: 40 }] }, /groups: the percents sum to 90; they must sum to 100/],
    ['percents over 100', { ...base, groups: [{ percent: 60 }, { percent: 60 }] }, /groups: the percents sum to 120/],
    ['a percent of 0', { ...base, groups: [{ percent: 0 }, { percent: 100 }] }, /groups\.0\.percent must be >= 0\.1/],
    ['more groups than boxes', { ...base, groups: [{ percent: 25 }, { percent: 25 }, { percent: 25 }, { percent: 25 }] }, /4 percent groups need at least one box each, and 3/],
    ['both percent and boxes', { ...base, groups: [{ percent: 100, boxes: [{ id: boxes[0]!.id }] }] }, /groups\[0\] names either percent or boxes, not both/],
    ['neither', { ...base, groups: [{}] }, /groups\[0\] names either percent or boxes, not neither/],
    ['unknown box', { ...base, groups: [{ boxes: [{ id: 'nope' }] }, { percent: 100 }] }, /groups\[0\]\.boxes\[0\] nope is not a box/],
    ['a box not approved', { ...base, groups: [{ boxes: [{ id: unapproved }] }, { percent: 100 }] }, /groups\[0\]\.boxes\[0\] .* is PENDING, not an approved box/],
    ['a box outside the area', { ...base, area: { id: otherArea }, groups: [{ boxes: [{ id: boxes[0]!.id }] }] }, /groups\[0\]\.boxes\[0\] .* is not in the area/],
    ['a box named twice', { ...base, groups: [{ boxes: [{ id: boxes[0]!.id }] }, { boxes: [{ id: boxes[0]!.id }] }, { percent: 100 }] }, /groups\[1\]\.boxes\[0\] .* is named twice/],
    ['unknown area', { ...base, area: { id: 'nowhere' } }, /area nowhere is not an area/],
    ['an area without boxes', { ...base, area: { id: otherArea } }, /area: no approved box in area/],
    ['error threshold over 100', { ...base, errorThresholdPercent: 101 }, /errorThresholdPercent/],
    ['error threshold missing', { version: NEW, groups: [{ percent: 100 }] }, /errorThresholdPercent/],
    ['success threshold 0', { ...base, successThresholdPercent: 0 }, /successThresholdPercent/],
    ['negative healthSeconds', { ...base, healthSeconds: -1 }, /healthSeconds/],
    ['silent timeout 0', { ...base, silentTimeoutMinutes: 0 }, /silentTimeoutMinutes/],
    ['no groups', { ...base, groups: [] }, /groups/]
  ]
  for (const [what, body, message] of cases) {
    const res = await create(ctx, admin, body)
    t.equal(res.statusCode, 400, `${what}: ${res.body}`)
    t.match(errorOf(res).message, message, what)
  }
  t.equal((await ctx.app.db.selectFrom('agent_rollouts').select('id').execute()).length, 0, 'nothing stored')

  const first = await create(ctx, admin, { ...base, groups: [{ boxes: [{ id: boxes[0]!.id }] }]  })
  t.equal(first.statusCode, 201, first.body)
  const second = await create(ctx, admin, base)
  t.equal(second.statusCode, 409)
  t.match(errorOf(second).message, new RegExp(`1 box\\(es\\) in scope are in a RUNNING or PAUSED rollout already: ${boxes[0]!.id} \\(rollout ${first.json().id}\\)`))

  for (const role of ['member', 'staff'] as const) {
    const { authorization } = await userWithToken(ctx, role)
    t.equal((await create(ctx, authorization, base)).statusCode, 403, `${role}: create`)
    t.equal((await ctx.app.inject({ method: 'GET', url: ROLLOUTS, headers: { authorization } })).statusCode, 403, `${role}: list`)
    t.equal((await act(ctx, authorization, first.json().id, 'cancel')).statusCode, 403, `${role}: cancel`)
  }
})

t.test('two server processes advancing one rollout open each group once and tell each event once', async (t) => {
  const ctx = await testApp(t)
  // The other process reads the real time: this one's clock is set to it.
  ctx.clock.set(new Date())
  const { admin, boxes } = await fleet(ctx, 6)
  const other = await secondServerProcess(t, ctx.config.DATABASE_URL, { REPLAY_POLL_INTERVAL_SECONDS: '1' })
  const res = await create(ctx, admin, { version: NEW, groups: [{ percent: 34 }, { percent: 33 }, { percent: 33 }], errorThresholdPercent: 50, healthSeconds: 0 })
  t.equal(res.statusCode, 201, res.body)
  const id = res.json().id
  let status = 'RUNNING'
  const opened = async () => (await read(ctx, admin, id)).groups.filter((g: any) => g.status !== 'WAITING').length
  for (let i = 0; i < 30 && status !== 'COMPLETED'; i++) {
    for (const box of boxes) {
      await pollBox(ctx, box)
      install(box)
      await pollBox(ctx, box)
    }
    await ctx.app.replayServerPolls.flush()
    const before = await opened()
    if (i % 2 === 0) {
      // This process advances, racing the second server's teller (every second).
      await ctx.app.agentRollouts.advance()
    } else {
      // The second server alone: its teller opens the next group (or completes) within a few seconds.
      const until = Date.now() + 15_000
      while (Date.now() < until && (await opened()) === before && (await read(ctx, admin, id)).status !== 'COMPLETED') {
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
    status = (await read(ctx, admin, id)).status
  }
  t.equal(status, 'COMPLETED')
  // The second server's teller may still be in a step: stopped, it finishes or rolls it back first,
  // so whatever it could add is in the outbox now; this one steps once more.
  await other.stop()
  await ctx.app.agentRollouts.advance()
  t.same(await eventsOf(ctx, id), [
    'agent_rollout.started',
    'agent_rollout.group_completed',
    'agent_rollout.group_completed',
    'agent_rollout.group_completed',
    'agent_rollout.completed'
  ])
  const done = await read(ctx, admin, id)
  t.match(done, { offered: 6, succeeded: 6 })
})

t.test('a target set by hand while the box waits for its group: excluded when the group opens, never offered', async (t) => {
  const ctx = await testApp(t)
  const { admin, boxes } = await fleet(ctx, 2)
  await storeRelease(ctx.app.db, ctx.config, '1.0.5')
  const [canary, waiting] = boxes as [Box, Box]
  const res = await create(ctx, admin, { version: NEW, groups: [{ boxes: [{ id: canary.id }] }, { percent: 100 }], errorThresholdPercent: 100, healthSeconds: 0 })
  const id = res.json().id
  t.equal(stateOf(res.json(), waiting), 'WAITING')
  const set = await ctx.app.inject({ method: 'PUT', url: `/apis/v2/admin/replay-servers/${waiting.id}/target-version`, headers: { authorization: admin }, payload: { version: '1.0.5' } })
  t.equal(set.statusCode, 200)
  await round(ctx, [canary])
  await round(ctx, boxes, () => undefined)
  const now = await read(ctx, admin, id)
  t.equal(now.groups[1].status, 'COMPLETED', 'the group opened (and, all its boxes excluded, completed)')
  t.equal(stateOf(now, waiting), 'EXCLUDED')
  t.ok(!waiting.offered.has(NEW), 'never offered the release')
  t.equal(waiting.pending, '1.0.5', 'its own target stands')
})

t.test('activeRollouts (for the fleet summary): RUNNING and PAUSED rollouts, newest first', async (t) => {
  const ctx = await testApp(t)
  const { admin, boxes } = await fleet(ctx, 3)
  const start = async (box: Box) => {
    ctx.clock.advance(1000)
    return (await create(ctx, admin, { version: NEW, groups: [{ boxes: [{ id: box.id }] }], errorThresholdPercent: 100, healthSeconds: 0 })).json().id as string
  }
  const first = await start(boxes[0]!)
  const second = await start(boxes[1]!)
  const third = await start(boxes[2]!)
  t.equal((await act(ctx, admin, second, 'pause')).statusCode, 200)
  t.equal((await act(ctx, admin, first, 'cancel')).statusCode, 200)
  t.same(await activeRollouts(ctx.app.db), [
    { id: third, version: NEW, status: 'RUNNING', _links: { self: { href: `${ROLLOUTS}/${third}` } } },
    { id: second, version: NEW, status: 'PAUSED', _links: { self: { href: `${ROLLOUTS}/${second}` } } }
  ])
})

t.test("the offer is the box's own pendingUpdate: its update window still applies; a box with no release for its architecture is excluded", async (t) => {
  const ctx = await testApp(t)
  const { admin, boxes } = await fleet(ctx, 2)
  const [windowed, other] = boxes as [Box, Box]
  const armOnly = '1.2.0'
  await storeRelease(ctx.app.db, ctx.config, armOnly, 'arm64')
  const window = await ctx.app.inject({
    method: 'PUT',
    url: `/apis/v2/admin/replay-servers/${windowed.id}/target-version`,
    headers: { authorization: admin },
    payload: { version: null, updateWindow: '02:00-05:00' }
  })
  t.equal(window.statusCode, 200)
  const res = await create(ctx, admin, { version: NEW, groups: [{ percent: 100 }], errorThresholdPercent: 100, healthSeconds: 0 })
  t.equal(res.statusCode, 201, res.body)
  const answer = (await poll(ctx, windowed.serverId, `version=${OLD}&architecture=amd64`)).json()
  t.match(answer.pendingUpdate, { version: NEW, release: { version: NEW }, window: { start: /T/, end: /T/ } }, 'offered with its update window')
  t.equal((await act(ctx, admin, res.json().id, 'cancel')).statusCode, 200)

  // Boxes that report amd64, and a release built for arm64 only.
  const arm = await create(ctx, admin, { version: armOnly, groups: [{ percent: 100 }], errorThresholdPercent: 100, healthSeconds: 0 })
  t.equal(arm.statusCode, 201, arm.body)
  t.same(arm.json().groups[0].boxes.map((b: any) => b.state), ['EXCLUDED', 'EXCLUDED'])
  t.match(arm.json().groups[0].boxes[0].reason, /no release of 1\.2\.0 for its architecture amd64/)
  await pollBox(ctx, other)
  t.equal(other.pending, undefined, 'not offered a package it cannot install')
})

t.test('a box that gave up on this very version before counts as failed: the agent does not try a version it rolled back again', async (t) => {
  const ctx = await testApp(t)
  const { admin, boxes } = await fleet(ctx, 2)
  const [box, good] = boxes as [Box, Box]
  const set = await ctx.app.inject({ method: 'PUT', url: `/apis/v2/admin/replay-servers/${box.id}/target-version`, headers: { authorization: admin }, payload: { version: NEW } })
  t.equal(set.statusCode, 200)
  // As the agent does (update/decide.ts): its record of the version it rolled back stays, and every poll reports it.
  box.update = { state: 'ROLLED_BACK', version: NEW, reason: 'a bad disk' }
  await pollBox(ctx, box)
  t.equal(box.pending, undefined, 'given up: no longer offered by its own target')
  const res = await create(ctx, admin, { version: NEW, groups: [{ percent: 100 }], errorThresholdPercent: 100, healthSeconds: 0 })
  t.equal(stateOf(res.json(), box), 'OFFERED', 'not excluded: its target is this very version')
  await round(ctx, boxes, (b) => (b === good ? install(b) : undefined))
  const now = await read(ctx, admin, res.json().id)
  t.equal(stateOf(now, box), 'FAILED')
  t.match(now.groups[0].boxes.find((b: any) => b.id === box.id).reason, /reported ROLLED_BACK: a bad disk/)
  t.equal(stateOf(now, good), 'SUCCEEDED')
})

t.test('group sizes: cumulative percents rounded up, every group of more than 0 % at least one box, every box in one group', async (t) => {
  t.same(groupSizes([5, 15, 80], 10), [1, 1, 8], '0.5 box rounds up to one')
  t.same(groupSizes([5, 15, 80], 100), [5, 15, 80])
  t.same(groupSizes([5, 15, 80], 3), [1, 1, 1], 'as many boxes as groups: one each')
  t.same(groupSizes([50, 1, 1, 48], 10), [5, 1, 1, 3], 'a small group still gets its box, taken from the groups after it')
  t.same(groupSizes([33.3, 33.3, 33.4], 7), [3, 2, 2])
  t.same(groupSizes([100], 1), [1])
  for (const total of [4, 9, 17, 250]) {
    const sizes = groupSizes([1, 9, 30, 60], total)
    t.equal(sizes.reduce((a, b) => a + b, 0), total, `${total} boxes: each in one group`)
    t.ok(sizes.every((n) => n >= 1), `${total} boxes: no empty group`)
  }
})

t.test("with the app's own box health: a box whose report shows a camera FAILED after it ran the version fails; one whose cameras record succeeds", async (t) => {
  const ctx = await testApp(t)
  const { admin, boxes } = await fleet(ctx, 2)
  const [good, broken] = boxes as [Box, Box]
  const camera = (state: 'RECORDING' | 'FAILED' | 'DISABLED', id = 'cam-1') => ({ id, state, lastSegmentAt: null, restarts: 0, problem: state === 'FAILED' ? 'connection refused' : null })
  const report = (cameras: ReturnType<typeof camera>[]) => ({ cameras, disk: { freeBytes: 50, totalBytes: 100, recordingsBytes: 10, hoursKept: 5 }, temperatureCelsius: null, memoryBytes: 1, uptimeSeconds: 1 })
  const tell = (box: Box, cameras: ReturnType<typeof camera>[]) => recordHealth(ctx.app.db, box.id, report(cameras), 0, ctx.clock.now(), 10)
  const res = await create(ctx, admin, { version: NEW, groups: [{ percent: 100 }], errorThresholdPercent: 100, successThresholdPercent: 50, healthSeconds: 600 })
  t.equal(res.statusCode, 201, res.body)
  const id = res.json().id
  await round(ctx, boxes)
  // After the update both record; a disabled camera is not asked to.
  await tell(good, [camera('RECORDING'), camera('DISABLED', 'cam-2')])
  await tell(broken, [camera('RECORDING')])
  ctx.clock.advance(60_000)
  await round(ctx, boxes)
  let now = await read(ctx, admin, id)
  t.same([stateOf(now, good), stateOf(now, broken)], ['UPDATED', 'UPDATED'], 'recording, not yet for healthSeconds')
  await tell(broken, [camera('FAILED')])
  ctx.clock.advance(600_000)
  await round(ctx, boxes)
  now = await read(ctx, admin, id)
  t.equal(stateOf(now, good), 'SUCCEEDED', 'its cameras recorded for healthSeconds after it ran the version')
  t.equal(stateOf(now, broken), 'FAILED', 'its camera failed within healthSeconds')
  t.match(now.groups[0].boxes.find((b: any) => b.id === broken.id).reason, /cameras stopped recording/)
})

t.test("with the app's own box health: a box whose report leaves out a camera its configuration films never counts as updated", async (t) => {
  const ctx = await testApp(t)
  const { admin, boxes } = await fleet(ctx, 1)
  const [box] = boxes as [Box]
  t.equal((await putConfig(ctx, admin, box.id, { cameras: [camera('cam-1', { courtIds: [] }), camera('cam-2', { isEnabled: false })] })).statusCode, 200)
  const disk = { freeBytes: 50, totalBytes: 100, recordingsBytes: 10, hoursKept: 5 }
  // A release that breaks the agent's cameras so that it no longer reports them: nothing in its report is not RECORDING.
  const tell = (cameras: Array<{ id: string; state: 'RECORDING' | 'DISABLED' }>) =>
    recordHealth(ctx.app.db, box.id, { cameras: cameras.map((c) => ({ ...c, lastSegmentAt: null, restarts: 0, problem: null })), disk, temperatureCelsius: null, memoryBytes: 1, uptimeSeconds: 1 }, 0, ctx.clock.now(), 10)
  const res = await create(ctx, admin, { version: NEW, groups: [{ percent: 100 }], errorThresholdPercent: 100, healthSeconds: 600 })
  t.equal(res.statusCode, 201, res.body)
  const id = res.json().id
  await round(ctx, boxes)
  for (const cameras of [[], [{ id: 'cam-2', state: 'DISABLED' as const }]]) {
    await tell(cameras)
    ctx.clock.advance(700_000)
    await round(ctx, boxes)
    t.not(stateOf(await read(ctx, admin, id), box), 'SUCCEEDED', `reported ${JSON.stringify(cameras.map((c) => c.id))}: not updated`)
  }
  await tell([{ id: 'cam-1', state: 'RECORDING' }, { id: 'cam-2', state: 'DISABLED' }])
  ctx.clock.advance(700_000)
  await round(ctx, boxes)
  t.equal(stateOf(await read(ctx, admin, id), box), 'SUCCEEDED', 'its configured camera records: updated')
})

t.test("an admin's API key or read-only token may not start, stop or read rollouts, nor read the fleet: only an admin's full token", async (t) => {
  const ctx = await testApp(t)
  const { admin, boxes } = await fleet(ctx, 1)
  const running = await create(ctx, admin, { version: NEW, groups: [{ boxes: [{ id: boxes[0]!.id }] }], errorThresholdPercent: 100 })
  t.equal(running.statusCode, 201, running.body)
  const id = running.json().id
  const user = await userWithApiKey(ctx, 'admin')
  const readOnly = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'password', username: user.email, password: user.password, scope: 'read' }).toString()
  })
  t.equal(readOnly.statusCode, 201, readOnly.body)
  const credentials: Array<[string, Record<string, string>, number]> = [
    ["an admin's API key", { 'x-api-key': user.apiKey }, 401],
    ["an admin's read-only token", { authorization: `Bearer ${readOnly.json().access_token}` }, 403]
  ]
  const calls: Array<[string, 'GET' | 'POST', string, object?]> = [
    ['start', 'POST', ROLLOUTS, { version: NEW, groups: [{ percent: 100 }], errorThresholdPercent: 100 }],
    ['list', 'GET', ROLLOUTS],
    ['read', 'GET', `${ROLLOUTS}/${id}`],
    ['pause', 'POST', `${ROLLOUTS}/${id}/pause`],
    ['cancel', 'POST', `${ROLLOUTS}/${id}/cancel`],
    ['the fleet', 'GET', '/apis/v2/admin/fleet']
  ]
  for (const [who, headers, status] of credentials) {
    for (const [what, method, url, payload] of calls) {
      const res = await ctx.app.inject({ method, url, headers, ...(payload ? { payload } : {}) })
      t.equal(res.statusCode, status, `${who}: ${what}`)
      errorOf(res)
    }
  }
  t.equal((await read(ctx, admin, id)).status, 'RUNNING', 'the rollout runs on')
  t.equal((await ctx.app.db.selectFrom('agent_rollouts').select('id').execute()).length, 1, 'none started')
})

t.test("cancelling a rollout leaves a target an admin set by hand to the same version on a box it never offered", async (t) => {
  const ctx = await testApp(t)
  const { admin, boxes } = await fleet(ctx, 2)
  const [canary, waiting] = boxes as [Box, Box]
  const res = await create(ctx, admin, { version: NEW, groups: [{ boxes: [{ id: canary.id }] }, { percent: 100 }], errorThresholdPercent: 100, healthSeconds: 0 })
  const id = res.json().id
  t.equal(stateOf(res.json(), waiting), 'WAITING')
  // The admin does not wait for the rollout: this box gets the release now, by hand.
  const set = await ctx.app.inject({ method: 'PUT', url: `/apis/v2/admin/replay-servers/${waiting.id}/target-version`, headers: { authorization: admin }, payload: { version: NEW } })
  t.equal(set.statusCode, 200, set.body)
  t.equal((await act(ctx, admin, id, 'cancel')).statusCode, 200)
  await pollBox(ctx, waiting)
  t.equal(waiting.pending, NEW, 'its own target stands')
  await pollBox(ctx, canary)
  t.equal(canary.pending, undefined, 'the offer the rollout made is withdrawn')
})
