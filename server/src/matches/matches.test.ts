// Matches (issue 49): a booking or event on a filmed court becomes one match with an angle per
// camera once it has ended, made once; who sees it, its chapters, its links in the footage log, what
// it costs, when it expires and who is mailed.
import t from 'tap'
import { errorOf } from '../test-support/app.js'
import { club } from '../replay-servers/test-helpers.js'
import { issued, packageTemplate, threeReplays } from '../packages/test-fixtures.js'
import { DEVICE, REPLAYS } from '../replays/test-helpers.js'
import { deleteExpiredReplays } from '../replays/clips.js'
import { ReplayStorage } from '../replays/storage.js'
import { migrateToLatest, migratorFor, openDatabase } from '../db/database.js'
import { dueMatches, filmingCameras, mailReadyMatches, makeMatch } from './service.js'
import { MATCHES, REDEEM, angleRows, at, boxMakesReady, matchRows, playedMatch, setup, teller } from './test-helpers.js'

t.test('a booking on a court two cameras film: after its end and the grace, one match, one MATCH replay per camera, listed to the box with its chapters', async (t) => {
  const s = await setup(t)
  const { ctx, call } = s
  const { redemption, mine, match } = await playedMatch(t, s)
  t.match(match, { source_type: 'BOOKING', redemption_id: redemption.id, court_id: s.venue.court1.id, start_at: '2026-03-01T10:30:00.000Z', end_at: '2026-03-01T11:30:00.000Z' })
  const angles = await angleRows(ctx.app.db)
  t.same(angles.map((a) => [a.camera_id, a.status, a.start_at, a.end_at, a.user_id, a.match_id, a.package_id]), [
    ['cam-1', 'REQUESTED', match.start_at, match.end_at, s.member.id, match.id, null],
    ['cam-2', 'REQUESTED', match.start_at, match.end_at, s.member.id, match.id, null]
  ], 'the whole interval of each camera, the redeemer its user, no package item')
  const listed = (await call('GET', DEVICE, s.device)).json().items.filter((r: { kind: string }) => r.kind === 'MATCH').sort((a: { cameraId: string }, b: { cameraId: string }) => a.cameraId.localeCompare(b.cameraId))
  // The member's clip at 10:59:30 is 29 min 30 s into the match; the stranger's is no chapter.
  const chapters = [{ at: 1770, label: 'Replay 10:59' }]
  t.same(listed.map((r: object) => ({ ...r, id: undefined })), [
    { id: undefined, kind: 'MATCH', status: 'REQUESTED', cameraId: 'cam-1', start: match.start_at, end: match.end_at, chapters },
    { id: undefined, kind: 'MATCH', status: 'REQUESTED', cameraId: 'cam-2', start: match.start_at, end: match.end_at, chapters }
  ], 'the box sees both angles with the marks (no replay ids)')
  t.equal(mine.start, '2026-03-01T10:59:30.000Z')

  // Ticking again makes nothing more.
  at(ctx, '2026-03-01T11:35:00.000Z')
  await s.tell.make()
  t.equal((await matchRows(ctx.app.db)).length, 1, 'one match')
  t.equal((await angleRows(ctx.app.db)).length, 2, 'two angles')
})

t.test('two processes that both read a booking as due make its match once: the unique key, not the read, decides', async (t) => {
  const s = await setup(t)
  const { ctx } = s
  await s.book(s.venue.court1.id, '2026-03-01T10:30:00.000Z', '2026-03-01T11:30:00.000Z')
  at(ctx, '2026-03-01T11:31:00.000Z')
  const [due] = await dueMatches(ctx.app.db, ctx.clock.now(), s.tell.deps.settings)
  const cameras = await filmingCameras(ctx.app.db, due!.courtId)
  const other = openDatabase(ctx.config.DATABASE_URL)
  t.teardown(() => other.destroy())
  // One after the other (two connections of one process would wait on each other's SQLite lock):
  // the second acts on what it read before the first wrote.
  const made = [await makeMatch(ctx.app.db, due!, cameras, s.tell.deps), await makeMatch(other, due!, cameras, s.tell.deps)]
  t.equal(made.filter((id) => id !== null).length, 1, 'one of them made it')
  t.equal((await matchRows(ctx.app.db)).length, 1, 'one match')
  t.equal((await angleRows(ctx.app.db)).length, 2, 'its two angles, once')
})

