// "Do not film" intervals: who may keep them, what is checked, what the boxes of the court's area
// are told in their status answer (and when it changes), and that no replay may overlap one.
import t from 'tap'
import { runCli } from '../cli.js'
import { migrateToLatest, migratorFor } from '../db/database.js'
import { errorOf, userWithToken } from '../test-support/app.js'
import { camera, club, poll, putConfig } from '../replay-servers/test-helpers.js'
import { filmedVenue as setup } from '../replays/test-helpers.js'
import { createVenueItem } from '../venue/service.js'

const at = (iso: string) => `2026-03-01T${iso}.000Z`
const pathOf = (courtId: string) => `/apis/v2/admin/courts/${courtId}/do-not-film`

t.test('staff and admins add, list and remove intervals; members cannot; bad intervals are 400 naming the rule', async (t) => {
  const { ctx, call, member, venue } = await setup(t)
  const staff = await userWithToken(ctx, 'staff')
  const path = pathOf(venue.court1.id)
  const camp = { start: at('11:00:00'), end: at('13:00:00'), reason: 'Junior camp' }

  const refused = await call('POST', path, member, camp)
  t.equal(refused.statusCode, 403, 'a member cannot stop the cameras')
  errorOf(refused)
  t.equal((await call('GET', path, member)).statusCode, 403)
  t.equal((await call('POST', path, undefined, camp)).statusCode, 401)

  const cases: Array<[object, number, RegExp]> = [
    [{ ...camp, end: camp.start }, 400, /body.end must be after body.start/],
    [{ ...camp, start: at('08:00:00'), end: at('09:00:00') }, 400, /is past/],
    [{ ...camp, end: '2027-03-02T13:00:00.000Z' }, 400, /at most 366 days/],
    [{ ...camp, reason: ' ' }, 400, /reason/],
    [{ start: camp.start, end: camp.end }, 400, /reason/],
    [{ ...camp, start: 'tomorrow' }, 400, /start/]
  ]
  for (const [body, status, message] of cases) {
    const res = await call('POST', path, staff, body)
    t.equal(res.statusCode, status, JSON.stringify(body))
    t.match(errorOf(res).message, message)
  }
  t.equal((await call('POST', pathOf('nope'), staff, camp)).statusCode, 404, 'no such court')

  const made = await call('POST', path, staff, camp)
  t.equal(made.statusCode, 201, made.body)
  t.match(made.json(), { court: { id: venue.court1.id }, start: camp.start, end: camp.end, reason: 'Junior camp', createdBy: { id: staff.id } })
  const admin = await userWithToken(ctx, 'admin')
  const listed = (await call('GET', path, admin)).json()
  t.equal(listed._total, 1)
  t.same(listed.items[0].id, made.json().id)

  t.equal((await call('POST', path, staff, { start: at('10:00:00'), end: at('10:05:00'), reason: 'Filming a lesson? No' })).statusCode, 201)
  ctx.clock.advance(6 * 60_000)
  t.same((await call('GET', path, staff)).json().items.map((i: { id: string }) => i.id), [made.json().id], 'an interval that ended is no longer listed')
  t.equal((await call('GET', `${path}?past=true`, staff)).json()._total, 2, 'unless asked for')

  t.equal((await call('DELETE', `${path}/${made.json().id}`, member)).statusCode, 403)
  t.equal((await call('DELETE', `${pathOf(venue.court2.id)}/${made.json().id}`, staff)).statusCode, 404, "another court's path finds nothing")
  t.equal((await call('DELETE', `${path}/${made.json().id}`, staff)).statusCode, 204)
  t.equal((await call('DELETE', `${path}/${made.json().id}`, staff)).statusCode, 404)
})

