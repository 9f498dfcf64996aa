// A member's matches on the court page (issue 49), end to end: a real server, Debian's Chromium with a
// phone's viewport, and a match of two cameras made as the server makes one (a booking's redemption,
// the match, its two READY angles in a file:// bucket, a replay asked during it as a chapter), seeded
// into its database because no box cuts a match here. The member who booked opens it, sees both angles
// and the chapter, taps the chapter and the video stands at its second; another member sees nothing.
import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import type { Page } from 'playwright-core'
import { PHONE, launchBrowser, openPage } from './browser.js'
import { TestServer, tempDir } from './support.js'

const execFileAsync = promisify(execFile)
/** The clips' frame rate: "within a frame" is this many seconds. */
const FPS = 25
const FRAME = 1 / FPS
/** The match: 20 s (short clips; the page treats a 90-minute one the same). */
const MATCH_SECONDS = 20
/** The chapter: a replay the booker asked for 12.48 s into the match (not on a keyframe, not on a whole second). */
const CHAPTER_AT = 12.48

/** One camera's angle: MATCH_SECONDS of a test pattern, a keyframe a second, as a box's cut would be. */
async function angleClip(path: string, pattern: string): Promise<void> {
  await execFileAsync('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `${pattern}=size=320x240:rate=${FPS}`, '-t', String(MATCH_SECONDS),
    '-c:v', 'libx264', '-preset', 'ultrafast', '-g', String(FPS), '-pix_fmt', 'yuv420p', '-movflags', '+faststart', path
  ])
}

type Who = { id: string; authorization: string; email: string; password: string }

/**
 * A booking of `court` by `booker` that ended a minute ago, made into a match as the server makes one
 * when MATCH_RECORDING is `bookings`: its two cameras' angles READY in the bucket at `dir`/bucket, and
 * a replay the booker asked for during it as a chapter. Answers the match's id.
 */
async function seedMatch(server: TestServer, dir: string, court: string, booker: Who): Promise<{ matchId: string; askedId: string }> {
  const staff = await server.admin()
  const template = await server.call('POST', '/apis/v2/templates', staff, {
    name: 'One booking',
    type: 'PACKAGE',
    status: 'PUBLISHED',
    data: { validityDays: 30, items: [{ type: 'BOOKING', displayName: 'Court booking', displayNamePlural: 'Court bookings', totalItems: 1 }] }
  })
  if (template.status !== 201) throw new Error(`template: ${template.status} ${JSON.stringify(template.json)}`)
  const pkg = await server.call('POST', '/apis/v2/packages', staff, { template: { id: template.json.id }, user: { id: booker.id } })
  if (pkg.status !== 201) throw new Error(`package: ${pkg.status} ${JSON.stringify(pkg.json)}`)
  // Whole seconds: the stored times are the redemption's, which the server keeps to the millisecond.
  const end = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000)
  const start = new Date(end.getTime() - MATCH_SECONDS * 1000)
  const redemption = await server.call('POST', `/apis/v2/packages/${pkg.json.id}/redemptions`, booker.authorization, {
    type: 'BOOKING',
    target: { booking: { court: { id: court }, startDate: start.toISOString(), endDate: end.toISOString() } }
  })
  if (redemption.status !== 201) throw new Error(`booking: ${redemption.status} ${JSON.stringify(redemption.json)}`)

  const db = server.app!.db
  const now = new Date().toISOString()
  const bucket = pathToFileURL(join(dir, 'bucket')).href
  const matchId = crypto.randomUUID()
  // The replay the booker asked for during the match: the chapter's.
  const asked = crypto.randomUUID()
  const askedStart = new Date(start.getTime() + CHAPTER_AT * 1000)
  await db
    .insertInto('replays')
    .values({
      id: asked, user_id: booker.id, guest_id: null, court_id: court, replay_server_id: null, camera_id: 'cam-1', start_at: askedStart.toISOString(),
      end_at: new Date(askedStart.getTime() + 5000).toISOString(), status: 'FAILED', reason: 'no_footage', location: null, duration_seconds: null,
      size_bytes: null, sha256: null, package_id: null, redemption_id: null, created_at: now, updated_at: now, bucket: null, taken_down_at: null,
      taken_down_by: null, taken_down_reason: null, kind: 'CLIP', match_id: null
    })
    .execute()
  await db
    .insertInto('matches')
    .values({
      id: matchId, court_id: court, source_type: 'BOOKING', redemption_id: redemption.json.id, event_id: null, start_at: start.toISOString(), end_at: end.toISOString(),
      chapters: JSON.stringify([{ at: CHAPTER_AT, label: 'Replay 19:42', replayId: asked, userId: booker.id }]), mailed_at: null, created_at: now, updated_at: now
    })
    .execute()
  for (const [camera, pattern] of [['cam-1', 'testsrc2'], ['cam-2', 'smptebars']] as const) {
    const id = crypto.randomUUID()
    mkdirSync(join(dir, 'bucket', camera), { recursive: true })
    const file = join(dir, 'bucket', camera, `${id}.mp4`)
    await angleClip(file, pattern)
    await db
      .insertInto('replays')
      .values({
        id, user_id: booker.id, guest_id: null, court_id: court, replay_server_id: null, camera_id: camera, start_at: start.toISOString(), end_at: end.toISOString(),
        status: 'READY', reason: null, location: pathToFileURL(file).href, duration_seconds: MATCH_SECONDS, size_bytes: 1, sha256: null, package_id: null,
        redemption_id: null, created_at: now, updated_at: now, bucket, taken_down_at: null, taken_down_by: null, taken_down_reason: null, kind: 'MATCH', match_id: matchId
      })
      .execute()
  }
  return { matchId, askedId: asked }
}