t.test('READY angles: the participants and staff see them with links (logged), anyone else 404, a guest session 404; chapters by who asked', async (t) => {
  const s = await setup(t, { REPLAYS_GUEST: 'true', REPLAYS_REQUIRE_ACCOUNT: 'false' })
  const { ctx, call } = s
  const { mine, theirs, match } = await playedMatch(t, s)
  at(ctx, '2026-03-01T11:40:00.000Z')
  await boxMakesReady(s)

  const seen = await call('GET', `${MATCHES}/${match.id}`, s.member)
  t.equal(seen.statusCode, 200)
  const body = seen.json()
  t.match(body, { id: match.id, status: 'READY', source: { type: 'BOOKING' }, court: { id: s.venue.court1.id }, start: match.start_at, end: match.end_at, expiresAt: '2026-03-31T11:30:00.000Z' })
  t.equal(body.angles.length, 2)
  for (const angle of body.angles) t.match(angle, { kind: 'MATCH', status: 'READY', match: { id: match.id }, downloadUrl: /^http/ })
  t.same(body.chapters, [{ at: 1770, label: 'Replay 10:59', replay: { id: mine.id } }], 'the asker sees which replay')
  const looks = await ctx.app.db.selectFrom('footage_access').select(['replay_id', 'purpose']).where('user_id', '=', s.member.id).where('purpose', '=', 'DOWNLOAD_LINK').execute()
  t.same(looks.map((l) => l.replay_id).sort(), body.angles.map((a: { id: string }) => a.id).sort(), 'each link handed out is in the footage log')

  const friend = (await call('GET', `${MATCHES}/${match.id}`, s.friend)).json()
  t.equal(friend.angles.length, 2, 'the guest the booking brought sees it')
  t.same(friend.chapters, [{ at: 1770, label: 'Replay 10:59' }], "but not which replay another asked")
  const staff = (await call('GET', `${MATCHES}/${match.id}`, s.staff)).json()
  t.same(staff.chapters[0].replay, { id: mine.id }, 'staff see it')

  const angleId = body.angles[0].id
  const ready = await ctx.app.db.selectFrom('outbox_events').select('data').where('type', '=', 'replay.ready').where('resource_id', '=', angleId).executeTakeFirstOrThrow()
  t.match(JSON.parse(ready.data), { id: angleId, kind: 'MATCH', match: { id: match.id } }, 'replay.ready carries the kind and the match')
  for (const url of [`${MATCHES}/${match.id}`, `${REPLAYS}/${angleId}`]) {
    const refused = await call('GET', url, s.stranger)
    t.equal(refused.statusCode, 404, `another member: ${url}`)
    t.equal(errorOf(refused).statusCode, 404)
  }
  const session = (await call('POST', `${REPLAYS}/guest-sessions`, undefined, { court: { id: s.venue.court1.id } })).json()
  const guest = { authorization: `Bearer ${session.token}` }
  t.equal((await call('GET', `${MATCHES}/${match.id}`, guest)).statusCode, 404, 'a guest session: the match')
  t.equal((await call('GET', `${REPLAYS}/${angleId}`, guest)).statusCode, 404, 'a guest session: the angle')
  t.equal((await call('GET', `${MATCHES}/nope`, s.member)).statusCode, 404, 'an unknown match')

  // "My replays": the friend's list holds the angles (kind=MATCH), the stranger's only their own clip.
  const friendList = (await call('GET', `${REPLAYS}?kind=MATCH`, s.friend)).json()
  t.same(friendList.items.map((r: { id: string }) => r.id).sort(), body.angles.map((a: { id: string }) => a.id).sort())
  t.same((await call('GET', REPLAYS, s.stranger)).json().items.map((r: { id: string }) => r.id), [theirs.id])
  t.same((await call('GET', MATCHES, s.friend)).json().items.map((m: { id: string }) => m.id), [match.id], 'the match list')
  t.same((await call('GET', MATCHES, s.stranger)).json()._total, 0)
  const shell = await club(ctx, 'matches', 'list', '--user', s.friend.email)
  t.equal(shell.code, 0, shell.err)
  t.same(shell.json.items.map((m: { id: string; chapters: unknown[] }) => [m.id, m.chapters]), [[match.id, [{ at: 1770, label: 'Replay 10:59', replay: { id: mine.id } }]]], '`club matches list` as staff see it')

  // A participant may not delete an angle for everyone; staff may.
  const deleted = await call('DELETE', `${REPLAYS}/${angleId}`, s.member)
  t.equal(deleted.statusCode, 403)
  t.match(errorOf(deleted).message, 'only staff delete it')
  t.equal((await call('DELETE', `${REPLAYS}/${angleId}`, s.staff)).statusCode, 204)

  // Bad input: the list's query in the error shape.
  for (const query of ['ipp=0', 'page=x', 'colour=red', `user=${s.stranger.id}`]) {
    const bad = await call('GET', `${MATCHES}?${query}`, s.member)
    t.equal(bad.statusCode, 400, query)
    t.equal(errorOf(bad).error, 'Bad Request')
  }
  t.equal((await call('GET', `${REPLAYS}?kind=GAME`, s.member)).statusCode, 400)
})

