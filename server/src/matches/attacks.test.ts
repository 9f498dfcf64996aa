// Matches as an attacker tries them: a member who did not play asking the server to make them a
// participant (a booking or a guest pass redeemed after the fact, an event signed up to once it is
// over), taking an angle's link past MATCH_REQUIRES_PACKAGE, a guest session on the list, a box
// reporting an angle at another angle's key.
import t from 'tap'
import { errorOf } from '../test-support/app.js'
import { issued, packageTemplate, threeReplays } from '../packages/test-fixtures.js'
import { DEVICE, REPLAYS, SHA, storedClip } from '../replays/test-helpers.js'
import { MATCHES, REDEEM, angleRows, at, boxMakesReady, courtPass, matchRows, playedMatch, setup } from './test-helpers.js'

/** What `who` can learn of `matchId`: its GET, their match list, and each angle's GET. */
async function sees(s: Awaited<ReturnType<typeof setup>>, who: { authorization: string }, matchId: string) {
  const angles = await angleRows(s.ctx.app.db)
  return {
    match: (await s.call('GET', `${MATCHES}/${matchId}`, who)).statusCode,
    listed: (await s.call('GET', MATCHES, who)).json()._total,
    angles: await Promise.all(angles.map(async (a) => (await s.call('GET', `${REPLAYS}/${a.id}`, who)).statusCode)),
    replays: (await s.call('GET', `${REPLAYS}?kind=MATCH`, who)).json()._total
  }
}
const unseen = { match: 404, listed: 0, angles: [404, 404], replays: 0 }

t.test('a booking redeemed once it has begun is no match: a member cannot book the last hour of a court to take the footage of whoever played', async (t) => {
  const s = await setup(t)
  const { ctx, call } = s
  const { match } = await playedMatch(t, s)
  const strangersPass = await issued(ctx, s.staff, await packageTemplate(ctx, s.staff, courtPass), s.stranger.id)
  t.ok(strangersPass.id)
  at(ctx, '2026-03-01T11:32:00.000Z')
  const late = await call('POST', REDEEM, s.stranger, { type: 'BOOKING', target: { booking: { court: { id: s.venue.court1.id }, startDate: '2026-03-01T10:30:00.000Z', endDate: '2026-03-01T11:30:00.000Z' } } })
  t.equal(late.statusCode, 201, 'the redemption itself is the packages\' business')
  // Mid-way through someone else's hour: the part already played is not theirs either.
  const during = await call('POST', REDEEM, s.stranger, { type: 'BOOKING', target: { booking: { court: { id: s.venue.court1.id }, startDate: '2026-03-01T10:45:00.000Z', endDate: '2026-03-01T11:45:00.000Z' } } })
  t.equal(during.statusCode, 201)
  at(ctx, '2026-03-01T11:50:00.000Z')
  await s.tell.run()
  t.same((await matchRows(ctx.app.db)).map((m) => m.id), [match.id], 'only the booking made before it began')
  t.same(await sees(s, s.stranger, match.id), unseen)
})

t.test("a guest pass from a stranger's own package naming someone's booking makes them no participant: only the booker brings guests", async (t) => {
  const s = await setup(t)
  const { ctx, call } = s
  const { match, booking } = await playedMatch(t, s)
  await issued(ctx, s.staff, await packageTemplate(ctx, s.staff, courtPass), s.stranger.id)
  at(ctx, '2026-03-01T11:40:00.000Z')
  await boxMakesReady(s)
  const self = await call('POST', REDEEM, s.stranger, {
    type: 'GUEST_SIGNUP',
    target: { guest: { name: 'Me' }, booking: { court: { id: booking.courtId }, startDate: booking.startDate, endDate: booking.endDate } }
  })
  t.equal(self.statusCode, 201, self.body)
  t.same(await sees(s, s.stranger, match.id), unseen)
  // The friend the booker brought still does.
  t.equal((await call('GET', `${MATCHES}/${match.id}`, s.friend)).statusCode, 200)
  // And the stranger is mailed nothing.
  await s.tell.run()
  const mailed = await ctx.app.db.selectFrom('mail_outbox').select('recipient').where('kind', '=', 'match-ready').execute()
  t.same(mailed.map((m) => m.recipient).sort(), [s.member.email, s.friend.email].sort(), 'the participants only')
})