t.test("the boxes of the court's area are told in their status answer, at once, and not the others'", async (t) => {
  const { ctx, call, venue, serverId } = await setup(t)
  const staff = await userWithToken(ctx, 'staff')
  const idle = await poll(ctx, serverId)
  t.notOk('doNotFilm' in idle.json(), 'none: not in the answer')
  const etag = idle.headers.etag as string
  t.equal((await poll(ctx, serverId, '', { 'if-none-match': etag })).statusCode, 304)

  const made = (await call('POST', pathOf(venue.court1.id), staff, { start: at('10:30:00'), end: at('11:00:00'), reason: 'Private event' })).json()
  await call('POST', pathOf(venue.court2.id), staff, { start: at('10:30:00'), end: at('11:00:00'), reason: 'Another area' })
  const told = await poll(ctx, serverId, '', { 'if-none-match': etag })
  t.equal(told.statusCode, 200, 'the kept answer is out of date at once')
  t.same(told.json().doNotFilm, [{ court: { id: venue.court1.id }, start: at('10:30:00'), end: at('11:00:00') }], "only its own area's courts, never the reason")

  // The command line writes the same database from another process: the answer changes all the same.
  // (It runs on the real clock, the app on the test's: a date ahead of both.)
  const later = { start: '2099-03-01T12:00:00.000Z', end: '2099-03-01T12:30:00.000Z' }
  const added = await club(ctx, 'do-not-film', 'add', venue.court1.id, '--start', later.start, '--end', later.end, '--reason', 'Tournament')
  t.equal(added.code, 0, added.err)
  t.match(added.json, { court: { id: venue.court1.id }, createdBy: null })
  t.same((await poll(ctx, serverId)).json().doNotFilm.map((i: { start: string }) => i.start), [at('10:30:00'), later.start], 'soonest first')
  const listed = await club(ctx, 'do-not-film', 'list', venue.court1.id)
  t.same(listed.json.items.map((i: { start: string }) => i.start), [later.start], "by the command line's clock, only the one to come")
  t.equal((await club(ctx, 'do-not-film', 'delete', venue.court1.id, made.id)).code, 0)
  t.equal((await club(ctx, 'do-not-film', 'add', venue.court1.id, '--end', 'soon', '--reason', 'x')).code, 1, 'a bad date is refused')
  t.same((await poll(ctx, serverId)).json().doNotFilm.map((i: { start: string }) => i.start), [later.start])
})

t.test('no replay may overlap an interval: 409 naming the rule; right before it is fine', async (t) => {
  const { ctx, call, member, venue } = await setup(t)
  const staff = await userWithToken(ctx, 'staff')
  t.equal((await call('POST', pathOf(venue.court1.id), staff, { start: at('09:50:00'), end: at('10:30:00'), reason: 'Junior camp' })).statusCode, 201)
  const ask = (body: object) => call('POST', '/apis/v2/replays', member, { court: { id: venue.court1.id }, ...body })

  const inside = await ask({ seconds: 30 })
  t.equal(inside.statusCode, 409, 'the last 30 s are inside it')
  t.match(errorOf(inside).message, `court ${venue.court1.id} is not filmed from ${at('09:50:00')} to ${at('10:30:00')} ("do not film"): no replay may overlap it`)
  t.notMatch(inside.body, /Junior camp/, 'the reason is not told to members')
  const across = await ask({ seconds: 60, end: at('09:50:30') })
  t.equal(across.statusCode, 409, 'one reaching into it')
  t.equal((await call('POST', '/apis/v2/replays', staff, { court: { id: venue.court1.id } })).statusCode, 409, 'staff too')
  const before = await ask({ seconds: 30, end: at('09:50:00') })
  t.equal(before.statusCode, 201, 'one that ends as it starts')
})