t.test('no match: MATCH_RECORDING off (the default), a court no camera films, a cancelled booking, a booking longer than MATCH_MAX_MINUTES', async (t) => {
  for (const [env, why] of [[{ MATCH_RECORDING: 'off' }, 'off'], [{ MATCH_MAX_MINUTES: '30' }, 'too long']] as const) {
    const s = await setup(t, env)
    await s.book(s.venue.court1.id, '2026-03-01T10:30:00.000Z', '2026-03-01T11:30:00.000Z')
    at(s.ctx, '2026-03-01T12:00:00.000Z')
    await s.tell.run()
    t.equal((await matchRows(s.ctx.app.db)).length, 0, why)
  }
  const s = await setup(t)
  await s.book(s.venue.court2.id, '2026-03-01T10:30:00.000Z', '2026-03-01T11:30:00.000Z')
  const cancelled = await s.book(s.venue.court1.id, '2026-03-02T10:30:00.000Z', '2026-03-02T11:30:00.000Z')
  t.equal((await s.call('DELETE', `/apis/v2/packages/${s.pass.id}/redemptions/${cancelled.id}`, s.member)).statusCode, 200)
  for (const when of ['2026-03-01T12:00:00.000Z', '2026-03-02T12:00:00.000Z']) {
    at(s.ctx, when)
    await s.tell.run()
  }
  t.equal((await matchRows(s.ctx.app.db)).length, 0, 'a court not filmed, a cancelled booking')
  // Nor last week's booking when recording is turned on now.
  await s.book(s.venue.court1.id, '2026-03-02T13:00:00.000Z', '2026-03-02T14:00:00.000Z')
  at(s.ctx, '2026-03-09T12:00:00.000Z')
  await s.tell.run()
  t.equal((await matchRows(s.ctx.app.db)).length, 0, 'older than the lookback')
})

t.test('MATCH_RECORDING=events: an event with recordMatch on a filmed court is a match; its EVENT_SIGNUP redeemers take part', async (t) => {
  const s = await setup(t, { MATCH_RECORDING: 'events' })
  const { ctx, call } = s
  const admin = { authorization: s.admin }
  const event = await call('POST', '/apis/v2/admin/events', admin, {
    name: 'Ladder night',
    type: 'LADDER',
    startDate: '2026-03-01T18:00:00Z',
    endDate: '2026-03-01T20:00:00Z',
    courts: { items: [{ id: s.venue.court1.id }, { id: s.venue.court2.id }] },
    recordMatch: true
  })
  t.equal(event.statusCode, 201)
  t.equal(event.json().recordMatch, true)
  const plain = (await call('POST', '/apis/v2/admin/events', admin, { name: 'Social', type: 'SOCIAL', startDate: '2026-03-01T18:00:00Z', endDate: '2026-03-01T19:00:00Z', courts: { items: [{ id: s.venue.court1.id }] } })).json()
  t.equal(plain.recordMatch, false)
  t.equal((await call('PATCH', `/apis/v2/admin/events/${plain.id}`, admin, { recordMatch: false })).json().recordMatch, false)
  t.equal((await call('POST', REDEEM, s.member, { type: 'EVENT_SIGNUP', target: { event: { id: event.json().id } } })).statusCode, 201)
  at(ctx, '2026-03-01T20:01:00.000Z')
  await s.tell.run()
  const matches = await matchRows(ctx.app.db)
  t.same(matches.map((m) => [m.source_type, m.event_id, m.court_id]), [['EVENT', event.json().id, s.venue.court1.id]], 'the filmed court only')
  t.same((await angleRows(ctx.app.db)).map((a) => a.user_id), [null, null], 'an event angle is no one user\'s')
  t.equal((await call('GET', `${MATCHES}/${matches[0]!.id}`, s.member)).json().source.event.id, event.json().id, 'the signed-up member sees it')
  t.equal((await call('GET', `${MATCHES}/${matches[0]!.id}`, s.stranger)).statusCode, 404)
})