t.test("an event's signup made once the event is over takes no part in its match; a signup cancelled none either", async (t) => {
  const s = await setup(t, { MATCH_RECORDING: 'events' })
  const { ctx, call } = s
  const admin = { authorization: s.admin }
  const event = (
    await call('POST', '/apis/v2/admin/events', admin, {
      name: 'Ladder night',
      type: 'LADDER',
      startDate: '2026-03-01T18:00:00Z',
      endDate: '2026-03-01T20:00:00Z',
      courts: { items: [{ id: s.venue.court1.id }] },
      recordMatch: true
    })
  ).json()
  await issued(ctx, s.staff, await packageTemplate(ctx, s.staff, courtPass), s.stranger.id)
  const friendsPass = await issued(ctx, s.staff, await packageTemplate(ctx, s.staff, courtPass), s.friend.id)
  t.equal((await call('POST', REDEEM, s.member, { type: 'EVENT_SIGNUP', target: { event: { id: event.id } } })).statusCode, 201)
  const friends = (await call('POST', REDEEM, s.friend, { type: 'EVENT_SIGNUP', target: { event: { id: event.id } } })).json()
  t.equal((await call('DELETE', `/apis/v2/packages/${friendsPass.id}/redemptions/${friends.id}`, s.friend)).statusCode, 200, 'cancelled before it began')
  at(ctx, '2026-03-01T20:01:00.000Z')
  await s.tell.run()
  const [match] = await matchRows(ctx.app.db)
  await boxMakesReady(s)
  const late = await call('POST', REDEEM, s.stranger, { type: 'EVENT_SIGNUP', target: { event: { id: event.id } } })
  t.equal(late.statusCode, 201, late.body)
  t.same(await sees(s, s.stranger, match!.id), unseen, 'signed up once it was over')
  t.same(await sees(s, s.friend, match!.id), unseen, 'a cancelled signup')
  t.equal((await call('GET', `${MATCHES}/${match!.id}`, s.member)).statusCode, 200, 'a signup from before')
})

t.test('MATCH_REQUIRES_PACKAGE: an unpaid participant gets no angle link from the replay routes, nor from a match one angle of which is still being made', async (t) => {
  const s = await setup(t, { MATCH_REQUIRES_PACKAGE: 'true' })
  const { ctx, call } = s
  const { match } = await playedMatch(t, s)
  at(ctx, '2026-03-01T11:40:00.000Z')
  const [first] = (await s.call('GET', DEVICE, s.device)).json().items.filter((r: { kind: string }) => r.kind === 'MATCH')
  for (const status of ['EXPORTING', 'UPLOADING']) t.equal((await call('PUT', `${DEVICE}/${first.id}/status`, s.device, { status })).statusCode, 200)
  const location = storedClip(s.bucketDir, `${first.cameraId}/${first.id}.mp4`)
  t.equal((await call('PUT', `${DEVICE}/${first.id}/status`, s.device, { status: 'READY', location, durationSeconds: 3600, sizeBytes: 28, sha256: SHA })).statusCode, 200)
  const links = (body: { angles?: Array<{ downloadUrl?: string }>; items?: Array<{ downloadUrl?: string }>; downloadUrl?: string }) =>
    [...(body.angles ?? body.items ?? [body])].filter((a) => a.downloadUrl !== undefined).length
  const logged = async () => (await ctx.app.db.selectFrom('footage_access').select('id').where('user_id', '=', s.friend.id).execute()).length

  // One angle READY, the other still being cut: the friend holds no REPLAY item.
  const half = await call('GET', `${MATCHES}/${match.id}`, s.friend)
  t.equal(half.statusCode, 402, 'a READY angle is opened, whatever the other is doing')
  t.equal(errorOf(half).statusCode, 402)
  const listed = await call('GET', `${REPLAYS}?kind=MATCH`, s.friend)
  t.equal(listed.statusCode, 200)
  t.equal(listed.json()._total, 2, 'the angles are listed')
  t.equal(links(listed.json()), 0, 'without links')
  const one = await call('GET', `${REPLAYS}/${first.id}`, s.friend)
  t.equal(one.statusCode, 200)
  t.equal(one.json().status, 'READY')
  t.equal(links(one.json()), 0, 'the angle itself: no link')
  t.equal(await logged(), 0, 'no link handed out, nothing logged')

  // Paid for by opening the match: the replay routes give the links too; staff never pay.
  await issued(ctx, s.staff, await packageTemplate(ctx, s.staff, threeReplays), s.friend.id)
  t.equal(links((await call('GET', `${MATCHES}/${match.id}`, s.friend)).json()), 1)
  t.equal(links((await call('GET', `${REPLAYS}/${first.id}`, s.friend)).json()), 1, 'paid: the angle has its link')
  t.equal(links((await call('GET', `${REPLAYS}?kind=MATCH`, s.friend)).json()), 1)
  t.equal(links((await call('GET', `${REPLAYS}?kind=MATCH`, s.staff)).json()), 1, 'staff')
  // The member's own clip is no match: its link as always.
  const member = (await call('GET', `${REPLAYS}?kind=CLIP`, s.member)).json()
  t.equal(member._total, 1)
})