t.test("a camera filming two courts: a replay of one is refused while the other is not filmed (its picture shows both)", async (t) => {
  const { ctx, call, member, venue, admin, boxId, bucket } = await setup(t)
  const beside = await createVenueItem(ctx.app.db, 'courts', { name: 'Court 1b', area: { id: venue.hall.id } }, ctx.clock)
  const wide = await putConfig(ctx, admin, boxId, { cloudStorageBucket: bucket, cameras: [camera('cam-1', { courtIds: [venue.court1.id, beside.id] })] })
  t.equal(wide.statusCode, 200, wide.body)
  const staff = await userWithToken(ctx, 'staff')
  // Marked after it began (a private event noticed late): the box holds footage of its first minutes.
  t.equal((await call('POST', pathOf(beside.id), staff, { start: at('09:50:00'), end: at('10:30:00'), reason: 'Private event' })).statusCode, 201)
  const shared = await call('POST', '/apis/v2/replays', member, { court: { id: venue.court1.id }, seconds: 30 })
  t.equal(shared.statusCode, 409, "court 1's camera films court 1b too")
  t.match(errorOf(shared).message, `court ${beside.id} is not filmed from ${at('09:50:00')} to ${at('10:30:00')} ("do not film")`)
  t.equal((await call('POST', '/apis/v2/replays', member, { court: { id: venue.court1.id }, seconds: 30, end: at('09:50:00') })).statusCode, 201, 'before it, as ever')
})

t.test('club do-not-film add: the reason is held to the route\'s rule (something said, at most 200 characters)', async (t) => {
  const { ctx, venue } = await setup(t)
  const club = async (...args: string[]) => {
    const err: string[] = []
    const code = await runCli(args, { DATABASE_URL: ctx.config.DATABASE_URL, PASSWORD_HASH_COST: '1024' }, () => undefined, (s) => err.push(s))
    return { code, err: err.join('\n') }
  }
  // The command line runs on the system clock: an interval ending in an hour of real time.
  const end = new Date(Date.now() + 3_600_000).toISOString()
  for (const reason of ['   ', 'x'.repeat(201)]) {
    const refused = await club('do-not-film', 'add', venue.court1.id, '--end', end, '--reason', reason)
    t.equal(refused.code, 2, `--reason of ${reason.length} characters`)
    t.match(refused.err, '--reason')
  }
  t.equal((await ctx.app.db.selectFrom('do_not_film_intervals').select('id').execute()).length, 0, 'nothing stored')
  t.equal((await club('do-not-film', 'add', venue.court1.id, '--end', end, '--reason', 'Junior camp')).code, 0)
})

t.test('0024 and 0023 go down and up again: the intervals table and its trigger, the takedown columns', async (t) => {
  const { ctx, call, member, venue, device } = await setup(t)
  const staff = await userWithToken(ctx, 'staff')
  const db = ctx.app.db
  t.equal((await call('POST', pathOf(venue.court1.id), staff, { start: at('11:00:00'), end: at('12:00:00'), reason: 'Camp' })).statusCode, 201)
  const kept = (await call('POST', '/apis/v2/replays', member, { court: { id: venue.court1.id } })).json()
  const taken = (await call('POST', '/apis/v2/replays', member, { court: { id: venue.court1.id }, end: at('09:59:00') })).json()
  await call('PUT', `/apis/v2/replay-servers/device/replays/${taken.id}/status`, device, { status: 'EXPORTING' })
  t.equal((await call('POST', `/apis/v2/admin/replays/${taken.id}/takedown`, staff, { reason: 'x' })).statusCode, 200)

  await migratorFor(db).migrateTo('0020_replay_server_key_adoption')
  t.same((await db.selectFrom('replays').select('id').execute()).map((r) => r.id), [kept.id], 'a taken-down replay has no status to be going down')
  await migrateToLatest(db)
  const counter = async () => (await db.selectFrom('replay_server_status_changes').select('counter').executeTakeFirstOrThrow()).counter
  const before = await counter()
  t.equal((await call('POST', pathOf(venue.court1.id), staff, { start: at('11:00:00'), end: at('12:00:00'), reason: 'Camp' })).statusCode, 201)
  t.equal(await counter(), before + 1, 'the trigger is back: a new interval moves the status change counter')
  t.equal((await call('POST', `/apis/v2/admin/replays/${kept.id}/takedown`, staff, { reason: 'y' })).statusCode, 200, 'and a takedown works again')
})