t.test('a do-not-film interval on the court: its angles are made FAILED do_not_film, never asked of the box', async (t) => {
  const s = await setup(t)
  await s.book(s.venue.court1.id, '2026-03-01T10:30:00.000Z', '2026-03-01T11:30:00.000Z')
  const dnf = await s.call('POST', `/apis/v2/admin/courts/${s.venue.court1.id}/do-not-film`, s.staff, { start: '2026-03-01T11:00:00Z', end: '2026-03-01T11:05:00Z', reason: 'a private lesson' })
  t.equal(dnf.statusCode, 201, dnf.body)
  at(s.ctx, '2026-03-01T11:31:00.000Z')
  await s.tell.run()
  t.same((await angleRows(s.ctx.app.db)).map((a) => [a.status, a.reason]), [['FAILED', 'do_not_film'], ['FAILED', 'do_not_film']])
  t.same((await s.call('GET', DEVICE, s.device)).json().items, [])
})

t.test('MATCH_REQUIRES_PACKAGE: a first opening redeems one REPLAY item, a second none, none left 402, staff free, a race takes one', async (t) => {
  const s = await setup(t, { MATCH_REQUIRES_PACKAGE: 'true' })
  const { ctx, call } = s
  const { match } = await playedMatch(t, s)
  at(ctx, '2026-03-01T11:40:00.000Z')
  const replays = await issued(ctx, s.staff, await packageTemplate(ctx, s.staff, threeReplays), s.member.id)
  const remaining = async () => (await call('GET', `/apis/v2/packages/${replays.id}`, s.staff)).json().items.items[0].remainingItems
  t.equal((await call('GET', `${MATCHES}/${match.id}`, s.member)).statusCode, 200, 'not READY yet: nothing to pay')
  t.equal(await remaining(), 3)
  await boxMakesReady(s)
  // Two openings at once take one item.
  const [a, b] = await Promise.all([call('GET', `${MATCHES}/${match.id}`, s.member), call('GET', `${MATCHES}/${match.id}`, s.member)])
  t.same([a.statusCode, b.statusCode], [200, 200])
  t.equal(await remaining(), 2, 'one item')
  t.equal((await call('GET', `${MATCHES}/${match.id}`, s.member)).statusCode, 200)
  t.equal(await remaining(), 2, 'opened again: none')
  t.equal((await call('GET', `${MATCHES}/${match.id}`, s.staff)).statusCode, 200, 'staff never pay')
  const logged = async () => (await ctx.app.db.selectFrom('footage_access').select('id').where('user_id', '=', s.friend.id).execute()).length
  const none = await call('GET', `${MATCHES}/${match.id}`, s.friend)
  t.equal(none.statusCode, 402, 'the friend holds no REPLAY item')
  t.match(errorOf(none).message, 'REPLAY package item')
  t.equal(await logged(), 0, 'no link handed out, nothing logged')
})