/** The court page signed in as `who`, with its list of matches made. */
async function signIn(page: Page, courtUrl: string, who: Who): Promise<void> {
  await page.goto(courtUrl)
  await page.waitForSelector('body[data-ready="true"]')
  await page.fill('input[name=email]', who.email)
  await page.fill('input[name=password]', who.password)
  await page.tap('#signin-form button[type=submit]')
  await page.waitForSelector('body[data-view="member"]')
  await page.waitForSelector('#matches[data-loaded]', { state: 'attached', timeout: 30_000 })
}

t.test("a member's match on the court page: both angles, the chapter, a tap that jumps the video; another member sees none", async (t) => {
  const dir = tempDir(t)
  const server = new TestServer(dir, { CLUB_NAME: 'Padel Club Süd' })
  await server.start()
  t.teardown(() => server.stop())
  const court = await server.court(await server.area())
  const slug = (await server.app!.db.selectFrom('courts').select('slug').where('id', '=', court).executeTakeFirstOrThrow()).slug
  const courtUrl = `${server.url}/r/${slug}`
  const booker = (await server.user('member')) as Who
  const other = (await server.user('member')) as Who
  const { matchId, askedId } = await seedMatch(server, dir, court, booker)

  const browser = await launchBrowser(t)
  const { page, screenshot, foreignRequests } = await openPage(browser, PHONE)
  await signIn(page, courtUrl, booker)
  const entry = page.locator(`#matches li[data-id="${matchId}"]`)
  await entry.waitFor({ timeout: 30_000 })
  t.equal(await entry.getAttribute('data-status'), 'READY')
  t.match(await entry.textContent(), /Match on Court 1, /, "the match's court by name (this page's)")
  // The clips below are the member's own taps: the replay asked during the match, not the match's angles again.
  await page.waitForSelector('#mine li[data-id]')
  t.same(await page.locator('#mine li[data-id]').evaluateAll((items) => items.map((li) => (li as HTMLElement).dataset.id)), [askedId], 'the clips list holds the tap, not the angles')
  await screenshot('match-page-list')

  await entry.getByRole('button').tap()
  await page.waitForSelector(`#match[data-id="${matchId}"] #angles button`)
  const angles = page.locator('#angles button')
  t.equal(await angles.count(), 2, 'one button per camera')
  t.same(await angles.evaluateAll((buttons) => buttons.map((b) => [b.textContent, (b as HTMLButtonElement).disabled])), [['Camera 1', false], ['Camera 2', false]], 'both playable')
  const chapter = page.locator('#chapters li')
  t.equal(await chapter.count(), 1)
  t.equal(await chapter.textContent(), 'Replay 19:42 · 0:12 · your rally', "the booker's own replay, marked as theirs")
  t.equal(await chapter.getAttribute('class'), 'yours')
  // The first angle plays: it has data before anyone taps a chapter.
  await page.waitForFunction(() => (document.getElementById('match-player') as HTMLVideoElement).readyState >= 2, undefined, { timeout: 30_000 })
  const duration = await page.evaluate(() => (document.getElementById('match-player') as HTMLVideoElement).duration)
  t.ok(Math.abs(duration - MATCH_SECONDS) <= FRAME, `the angle's video is the match's length (${duration} s)`)

  const seeked = page.evaluate(() => new Promise<number>((resolve) => {
    const video = document.getElementById('match-player') as HTMLVideoElement
    video.addEventListener('seeked', () => resolve(video.currentTime), { once: true })
  }))
  await chapter.getByRole('button').tap()
  const at = await seeked
  t.ok(Math.abs(at - CHAPTER_AT) <= FRAME, `the video jumped to the chapter: ${at} s for ${CHAPTER_AT} s, within a frame`)
  await page.waitForFunction(() => (document.getElementById('match-player') as HTMLVideoElement).readyState >= 2, undefined, { timeout: 30_000 })
  await screenshot('match-page-chapter')

  // The other camera at the same moment: the rally from the other side.
  const src = await page.getAttribute('#match-player', 'src')
  await angles.nth(1).tap()
  await page.waitForFunction((before) => (document.getElementById('match-player') as HTMLVideoElement).src !== before, src, { timeout: 10_000 })
  t.equal(await angles.nth(1).getAttribute('aria-pressed'), 'true')
  await page.waitForFunction(() => (document.getElementById('match-player') as HTMLVideoElement).readyState >= 2, undefined, { timeout: 30_000 })
  const kept = await page.evaluate(() => (document.getElementById('match-player') as HTMLVideoElement).currentTime)
  t.ok(Math.abs(kept - CHAPTER_AT) <= FRAME, `camera 2 stands at the same second (${kept} s)`)
  await screenshot('match-page-camera-2')
  t.same(foreignRequests(server.url), [], 'nothing asked of another origin')

  await t.test('another member signed in on the same page sees no match, and the API answers them 404', async (t) => {
    const { page } = await openPage(browser, PHONE)
    await signIn(page, courtUrl, other)
    t.equal(await page.locator('#matches li').count(), 0, 'no match listed')
    t.equal(await page.locator('#match').count(), 0, 'no match card')
    t.equal((await server.call('GET', `/apis/v2/matches/${matchId}`, other.authorization)).status, 404)
  })
})

