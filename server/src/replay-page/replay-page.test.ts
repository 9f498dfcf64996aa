// The court page and its sign through the API (its words and their choice are tested in packages/web):
// the page and its assets (and their size), the 404 for people and for programs, guests on and off with
// their limits, and the sign as SVG and as an A5 PDF.
import t, { type Test } from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { PDFDocument } from 'pdf-lib'
import { migrateToLatest, migratorFor } from '../db/database.js'
import { loadConfig } from '../config.js'
import { errorOf, testApp, userWithToken } from '../test-support/app.js'
import { testVenue } from '../test-support/venue.js'
import { adminOf, approve, camera, putConfig, registeredBox } from '../replay-servers/test-helpers.js'
import { wrap } from './sign.js'
import { runCli } from '../cli.js'
import { deleteExpiredReplays } from '../replays/clips.js'
import { sha256Hex } from '../crypto.js'

const GUESTS_ON = { REPLAYS_GUEST: 'true', REPLAYS_REQUIRE_ACCOUNT: 'false' }

/** A venue whose court1 is filmed by an approved box. */
async function setup(t: Test, env: Record<string, string> = {}) {
  const ctx = await testApp(t, { PUBLIC_BASE_URL: 'https://club.example.org', CLUB_NAME: 'Padel Club Süd', ...env })
  const venue = await testVenue(ctx)
  const admin = await adminOf(ctx)
  const { id } = await registeredBox(ctx)
  t.equal((await approve(ctx, admin, id, { areaId: venue.hall.id })).statusCode, 200)
  const bucket = pathToFileURL(join(ctx.dir, 'bucket')).href
  t.equal((await putConfig(ctx, admin, id, { cloudStorageBucket: bucket, cameras: [camera('cam-1', { courtIds: [venue.court1.id] })] })).statusCode, 200)
  const inject = (method: 'GET' | 'POST', url: string, options: { headers?: Record<string, string>; payload?: object; remoteAddress?: string } = {}) =>
    ctx.app.inject({ method, url, ...options })
  return { ctx, venue, admin, inject }
}

t.test('settings: the buttons within REPLAY_MAX_SECONDS; guests and accounts agree', async (t) => {
  t.throws(() => loadConfig({ REPLAY_PAGE_SECONDS: '30,600' }), /REPLAY_PAGE_SECONDS="30,600" is not valid: .*REPLAY_MAX_SECONDS \(300\)/)
  t.throws(() => loadConfig({ REPLAY_PAGE_SECONDS: '30,,60' }), /REPLAY_PAGE_SECONDS/)
  t.throws(() => loadConfig({ REPLAY_PAGE_SECONDS: '0' }), /REPLAY_PAGE_SECONDS/)
  t.equal(loadConfig({ REPLAY_PAGE_SECONDS: '10,20,30' }).REPLAY_PAGE_SECONDS, '10,20,30')
  t.throws(() => loadConfig({ REPLAYS_GUEST: 'true' }), /REPLAYS_GUEST=true needs REPLAYS_REQUIRE_ACCOUNT=false/)
  t.throws(() => loadConfig({ REPLAYS_REQUIRE_ACCOUNT: 'false' }), /needs REPLAYS_GUEST=true/)
  t.equal(loadConfig(GUESTS_ON).REPLAYS_GUEST, true)
})