t.test('retention: the angles expire MATCH_RETENTION_DAYS after the match ends; the participants are mailed once, not with MATCH_MAIL=off', async (t) => {
  const s = await setup(t, { MATCH_RETENTION_DAYS: '7' })
  const { ctx } = s
  const { match } = await playedMatch(t, s)
  at(ctx, '2026-03-01T11:40:00.000Z')
  const mails = () => ctx.app.db.selectFrom('mail_outbox').select(['recipient', 'subject']).where('kind', '=', 'match-ready').orderBy('recipient').execute()
  await s.tell.run()
  t.same(await mails(), [], 'not before it is READY')
  await boxMakesReady(s)
  const other = openDatabase(ctx.config.DATABASE_URL)
  t.teardown(() => other.destroy())
  const there = await teller(ctx, other)
  await s.tell.run()
  await there.run()
  t.same((await mails()).map((m) => m.recipient), [s.member.email, s.friend.email].sort(), 'each participant once')
  t.match((await mails())[0]!.subject, 'Your match on Court 1 is ready')

  const storage = new ReplayStorage({ credentialsPath: '', linkKey: '', publicBaseUrl: ctx.config.PUBLIC_BASE_URL })
  t.equal(await deleteExpiredReplays(ctx.app.db, storage, new Date('2026-03-08T11:00:00Z'), 30, 7), 0, 'kept within 7 days of its end')
  t.equal(await deleteExpiredReplays(ctx.app.db, storage, new Date('2026-03-08T12:00:00Z'), 30, 7), 2, 'both angles expire')
  t.same((await angleRows(ctx.app.db)).map((a) => [a.status, a.location]), [['EXPIRED', null], ['EXPIRED', null]])
  t.equal((await s.call('GET', `${MATCHES}/${match.id}`, s.member)).json().status, 'EXPIRED')

  const failing = await setup(t)
  await playedMatch(t, failing)
  at(failing.ctx, '2026-03-01T11:40:00.000Z')
  await boxMakesReady(failing)
  let refusals = 1
  const delivered: string[] = []
  const refusingOnce = {
    send: async (message: { to: string }) => {
      if (refusals-- > 0) throw new Error(`the mail server refused ${message.to}`)
      delivered.push(message.to)
    },
    close: async () => {}
  }
  const mailDeps = { db: failing.ctx.app.db, clock: failing.ctx.clock, mailer: () => refusingOnce, publicBaseUrl: 'http://club.test', clubTimezone: 'UTC', retentionDays: 30 }
  await t.rejects(mailReadyMatches(mailDeps), /refused/, 'the first send fails')
  t.same(delivered, [], 'nothing went')
  t.equal(await mailReadyMatches(mailDeps), 2, 'the next tick mails both participants: a failed send is not lost')
  t.same(delivered.sort(), [failing.member.email, failing.friend.email].sort())
  t.equal(await mailReadyMatches(mailDeps), 0, 'and then no more')

  const quiet = await setup(t, { MATCH_MAIL: 'off' })
  await playedMatch(t, quiet)
  await boxMakesReady(quiet)
  await quiet.tell.run()
  t.equal((await quiet.ctx.app.db.selectFrom('mail_outbox').select('id').where('kind', '=', 'match-ready').execute()).length, 0, 'MATCH_MAIL=off: none')
})

t.test("a takedown of one angle takes the match's minutes down: both angles TAKEN_DOWN, their clips deleted, the participant sees it", async (t) => {
  const s = await setup(t)
  const { ctx, call } = s
  const { match } = await playedMatch(t, s)
  at(ctx, '2026-03-01T11:32:00.000Z')
  await boxMakesReady(s)
  const [first] = await angleRows(ctx.app.db)
  const done = await call('POST', `/apis/v2/admin/replays/${first!.id}/takedown`, s.staff, { reason: 'a parent asked' })
  t.equal(done.statusCode, 200, done.body)
  t.same((await angleRows(ctx.app.db)).map((a) => [a.status, a.location]), [['TAKEN_DOWN', null], ['TAKEN_DOWN', null]])
  const seen = (await call('GET', `${MATCHES}/${match.id}`, s.member)).json()
  t.equal(seen.status, 'TAKEN_DOWN')
  t.notOk(seen.angles.some((a: { downloadUrl?: string }) => a.downloadUrl), 'no link')
})

t.test('migration 0039, down and up again, keeps the replays and the takedowns naming them (SQLite rebuilds the table)', async (t) => {
  const s = await setup(t)
  const { ctx, call } = s
  const clip = (await call('POST', REPLAYS, s.member, { court: { id: s.venue.court1.id }, seconds: 30 })).json()
  t.equal((await call('POST', `/apis/v2/admin/replays/${clip.id}/takedown`, s.staff, { reason: 'a parent asked' })).statusCode, 200)
  const db = ctx.app.db
  const before = await db.selectFrom('replays').select(['id', 'status', 'user_id', 'taken_down_reason']).execute()
  await migratorFor(db).migrateTo('0038_agent_rollouts')
  await migrateToLatest(db)
  t.same(await db.selectFrom('replays').select(['id', 'status', 'user_id', 'taken_down_reason']).execute(), before, 'the replays as they were')
  t.same((await db.selectFrom('replays').select('kind').execute()).map((r) => r.kind), ['CLIP'])
  t.same((await db.selectFrom('footage_takedowns').select('replay_id').execute()).map((r) => r.replay_id), [clip.id], 'the takedown still names its replay')
})
