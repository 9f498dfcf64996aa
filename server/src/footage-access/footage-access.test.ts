// Who may ask for which minutes of a court, and the record of every look at footage (issue 33): the
// age limit and the staff's reason, a guest bound to one court, the members' rate limits, the footage
// access log (rows, filters, who may read it, the CLI) and its deletion by replays/cleanup.
import t from 'tap'
import { errorOf, userWithToken } from '../test-support/app.js'
import { runCli } from '../cli.js'
import { sha256Hex } from '../crypto.js'
import { adminOf } from '../replay-servers/test-helpers.js'
import { DEVICE, REPLAYS, SHA, filmedVenue, storedClip } from '../replays/test-helpers.js'

const LOG = '/apis/v2/admin/footage-access'
const GUESTS_ON = { REPLAYS_GUEST: 'true', REPLAYS_REQUIRE_ACCOUNT: 'false' }
const MINUTE = 60_000

t.test('a member asks for the last REPLAY_MAX_AGE_SECONDS; older footage is for staff with a reason, each look logged', async (t) => {
  const { ctx, venue, member, admin, call } = await filmedVenue(t)
  const staff = await userWithToken(ctx, 'staff')
  const now = ctx.clock.now().getTime()
  const ago = (ms: number) => new Date(now - ms).toISOString()
  const ask = (who: { authorization: string }, body: object) => call('POST', REPLAYS, who, { court: { id: venue.court1.id }, seconds: 30, ...body })

  const old = await ask(member, { end: ago(11 * MINUTE) })
  t.equal(old.statusCode, 400, 'a member: ending 11 minutes ago is too old')
  t.match(errorOf(old).message, /^body\.end: a replay must end within the last 600 s \(REPLAY_MAX_AGE_SECONDS\); this one ends 660 s ago/)
  const recent = await ask(member, { end: ago(9 * MINUTE) })
  t.equal(recent.statusCode, 201, 'ending 9 minutes ago is within the limit')
  t.match(recent.json(), { start: ago(9 * MINUTE + 30_000), end: ago(9 * MINUTE), user: { id: member.id } })

  const claimed = await ask(member, { end: ago(11 * MINUTE), accessReason: 'I am staff, honestly' })
  t.equal(claimed.statusCode, 403, "a member cannot claim the staff's rule")
  t.match(errorOf(claimed).message, 'body.accessReason: only staff and admins')

  const noReason = await ask(staff, { end: ago(11 * MINUTE) })
  t.equal(noReason.statusCode, 400, 'staff without a reason')
  t.match(errorOf(noReason).message, /^body\.accessReason: footage ending more than 600 s ago \(REPLAY_MAX_AGE_SECONDS\)/)
  t.equal((await ask(staff, { end: ago(11 * MINUTE), accessReason: '    ' })).statusCode, 400, 'a blank reason is no reason')
  const reason = 'Incident report 2026-14: a fall on court 1'
  const staffs = await ask(staff, { end: ago(11 * MINUTE), accessReason: reason })
  t.equal(staffs.statusCode, 201, 'staff with a reason')
  t.equal((await ask(staff, { end: ago(30 * MINUTE) })).statusCode, 400)

  const log = await call('GET', LOG, { authorization: admin })
  t.equal(log.statusCode, 200)
  t.equal(log.json()._total, 2, 'one row per replay given; refused requests show no footage')
  const byActor = Object.fromEntries(log.json().items.map((row: { actor: string }) => [row.actor, row]))
  t.match(byActor.member, {
    purpose: 'REPLAY',
    user: { id: member.id },
    guestSession: null,
    accessReason: null,
    court: { id: venue.court1.id },
    camera: { id: 'cam-1' },
    replay: { id: recent.json().id },
    start: ago(9 * MINUTE + 30_000),
    end: ago(9 * MINUTE),
    date: ago(0),
    address: '127.0.0.1'
  })
  t.match(byActor.staff, { purpose: 'REPLAY', user: { id: staff.id }, accessReason: reason, replay: { id: staffs.json().id }, start: ago(11 * MINUTE + 30_000), end: ago(11 * MINUTE) })

  // Filters: the user, the court, and the footage's interval.
  t.same((await call('GET', `${LOG}?user=${staff.id}`, { authorization: admin })).json().items.map((r: { actor: string }) => r.actor), ['staff'])
  t.equal((await call('GET', `${LOG}?court=${venue.court2.id}`, { authorization: admin })).json()._total, 0)
  t.same((await call('GET', `${LOG}?from=${ago(10 * MINUTE)}`, { authorization: admin })).json().items.map((r: { actor: string }) => r.actor), ['member'], 'footage ending after from')
  t.same((await call('GET', `${LOG}?to=${ago(10 * MINUTE)}`, { authorization: admin })).json().items.map((r: { actor: string }) => r.actor), ['staff'], 'footage starting before to')
  const page = (await call('GET', `${LOG}?ipp=1&court=${venue.court1.id}`, { authorization: admin })).json()
  t.match(page, { _total: 2, _pagination: { page: 1, ipp: 1, count: 1 }, _links: { next: { href: `${LOG}?court=${venue.court1.id}&page=2&ipp=1` } } })
  const backwards = await call('GET', `${LOG}?from=${ago(0)}&to=${ago(MINUTE)}`, { authorization: admin })
  t.equal(backwards.statusCode, 400)
  t.match(errorOf(backwards).message, 'querystring.from')
  t.equal((await call('GET', `${LOG}?from=yesterday`, { authorization: admin })).statusCode, 400)

  for (const [who, authorization] of [['member', member.authorization], ['staff', staff.authorization]] as const) {
    const refused = await call('GET', LOG, { authorization })
    t.equal(refused.statusCode, 403, `a ${who} cannot read the log`)
    errorOf(refused)
  }
  t.equal((await call('GET', LOG, undefined)).statusCode, 401)
})