t.test('MATCH_REQUIRES_PACKAGE with no REPLAY item left: opening the match says so in its card, with the shop, and plays nothing', async (t) => {
  const dir = tempDir(t)
  const server = new TestServer(dir, { MATCH_REQUIRES_PACKAGE: 'true', REPLAY_SHOP_URL: 'https://shop.example.org/replays' })
  await server.start()
  t.teardown(() => server.stop())
  const court = await server.court(await server.area())
  const slug = (await server.app!.db.selectFrom('courts').select('slug').where('id', '=', court).executeTakeFirstOrThrow()).slug
  const booker = (await server.user('member')) as Who
  const { matchId } = await seedMatch(server, dir, court, booker)

  const browser = await launchBrowser(t)
  const { page, screenshot } = await openPage(browser, PHONE)
  await signIn(page, `${server.url}/r/${slug}`, booker)
  const entry = page.locator(`#matches li[data-id="${matchId}"]`)
  await entry.waitFor({ timeout: 30_000 })
  const [answer] = await Promise.all([page.waitForResponse((res) => new URL(res.url()).pathname === `/apis/v2/matches/${matchId}`), entry.getByRole('button').tap()])
  t.equal(answer.status(), 402)
  await page.waitForSelector('#match-message[data-kind="error"]')
  t.match(await page.textContent('#match-message'), /^You have no replay left in your packages\./)
  t.equal(await page.getAttribute('#match-message a', 'href'), 'https://shop.example.org/replays', "the club's shop (REPLAY_SHOP_URL)")
  t.equal(await page.locator('#match-player').count(), 0, 'no player, no angle')
  await screenshot('match-page-no-item')
})
