// Footage takedowns: a takedown covers the footage, not one replay. Every other replay of the minutes
// goes, no member may ask for them again, the box is told to delete them and confirms, and staff see
// each box's deletion pending, then done. Who may, and what input is refused.
import t from 'tap'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { errorOf, userWithToken } from '../test-support/app.js'
import { camera, poll, putConfig } from '../replay-servers/test-helpers.js'
import { createVenueItem } from '../venue/service.js'
import { DEVICE, REPLAYS, SHA, filmedVenue as setup, storedClip } from '../replays/test-helpers.js'

const ADMIN_REPLAYS = '/apis/v2/admin/replays'
const takedownsOf = (courtId: string) => `/apis/v2/admin/courts/${courtId}/takedowns`
const CONFIRM = '/apis/v2/replay-servers/device/footage-takedowns'
const at = (time: string) => `2026-03-01T${time}.000Z`

type Setup = Awaited<ReturnType<typeof setup>>

/** A replay of court1 by `who`, taken to READY with its clip in the bucket; its id and the clip's path. */
async function readyReplay(s: Setup, who: { authorization: string }, body: object = {}) {
  const asked = await s.call('POST', REPLAYS, who, { court: { id: s.venue.court1.id }, seconds: 10, ...body })
  if (asked.statusCode !== 201) throw new Error(asked.body)
  const id = asked.json().id as string
  await s.call('PUT', `${DEVICE}/${id}/status`, s.device, { status: 'EXPORTING' })
  const name = `cam-1/${id}.mp4`
  const ready = await s.call('PUT', `${DEVICE}/${id}/status`, s.device, { status: 'READY', location: storedClip(s.bucketDir, name), durationSeconds: 10, sizeBytes: 28, sha256: SHA })
  if (ready.statusCode !== 200) throw new Error(ready.body)
  return { id, path: join(s.bucketDir, name) }
}

t.test("a replay's takedown takes its footage down: the other replays of those minutes, new requests, the box's recording", async (t) => {
  const s = await setup(t)
  const { ctx, call, member, venue } = s
  const staff = await userWithToken(ctx, 'staff')
  const other = await userWithToken(ctx, 'member')
  const mine = await readyReplay(s, member)
  const theirs = await readyReplay(s, other)
  // Later minutes of the same court: not taken down.
  ctx.clock.advance(5 * 60_000)
  const later = await readyReplay(s, other)

  const done = await call('POST', `${ADMIN_REPLAYS}/${mine.id}/takedown`, staff, { reason: 'a parent asked' })
  t.equal(done.statusCode, 200, done.body)
  t.match(done.json(), { status: 'TAKEN_DOWN', takedown: { by: { id: staff.id }, reason: 'a parent asked' } })
  t.notOk(existsSync(mine.path))

  const seen = (await call('GET', `${REPLAYS}/${theirs.id}`, other)).json()
  t.equal(seen.status, 'TAKEN_DOWN', "another member's replay of the same minutes is taken down too")
  t.notOk('downloadUrl' in seen, 'no link to it any more')
  t.notOk(existsSync(theirs.path), 'its clip left the bucket')
  t.equal((await call('GET', `${REPLAYS}/${later.id}`, other)).json().status, 'READY', 'a replay of other minutes stays')
  t.ok(existsSync(later.path))

  // Those minutes are still within REPLAY_MAX_AGE_SECONDS: asking for them again is refused, naming the takedown.
  const again = await call('POST', REPLAYS, other, { court: { id: venue.court1.id }, seconds: 30, end: at('10:00:05') })
  t.equal(again.statusCode, 409, again.body)
  const takedowns = (await call('GET', takedownsOf(venue.court1.id), staff)).json()
  t.equal(takedowns._total, 1)
  const takedown = takedowns.items[0]
  t.match(errorOf(again).message, new RegExp(`was taken down \\(takedown "?${takedown.id}"?\\)`))
  t.equal((await call('POST', REPLAYS, other, { court: { id: venue.court1.id }, seconds: 10 })).statusCode, 201, 'minutes after it may be asked for')

  t.match(takedown, {
    court: { id: venue.court1.id },
    start: at('09:59:50'),
    end: at('10:00:00'),
    reason: 'a parent asked',
    replay: { id: mine.id },
    replaysTakenDown: 2,
    deletions: [{ replayServer: { id: s.boxId }, status: 'PENDING', deletedDate: null, deletedFiles: null }],
    createdBy: { id: staff.id },
    _links: { self: { href: `${takedownsOf(venue.court1.id)}/${takedown.id}` } }
  })

  // The box is told in its status answer, and confirms through its device route.
  const told = (await poll(ctx, s.serverId)).json()
  t.same(told.footageTakedowns, [{ id: takedown.id, court: { id: venue.court1.id }, start: at('09:59:50'), end: at('10:00:00') }])
  ctx.clock.advance(30_000)
  const confirmed = await call('PUT', `${CONFIRM}/${takedown.id}/deletion`, s.device, { deletedFiles: 3 })
  t.equal(confirmed.statusCode, 200, confirmed.body)
  t.same(confirmed.json(), { replayServer: { id: s.boxId }, status: 'DELETED', deletedDate: at('10:05:30'), deletedFiles: 3 })
  t.notOk('footageTakedowns' in (await poll(ctx, s.serverId)).json(), 'once confirmed, no longer in its answer')
  const one = (await call('GET', `${takedownsOf(venue.court1.id)}/${takedown.id}`, staff)).json()
  t.same(one.deletions, [{ replayServer: { id: s.boxId }, status: 'DELETED', deletedDate: at('10:05:30'), deletedFiles: 3 }], 'staff see it confirmed')
  ctx.clock.advance(1000)
  t.equal((await call('PUT', `${CONFIRM}/${takedown.id}/deletion`, s.device, { deletedFiles: 0 })).json().deletedDate, at('10:05:30'), 'a second confirmation keeps the first')
  t.equal((await call('PUT', `${CONFIRM}/nope/deletion`, s.device, { deletedFiles: 0 })).statusCode, 404, 'a takedown the box was not told of')
  t.equal((await call('POST', `${ADMIN_REPLAYS}/${theirs.id}/takedown`, staff, { reason: 'again' })).statusCode, 409, 'taken down once')
  t.equal((await call('GET', `${takedownsOf(venue.court1.id)}/nope`, staff)).statusCode, 404)
  t.equal((await call('GET', `${takedownsOf(venue.court2.id)}/${takedown.id}`, staff)).statusCode, 404, "another court's path finds nothing")
})