t.test('a download link issued is a look: the owner reading a READY replay and staff listing it are both logged', async (t) => {
  const { ctx, venue, member, admin, call, device, bucketDir } = await filmedVenue(t)
  const replay = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id }, seconds: 10 })).json()
  await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'EXPORTING' })
  t.equal((await call('GET', `${REPLAYS}/${replay.id}`, member)).statusCode, 200)
  t.equal((await call('GET', LOG, { authorization: admin })).json()._total, 1, 'reading an unfinished replay issues no link')
  await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'READY', location: storedClip(bucketDir, `cam-1/${replay.id}.mp4`), durationSeconds: 10, sizeBytes: 28, sha256: SHA })

  ctx.clock.advance(MINUTE)
  t.ok((await call('GET', `${REPLAYS}/${replay.id}`, member)).json().downloadUrl)
  const staff = await userWithToken(ctx, 'staff')
  t.ok((await call('GET', REPLAYS, staff)).json().items[0].downloadUrl, 'the console lists replays as staff')
  const links = (await call('GET', LOG, { authorization: admin })).json().items.filter((row: { purpose: string }) => row.purpose === 'DOWNLOAD_LINK')
  t.equal(links.length, 2)
  for (const [actor, user] of [['member', member.id], ['staff', staff.id]]) {
    t.match(
      links.find((row: { actor: string }) => row.actor === actor),
      { user: { id: user }, replay: { id: replay.id }, court: { id: venue.court1.id }, camera: { id: 'cam-1' }, start: replay.start, end: replay.end, date: ctx.clock.now().toISOString() },
      `${actor}'s link`
    )
  }
})