t.test("a court page's guest session lists no matches (403) and a member's user= of another is refused", async (t) => {
  const s = await setup(t, { REPLAYS_GUEST: 'true', REPLAYS_REQUIRE_ACCOUNT: 'false' })
  const session = (await s.call('POST', `${REPLAYS}/guest-sessions`, undefined, { court: { id: s.venue.court1.id } })).json()
  const guest = { authorization: `Bearer ${session.token}` }
  const listed = await s.call('GET', MATCHES, guest)
  t.equal(listed.statusCode, 403)
  t.match(errorOf(listed), { statusCode: 403, error: 'Forbidden' })
  const other = await s.call('GET', `${REPLAYS}?user=${s.member.id}`, s.stranger)
  t.equal(other.statusCode, 400)
})

t.test("a box reporting one angle READY at the other angle's key is refused (400), the other angle's clip untouched", async (t) => {
  const s = await setup(t)
  const { ctx, call } = s
  await playedMatch(t, s)
  at(ctx, '2026-03-01T11:40:00.000Z')
  const [a, b] = (await call('GET', DEVICE, s.device)).json().items.filter((r: { kind: string }) => r.kind === 'MATCH')
  for (const status of ['EXPORTING', 'UPLOADING']) await call('PUT', `${DEVICE}/${a.id}/status`, s.device, { status })
  const theirs = storedClip(s.bucketDir, `${b.cameraId}/${b.id}.mp4`)
  const wrong = await call('PUT', `${DEVICE}/${a.id}/status`, s.device, { status: 'READY', location: theirs, durationSeconds: 3600, sizeBytes: 28, sha256: SHA })
  t.equal(wrong.statusCode, 400)
  t.match(errorOf(wrong).message, "is not this replay's clip")
  const elsewhere = await call('PUT', `${DEVICE}/${a.id}/status`, s.device, { status: 'READY', location: 'file:///etc/passwd', durationSeconds: 3600, sizeBytes: 28, sha256: SHA })
  t.equal(elsewhere.statusCode, 400, 'outside its bucket')
  t.same((await angleRows(ctx.app.db)).map((r) => r.status).sort(), ['REQUESTED', 'UPLOADING'])
})

t.test("bookings of one court overlapping each other make one match (the first booked): a member's items cannot make the box cut the same hour over and over", async (t) => {
  const s = await setup(t)
  const { ctx } = s
  const first = await s.book(s.venue.court1.id, '2026-03-01T10:30:00.000Z', '2026-03-01T11:30:00.000Z')
  for (const [start, end] of [
    ['2026-03-01T10:31:00.000Z', '2026-03-01T11:30:00.000Z'],
    ['2026-03-01T10:30:00.000Z', '2026-03-01T11:29:00.000Z'],
    ['2026-03-01T10:00:00.000Z', '2026-03-01T12:00:00.000Z']
  ] as const) {
    ctx.clock.advance(1000)
    await s.book(s.venue.court1.id, start, end)
  }
  // The next hour, back to back with the first, is a match of its own.
  const next = await s.book(s.venue.court1.id, '2026-03-01T12:00:00.000Z', '2026-03-01T13:00:00.000Z')
  at(ctx, '2026-03-01T13:05:00.000Z')
  await s.tell.run()
  await s.tell.run()
  t.same((await matchRows(ctx.app.db)).map((m) => m.redemption_id).sort(), [first.id, next.id].sort(), 'one match per hour played')
  t.equal((await angleRows(ctx.app.db)).length, 4, 'two cameras each')
})

t.test('MATCH_REQUIRES_PACKAGE: a token that may only read does not spend an item opening a match (403); once paid it reads it', async (t) => {
  const s = await setup(t, { MATCH_REQUIRES_PACKAGE: 'true' })
  const { ctx, call } = s
  const { match } = await playedMatch(t, s)
  at(ctx, '2026-03-01T11:40:00.000Z')
  await boxMakesReady(s)
  const replays = await issued(ctx, s.staff, await packageTemplate(ctx, s.staff, threeReplays), s.friend.id)
  const remaining = async () => (await call('GET', `/apis/v2/packages/${replays.id}`, s.staff)).json().items.items[0].remainingItems
  const token = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'password', username: s.friend.email, password: s.friend.password, scope: 'read' }).toString()
  })
  t.equal(token.json().scope, 'read')
  const read = { authorization: `Bearer ${token.json().access_token}` }
  const refused = await call('GET', `${MATCHES}/${match.id}`, read)
  t.equal(refused.statusCode, 403)
  t.match(errorOf(refused).message, 'read-only token')
  t.equal(await remaining(), 3, 'nothing spent')
  t.equal((await call('GET', `${MATCHES}/${match.id}`, s.friend)).statusCode, 200, 'opened with the member\'s own token')
  t.equal(await remaining(), 2)
  const again = await call('GET', `${MATCHES}/${match.id}`, read)
  t.equal(again.statusCode, 200, 'paid for: the read token reads it')
  t.equal(await remaining(), 2)
})