t.test("a court's takedown by interval: every replay of the court or cut from a camera filming it; staff and admins only; bad input is 400 naming the field", async (t) => {
  const s = await setup(t)
  const { ctx, call, member, venue, device } = s
  const staff = await userWithToken(ctx, 'staff')
  const admin = await userWithToken(ctx, 'admin')
  // cam-1 films court1 and court3 beside it: a replay of court3 from it shows court1.
  const court3 = await createVenueItem(ctx.app.db, 'courts', { name: 'Court 3', area: { id: venue.hall.id } }, ctx.clock)
  const config = await putConfig(ctx, s.admin, s.boxId, { cloudStorageBucket: s.bucket, cameras: [camera('cam-1', { courtIds: [venue.court1.id, court3.id] })] })
  t.equal(config.statusCode, 200, config.body)
  const own = await readyReplay(s, member)
  const beside = await readyReplay(s, member, { court: { id: court3.id } })
  const path = takedownsOf(venue.court1.id)
  const body = { start: at('09:50:00'), end: at('10:00:00'), reason: 'filmed by mistake' }

  const refused = await call('POST', path, member, body)
  t.equal(refused.statusCode, 403, 'a member cannot')
  errorOf(refused)
  t.equal((await call('GET', path, member)).statusCode, 403)
  t.equal((await call('POST', path, undefined, body)).statusCode, 401, 'nor can anyone unsigned')
  const boxTried = await call('POST', path, device, body)
  t.ok([401, 403].includes(boxTried.statusCode), `nor a box: ${boxTried.statusCode}`)
  errorOf(boxTried)
  t.ok([401, 403].includes((await call('GET', path, device)).statusCode))
  t.equal((await call('PUT', `${CONFIRM}/x/deletion`, staff, { deletedFiles: 0 })).statusCode, 401, "a person's token confirms nothing for a box")

  const cases: Array<[string, object, RegExp]> = [
    [path, { ...body, end: body.start }, /^body\.end must be after body\.start/],
    [path, { ...body, start: at('10:00:00'), end: at('09:00:00') }, /^body\.end must be after body\.start/],
    [takedownsOf('nope'), body, /^params\.id: no court "?nope"?/],
    [path, { ...body, end: '2026-03-08T10:00:00.000Z' }, /^body\.end .* is in the future/],
    [path, { ...body, start: '2026-01-01T00:00:00.000Z' }, /^body\.start: a takedown spans at most 30 days \(REPLAY_RETENTION_DAYS\)/],
    [path, { ...body, reason: ' ' }, /reason/],
    [path, { ...body, start: 'yesterday' }, /start/]
  ]
  for (const [where, bad, message] of cases) {
    const res = await call('POST', where, staff, bad)
    t.equal(res.statusCode, 400, JSON.stringify(bad))
    t.match(errorOf(res).message, message)
  }
  t.equal((await call('GET', path, staff)).json()._total, 0, 'nothing half-written')
  t.equal((await call('GET', `${REPLAYS}/${own.id}`, member)).json().status, 'READY')

  const made = await call('POST', path, admin, body)
  t.equal(made.statusCode, 201, made.body)
  t.match(made.json(), { court: { id: venue.court1.id }, start: body.start, end: body.end, replay: null, replaysTakenDown: 2, createdBy: { id: admin.id } })
  for (const replay of [own, beside]) {
    t.equal((await call('GET', `${REPLAYS}/${replay.id}`, member)).json().status, 'TAKEN_DOWN')
    t.notOk(existsSync(replay.path))
  }
  const third = await call('POST', REPLAYS, member, { court: { id: court3.id }, seconds: 10 })
  t.equal(third.statusCode, 409, "court3's replay from the camera that films court1 too is refused")
  t.match(errorOf(third).message, /was taken down/)
})