t.test('members are limited per hour and per court per minute: 429 with Retry-After; staff are not', async (t) => {
  const { ctx, venue, member, call } = await filmedVenue(t, { REPLAY_MEMBER_RATE_LIMIT_MAX: '3', REPLAY_COURT_RATE_LIMIT_MAX: '5' })
  const ask = (who: { authorization: string }) => call('POST', REPLAYS, who, { court: { id: venue.court1.id }, seconds: 10 })
  for (let i = 0; i < 3; i++) t.equal((await ask(member)).statusCode, 201)
  const over = await ask(member)
  t.equal(over.statusCode, 429, 'the fourth in an hour')
  t.match(errorOf(over).message, /^Too many replays asked for by this member: at most 3 per 1 hour\(s\); retry in \d+ seconds/)
  t.ok(Number(over.headers['retry-after']) > 0 && Number(over.headers['retry-after']) <= 3600, `Retry-After ${over.headers['retry-after']}`)

  const other = await userWithToken(ctx, 'member')
  t.equal((await ask(other)).statusCode, 201, "another member's count is their own")
  t.equal((await ask(other)).statusCode, 201)
  const court = await ask(other)
  t.equal(court.statusCode, 429, "the court's sixth member request within a minute (the refused one counted too)")
  t.match(errorOf(court).message, /members' replays of this court: at most 5 per 1 minute\(s\)/)
  t.ok(Number(court.headers['retry-after']) <= 60)

  const staff = await userWithToken(ctx, 'staff')
  t.equal((await ask(staff)).statusCode, 201, 'staff are not counted')
})

t.test('a guest is a guest of one court: the session of one court page asks for no other', async (t) => {
  const { ctx, venue, admin, call } = await filmedVenue(t, GUESTS_ON)
  const session = await call('POST', `${REPLAYS}/guest-sessions`, undefined, { court: { id: venue.court1.id } })
  t.equal(session.statusCode, 201)
  const guest = { authorization: `Bearer ${session.json().token}` }
  const elsewhere = await call('POST', REPLAYS, guest, { court: { id: venue.court2.id } })
  t.equal(elsewhere.statusCode, 403, 'another court')
  t.match(errorOf(elsewhere).message, "this guest session was made on another court's page")
  const here = await call('POST', REPLAYS, guest, { court: { id: venue.court1.id }, seconds: 20 })
  t.equal(here.statusCode, 201, 'its own court')
  const claimed = await call('POST', REPLAYS, guest, { court: { id: venue.court1.id }, end: new Date(ctx.clock.now().getTime() - 11 * MINUTE).toISOString() })
  t.equal(claimed.statusCode, 400, "a guest is held to the members' age limit")

  // A session from before sessions were bound (no court) asks for nothing.
  const token = 'guest.unbound-session-of-before'
  const now = ctx.clock.now().toISOString()
  await ctx.app.db.insertInto('replay_guests').values({ id: 'g-old', token_hash: sha256Hex(token), court_id: null, created_at: now, expires_at: new Date(Date.parse(now) + 3_600_000).toISOString() }).execute()
  t.equal((await call('POST', REPLAYS, { authorization: `Bearer ${token}` }, { court: { id: venue.court1.id } })).statusCode, 403)

  const guestId = (await ctx.app.db.selectFrom('replay_guests').select('id').where('token_hash', '=', sha256Hex(session.json().token)).executeTakeFirstOrThrow()).id
  const log = (await call('GET', LOG, { authorization: admin })).json()
  t.equal(log._total, 1)
  t.match(log.items[0], { actor: 'guest', user: null, guestSession: { id: guestId }, purpose: 'REPLAY', court: { id: venue.court1.id }, start: here.json().start, end: here.json().end })
  t.notMatch(JSON.stringify(log), session.json().token, 'never the token')
})

t.test('replays/cleanup deletes the looks older than FOOTAGE_LOG_RETENTION_DAYS, and only those', async (t) => {
  const { ctx, venue, member, call } = await filmedVenue(t, { FOOTAGE_LOG_RETENTION_DAYS: '30', REPLAY_RETENTION_DAYS: '365' })
  t.equal((await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).statusCode, 201)
  ctx.clock.advance(20 * 86_400_000)
  // Tokens of 20 days ago have expired: fresh ones.
  t.equal((await call('POST', REPLAYS, await userWithToken(ctx, 'member'), { court: { id: venue.court1.id } })).statusCode, 201)
  ctx.clock.advance(11 * 86_400_000)
  const run = await ctx.app.jobs.run('replays-cleanup', { trigger: 'cli' })
  t.match(run, { kind: 'ran', run: { counts: { footage_access_deleted: 1 } } })
  const left = (await call('GET', LOG, { authorization: await adminOf(ctx) })).json()
  t.equal(left._total, 1, 'the 11-day-old look stays')
  t.equal(left.items[0].date, new Date(ctx.clock.now().getTime() - 11 * 86_400_000).toISOString())
})

t.test('club footage log: the same page from a shell, by user id or e-mail', async (t) => {
  const { ctx, venue, member, call } = await filmedVenue(t)
  t.equal((await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).statusCode, 201)
  const club = async (...args: string[]) => {
    const out: string[] = []
    const err: string[] = []
    const code = await runCli(args, { DATABASE_URL: ctx.config.DATABASE_URL, PASSWORD_HASH_COST: '1024' }, (s) => out.push(s), (s) => err.push(s))
    return { code, json: () => JSON.parse(out.join('\n')), err: err.join('\n') }
  }
  const byId = await club('footage', 'log', '--user', member.id)
  t.equal(byId.code, 0, byId.err)
  t.match(byId.json(), { _total: 1, items: [{ actor: 'member', user: { id: member.id }, purpose: 'REPLAY' }] })
  const byEmail = await club('footage', 'log', '--user', member.email, '--court', venue.court1.id)
  t.equal(byEmail.json()._total, 1)
  const unknown = await club('footage', 'log', '--user', 'nobody@example.org')
  t.equal(unknown.code, 2)
  t.match(unknown.err, 'no user with email nobody@example.org')
  const bad = await club('footage', 'log', '--ipp', '500')
  t.equal(bad.code, 1)
  t.match(bad.err, 'ipp')
})

t.test('the footage notice says what is kept and whom to ask', async (t) => {
  const { call } = await filmedVenue(t, { FOOTAGE_CONTACT: 'privacy@club.example.org', FOOTAGE_LOG_RETENTION_DAYS: '90' })
  const notice = await call('GET', '/apis/v2/replays/footage-notice', undefined)
  t.equal(notice.statusCode, 200)
  t.same(notice.json(), { replayMaxAgeSeconds: 600, replayRetentionDays: 30, footageLogRetentionDays: 90, contact: 'privacy@club.example.org' })
})