t.test('the court page: its words in the asked language, small assets cached for a year, a 404 for each kind of caller', async (t) => {
  const { venue, inject } = await setup(t)
  const page = await inject('GET', `/r/${venue.court1.slug}`, { headers: { 'accept-language': 'de-DE,de;q=0.9', accept: 'text/html' } })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  t.equal(page.headers['cache-control'], 'no-store')
  t.match(page.headers['content-security-policy'], /script-src 'self'.*connect-src 'self'/)
  t.match(page.body, '<html lang="de">')
  t.match(page.body, 'Court 1')
  t.match(page.body, 'Padel Club Süd')
  t.match(page.body, '>Letzte 30 s</button>')
  t.match(page.body, '>Letzte 60 s</button>')
  t.notMatch(page.body, /https?:\/\//, 'the page names no other origin')
  // What is recorded and for how long, in the page's language; no FOOTAGE_CONTACT: the desk.
  t.match(page.body, '<p id="footage-notice" class="muted">Dieser Platz wird gefilmt. Eine Wiederholung wird 30 Tage aufbewahrt')
  t.match(page.body, 'festgehalten und 180 Tage aufbewahrt. Fragen zu den Aufnahmen: bitte an der Rezeption des Clubs.</p>')
  t.match(page.body, '"maxAgeSeconds":600', 'the script holds an offline tap to REPLAY_MAX_AGE_SECONDS')

  const english = await inject('GET', `/r/${venue.court1.slug}`, { headers: { 'accept-language': 'fr' } })
  t.match(english.body, '>Last 30 s</button>')
  t.match(english.body, 'every look at the footage (who, when, which minutes) is recorded and kept 180 days')

  const paths = [...page.body.matchAll(/(?:src|href)="(\/r\/assets\/[^"]+)"/g)].map((m) => m[1]!)
  t.equal(paths.length, 2, 'one script, one style sheet')
  let total = Buffer.byteLength(page.body)
  for (const path of paths) {
    const res = await inject('GET', path)
    t.equal(res.statusCode, 200)
    t.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable')
    const again = await inject('GET', path, { headers: { 'if-none-match': String(res.headers.etag) } })
    t.equal(again.statusCode, 304, 'a forced reload is answered by the ETag')
    t.equal(again.rawPayload.length, 0)
    total += res.rawPayload.length
  }
  t.ok(total < 50 * 1024, `the page, its script and styles: ${total} bytes (< 50 KB)`)
  t.equal((await inject('GET', '/r/assets/page.0000.js')).statusCode, 404)

  const api = await inject('GET', '/r/no-such-court', { headers: { accept: 'application/json' } })
  t.equal(api.statusCode, 404)
  t.match(errorOf(api).message, 'no court with slug no-such-court')
  const person = await inject('GET', '/r/no-such-court', { headers: { accept: 'text/html,application/xhtml+xml', 'accept-language': 'nl' } })
  t.equal(person.statusCode, 404)
  t.match(person.headers['content-type'], /^text\/html/)
  t.match(person.body, 'Deze baan bestaat niet')
  t.equal((await inject('GET', '/r/..%2F..%2Fetc', { headers: { accept: 'application/json' } })).statusCode, 404)
})

t.test("the notice names FOOTAGE_CONTACT, escaped, in the page's words", async (t) => {
  const { venue, inject } = await setup(t, { FOOTAGE_CONTACT: 'privacy@club.example.org <Mia & Jo>', FOOTAGE_LOG_RETENTION_DAYS: '60' })
  const page = await inject('GET', `/r/${venue.court1.slug}`, { headers: { 'accept-language': 'nl' } })
  t.match(page.body, 'wordt vastgelegd en 60 dagen bewaard. Vragen over de beelden: privacy@club.example.org &lt;Mia &amp; Jo&gt;.</p>')
})

t.test('guests off (the default): the page asks to sign in, guest sessions are refused', async (t) => {
  const { venue, inject } = await setup(t)
  const page = await inject('GET', `/r/${venue.court1.slug}`)
  t.match(page.body, '"guests":false')
  const refused = await inject('POST', '/apis/v2/replays/guest-sessions', { payload: { court: { id: venue.court1.id } } })
  t.equal(refused.statusCode, 403)
  t.match(errorOf(refused).message, /REPLAYS_GUEST/)
})

t.test('guests on: a token per phone, replays without a package item, seen only by that phone', async (t) => {
  const { ctx, venue, inject } = await setup(t, { ...GUESTS_ON, REPLAYS_REQUIRE_PACKAGE: 'true' })
  t.match((await inject('GET', `/r/${venue.court1.slug}`)).body, '"guests":true')
  const unknownCourt = await inject('POST', '/apis/v2/replays/guest-sessions', { payload: { court: { id: 'nope' } } })
  t.equal(unknownCourt.statusCode, 400)
  const session = async () => {
    const res = await inject('POST', '/apis/v2/replays/guest-sessions', { payload: { court: { id: venue.court1.id } } })
    t.equal(res.statusCode, 201)
    return res.json() as { token: string; expiresAt: string }
  }
  const a = await session()
  const b = await session()
  t.match(a.token, /^guest\./)
  t.equal(a.expiresAt, new Date(ctx.clock.now().getTime() + 86_400_000).toISOString())
  const stored = await ctx.app.db.selectFrom('replay_guests').selectAll().where('token_hash', '=', sha256Hex(a.token)).execute()
  t.equal(stored.length, 1, "the guest's row holds the token's SHA-256")
  t.notMatch(JSON.stringify(stored), a.token.slice('guest.'.length), 'and the token itself nowhere')

  const as = (token: string) => ({ authorization: `Bearer ${token}` })
  const created = await inject('POST', '/apis/v2/replays', { headers: as(a.token), payload: { court: { id: venue.court1.id }, seconds: 30 } })
  t.equal(created.statusCode, 201, 'no package item needed')
  t.equal(created.json().user, null)
  const id = created.json().id
  t.equal((await inject('GET', `/apis/v2/replays/${id}`, { headers: as(a.token) })).statusCode, 200)
  t.equal((await inject('GET', `/apis/v2/replays/${id}`, { headers: as(b.token) })).statusCode, 404, "another phone's guest does not see it")
  const member = await userWithToken(ctx, 'member')
  t.equal((await inject('GET', `/apis/v2/replays/${id}`, { headers: { authorization: member.authorization } })).statusCode, 404)
  t.equal((await inject('GET', '/apis/v2/replays', { headers: as(a.token) })).json()._total, 1)
  t.equal((await inject('GET', '/apis/v2/replays', { headers: as(b.token) })).json()._total, 0)
  t.equal((await inject('GET', `/apis/v2/replays?user=${member.id}`, { headers: as(a.token) })).statusCode, 400)
  const staff = await userWithToken(ctx, 'staff')
  t.equal((await inject('GET', `/apis/v2/replays/${id}`, { headers: { authorization: staff.authorization } })).statusCode, 200, 'staff see every replay')

  // A member still pays with an item.
  const paid = await inject('POST', '/apis/v2/replays', { headers: { authorization: member.authorization }, payload: { court: { id: venue.court1.id } } })
  t.equal(paid.statusCode, 402)

  const forged = await inject('GET', '/apis/v2/replays', { headers: as('guest.not-a-real-token') })
  t.equal(forged.statusCode, 401)
  t.match(errorOf(forged).message, /guest token is not valid/)
  ctx.clock.advance(86_400_000)
  t.equal((await inject('GET', '/apis/v2/replays', { headers: as(a.token) })).statusCode, 401, 'expired after REPLAY_GUEST_SESSION_TTL_SECONDS')
  t.notMatch(ctx.logs(), a.token.slice(6), 'the token is never logged')
})

t.test("guests' replays are limited per address and per court; guest sessions per address", async (t) => {
  const { venue, inject } = await setup(t, { ...GUESTS_ON, REPLAY_GUEST_ADDRESS_RATE_LIMIT_MAX: '2', REPLAY_GUEST_COURT_RATE_LIMIT_MAX: '3' })
  const session = (remoteAddress: string) => inject('POST', '/apis/v2/replays/guest-sessions', { payload: { court: { id: venue.court1.id } }, remoteAddress })
  const tokens = [(await session('10.0.0.1')).json().token, (await session('10.0.0.2')).json().token]
  const third = await session('10.0.0.1')
  t.equal((await session('10.0.0.1')).statusCode, 429, 'sessions: at most 2 an hour from one address')
  t.equal(third.statusCode, 201)
  const ask = (token: string, remoteAddress: string) =>
    inject('POST', '/apis/v2/replays', { headers: { authorization: `Bearer ${token}` }, payload: { court: { id: venue.court1.id }, seconds: 10 }, remoteAddress })
  t.equal((await ask(tokens[0], '10.0.0.1')).statusCode, 201)
  t.equal((await ask(tokens[0], '10.0.0.1')).statusCode, 201)
  const perAddress = await ask(tokens[0], '10.0.0.1')
  t.equal(perAddress.statusCode, 429)
  t.match(errorOf(perAddress).message, /Too many guest replays from this address: at most 2 per 1 hour/)
  t.equal((await ask(tokens[1], '10.0.0.2')).statusCode, 201)
  const perCourt = await ask(tokens[1], '10.0.0.2')
  t.equal(perCourt.statusCode, 429)
  t.match(errorOf(perCourt).message, /guests' replays of this court: at most 3/)
})

t.test("the court's sign: SVG by default, an A5 PDF on request, staff only", async (t) => {
  const { ctx, venue, admin, inject } = await setup(t)
  const url = `/apis/v2/admin/courts/${venue.court1.id}/sign`
  const member = await userWithToken(ctx, 'member')
  t.equal((await inject('GET', url, { headers: { authorization: member.authorization } })).statusCode, 403)
  t.equal((await inject('GET', url)).statusCode, 401)
  const staff = await userWithToken(ctx, 'staff')
  const svg = await inject('GET', url, { headers: { authorization: staff.authorization, 'accept-language': 'de' } })
  t.equal(svg.statusCode, 200)
  t.match(svg.headers['content-type'], /^image\/svg\+xml/)
  t.match(svg.body, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="148mm" height="210mm"/)
  t.match(svg.body, '>Padel Club Süd</text>')
  t.match(svg.body, '>Court 1</text>')
  t.match(svg.body, 'Letzte 30 s')
  t.match(svg.body, `>https://club.example.org/r/${venue.court1.slug}</text>`)
  t.match(svg.body, /<path d="(M[\d.]+ [\d.]+h[\d.]+v[\d.]+h-[\d.]+z)+"/, 'the QR code as squares')

  for (const headers of [{ authorization: admin }, { authorization: admin, accept: 'application/pdf' }] as Array<Record<string, string>>) {
    const pdf = await inject('GET', headers.accept ? url : `${url}?format=pdf`, { headers })
    t.equal(pdf.statusCode, 200)
    t.equal(pdf.headers['content-type'], 'application/pdf')
    t.equal(pdf.rawPayload.subarray(0, 5).toString(), '%PDF-')
    const doc = await PDFDocument.load(pdf.rawPayload)
    t.equal(doc.getPageCount(), 1)
    const { width, height } = doc.getPage(0).getSize()
    t.ok(Math.abs(width - 419.53) < 0.1 && Math.abs(height - 595.28) < 0.1, `A5: ${width} x ${height} pt`)
    t.equal(doc.getTitle(), 'Padel Club Süd: Court 1')
  }
  t.equal((await inject('GET', `${url}?format=png`, { headers: { authorization: admin } })).statusCode, 400)
  const missing = await inject('GET', '/apis/v2/admin/courts/nope/sign', { headers: { authorization: admin } })
  t.equal(missing.statusCode, 404)
  errorOf(missing)
})

t.test("0016 rebuilds replays: a member's replay survives down and up, the box's counter still moves", async (t) => {
  const { ctx, venue, inject } = await setup(t, GUESTS_ON)
  const member = await userWithToken(ctx, 'member')
  const mine = await inject('POST', '/apis/v2/replays', { headers: { authorization: member.authorization }, payload: { court: { id: venue.court1.id } } })
  t.equal(mine.statusCode, 201)
  const guest = (await inject('POST', '/apis/v2/replays/guest-sessions', { payload: { court: { id: venue.court1.id } } })).json()
  t.equal((await inject('POST', '/apis/v2/replays', { headers: { authorization: `Bearer ${guest.token}` }, payload: { court: { id: venue.court1.id } } })).statusCode, 201)
  const db = ctx.app.db
  const counter = async () => (await db.selectFrom('replay_server_status_changes').select('counter').executeTakeFirstOrThrow()).counter
  await migratorFor(db).migrateTo('0015_replays')
  t.same((await db.selectFrom('replays').select('id').execute()).map((r) => r.id), [mine.json().id], "a guest's replay has no user to keep it going down")
  await migrateToLatest(db)
  const row = await db.selectFrom('replays').selectAll().executeTakeFirstOrThrow()
  t.match(row, { id: mine.json().id, user_id: member.id, guest_id: null, status: 'REQUESTED', court_id: venue.court1.id })
  const before = await counter()
  await db.updateTable('replays').set({ status: 'EXPORTING' }).where('id', '=', row.id).execute()
  t.equal(await counter(), before + 1, 'the status trigger is back')
  await t.rejects(db.updateTable('replays').set({ user_id: null }).where('id', '=', row.id).execute(), /CHECK constraint failed|violates check constraint "replays_one_owner"/, 'a replay has one owner')
})

t.test('the replays clean-up removes a guest once its token has expired and its last clip is gone', async (t) => {
  const { ctx, venue, inject } = await setup(t, GUESTS_ON)
  const newGuest = async () => (await inject('POST', '/apis/v2/replays/guest-sessions', { payload: { court: { id: venue.court1.id } } })).json()
  const withReplay = await newGuest()
  t.equal((await inject('POST', '/apis/v2/replays', { headers: { authorization: `Bearer ${withReplay.token}` }, payload: { court: { id: venue.court1.id } } })).statusCode, 201)
  const idle = await newGuest()
  const guests = async () => (await ctx.app.db.selectFrom('replay_guests').select('id').execute()).length
  const storage = { remove: async () => {} }
  const day = 86_400_000
  const at = (days: number) => new Date(ctx.clock.now().getTime() + days * day)

  await deleteExpiredReplays(ctx.app.db, storage, at(0), 30)
  t.equal(await guests(), 2, 'tokens still valid: both kept')
  await deleteExpiredReplays(ctx.app.db, storage, at(2), 30)
  t.equal(await guests(), 1, 'the expired guest without replays goes; the one with a replay waits for it')
  t.equal((await inject('GET', '/apis/v2/replays', { headers: { authorization: `Bearer ${idle.token}` } })).statusCode, 401)
  t.equal(await deleteExpiredReplays(ctx.app.db, storage, at(31), 30), 1, 'the replay expires after the retention')
  t.equal(await guests(), 0, 'and its guest goes with it')
  t.equal((await ctx.app.db.selectFrom('replays').select('id').execute()).length, 0, "the guest's expired replay goes by cascade")
})

t.test('club courts signs: every sign of an area written to files', async (t) => {
  const { ctx, venue } = await setup(t)
  const env = { DATABASE_URL: ctx.config.DATABASE_URL, PUBLIC_BASE_URL: 'https://club.example.org', CLUB_NAME: 'Padel Club Süd' }
  const run = async (...argv: string[]) => {
    let out = ''
    let err = ''
    const code = await runCli(argv, env, (s) => (out += s), (s) => (err += s))
    return { code, out, err }
  }
  const dir = join(ctx.dir, 'signs')
  const pdfs = await run('courts', 'signs', '--area', venue.hall.id, '--dir', dir)
  t.equal(pdfs.code, 0, pdfs.err)
  t.same(JSON.parse(pdfs.out), { written: [join(dir, `sign-${venue.court1.slug}.pdf`)] })
  t.equal(readFileSync(join(dir, `sign-${venue.court1.slug}.pdf`)).subarray(0, 5).toString(), '%PDF-')
  const svgs = await run('courts', 'signs', '--area', venue.hall.id, '--dir', dir, '--format', 'svg', '--lang', 'nl')
  t.equal(svgs.code, 0, svgs.err)
  t.match(readFileSync(join(dir, `sign-${venue.court1.slug}.svg`), 'utf8'), 'Laatste 30 s')
  t.match((await run('courts', 'signs', '--area', 'nope', '--dir', dir)).err, /--area: no area with id "nope"/)
  t.match((await run('courts', 'signs', '--area', venue.hall.id, '--dir', dir, '--format', 'png')).err, /--format is pdf or svg/)
  t.match((await run('courts', 'signs', '--area', venue.hall.id, '--dir', dir, '--lang', 'constructor')).err, /--lang is one of de, en, nl; got "constructor"/)
  t.same(wrap('Scan with your phone, then tap it', 12), ['Scan with', 'your phone,', 'then tap it'])
})
