// The court page on a phone, end to end: a real server, a real agent recording a test camera into a
// file:// bucket (so the clip is served by the server itself, on the page's origin), and Debian's
// Chromium with a phone's viewport and touch. One server, one agent and one camera serve every step;
// a second server (no agent) shows the club that lets no guests in. Screenshots of each state go to
// test/output/screenshots.
import t from 'tap'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Page } from 'playwright-core'
import { PHONE, launchBrowser, openPage, type RecordedPage } from './browser.js'
import { TestAgent, TestServer, ffprobe, freePort, tempDir, testCameraFile, waitFor } from './support.js'

const require = createRequire(import.meta.url)
const JSQR = require.resolve('jsqr')
const ADMIN = '/apis/v2/admin/replay-servers'
/** The phone's clock is five minutes fast: the page must ask for the moment of the tap all the same. */
const PHONE_CLOCK_SKEW_MS = 5 * 60_000
/** How far the server's record of a tap may be from the moment it was made (measured on loopback). */
const TOLERANCE_MS = 1000

/**
 * That, and how far off the page's reckoning of the server's clock may be: it takes the server's time
 * as of the middle of the page's own request, so up to half that request's round trip, which a loaded
 * machine stretches past any fixed margin. Read from the page as last loaded, whose reckoning it uses.
 */
const tolerance = async (page: Page) =>
  TOLERANCE_MS + (await page.evaluate(() => {
    const navigation = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming
    return Math.ceil((navigation.responseStart - navigation.requestStart) / 2)
  }))

t.test('a player gets a replay from the court page on a phone: signed in, offline, as a guest', async (t) => {
  const dir = tempDir(t)
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const server = new TestServer(dir, {
    PUBLIC_BASE_URL: origin,
    CLUB_NAME: 'Padel Club Süd',
    REPLAYS_GUEST: 'true',
    REPLAYS_REQUIRE_ACCOUNT: 'false',
    REPLAY_REQUEST_TIMEOUT_SECONDS: '30'
  }, port)
  await server.start()
  t.teardown(() => server.stop())
  const admin = await server.admin()
  const member = (await server.user('member')) as { id: string; authorization: string; email: string; password: string }
  const areaId = await server.area()
  const created = await server.call('POST', '/apis/v2/admin/courts', admin, { name: 'Court 3', area: { id: areaId } })
  t.equal(created.status, 201)
  const court = created.json as { id: string; slug: string }
  t.equal(court.slug, 'court-3', 'the slug is made from the name')
  const courtUrl = `${origin}/r/${court.slug}`

  const agent = new TestAgent({ serverUrl: server.url, dir: join(dir, 'box'), deviceId: `e2e-page-${Date.now()}`, httpPort: await freePort() })
  agent.start()
  t.teardown(() => agent.stop('SIGKILL'))
  const box = await waitFor('the box registered', async () => (await server.call('GET', `${ADMIN}?deviceId=${agent.settings.deviceId}`, admin)).json.items[0])
  t.equal((await server.call('POST', `${ADMIN}/${box.id}/approve`, admin, { areaId })).status, 200)
  const feed = pathToFileURL(await testCameraFile(dir)).href
  const config = { cloudStorageBucket: pathToFileURL(join(dir, 'bucket')).href, cameras: [{ id: 'cam-1', feed, isEnabled: true, courtIds: [court.id] }] }
  t.equal((await server.call('PUT', `${ADMIN}/${box.id}/config`, admin, config)).status, 200)

  const browser = await launchBrowser(t)
  const pages: RecordedPage[] = []
  const phone = async (options: { skew?: boolean } = {}) => {
    const recorded = await openPage(browser, PHONE)
    pages.push(recorded)
    if (options.skew) {
      await recorded.context.addInitScript(`{ const now = Date.now.bind(Date); Date.now = () => now() + ${PHONE_CLOCK_SKEW_MS} }`)
    }
    // Every status the page shows, in order, however briefly.
    await recorded.context.addInitScript(`
      window.__statuses = []
      document.addEventListener('DOMContentLoaded', () => {
        const card = document.getElementById('current')
        if (card) new MutationObserver(() => {
          const s = card.dataset.status
          if (s && window.__statuses[window.__statuses.length - 1] !== s) window.__statuses.push(s)
        }).observe(card, { attributes: true, attributeFilter: ['data-status', 'data-id'] })
      })`)
    return recorded
  }
  const statuses = (page: Page) => page.evaluate(() => (window as unknown as { __statuses: string[] }).__statuses)
  const currentId = (page: Page) => page.getAttribute('#current', 'data-id')
  const readyVideo = async (page: Page) => {
    await page.waitForSelector('#current[data-status="READY"]', { timeout: 120_000 })
    await page.waitForFunction(() => (document.getElementById('player') as HTMLVideoElement).readyState >= 2, undefined, { timeout: 30_000 })
    return page.evaluate(() => (document.getElementById('player') as HTMLVideoElement).readyState)
  }
  const record = async (id: string) => (await server.call('GET', `/apis/v2/replays/${id}`, admin)).json

  await t.test("the court's sign: its SVG's QR code decodes to the court's address", async (t) => {
    const res = await fetch(`${origin}/apis/v2/admin/courts/${court.id}/sign`, { headers: { authorization: admin } })
    t.equal(res.status, 200)
    const svg = await res.text()
    t.match(svg, 'Padel Club Süd')
    t.match(svg, 'Court 3')
    // Rasterised by Chromium, decoded by jsQR in the same page: nothing leaves it.
    const { page, screenshot } = await openPage(browser, { viewport: { width: 600, height: 860 } })
    await page.setContent('<body style="margin:0"><img id="sign" style="display:block;width:600px"></body>')
    await page.addScriptTag({ path: JSQR })
    const decoded = await page.evaluate(async (source) => {
      const img = document.getElementById('sign') as HTMLImageElement
      img.src = `data:image/svg+xml;base64,${btoa(unescape(encodeURIComponent(source)))}`
      await img.decode()
      const canvas = document.createElement('canvas')
      canvas.width = img.width
      canvas.height = img.height
      const context = canvas.getContext('2d')!
      context.drawImage(img, 0, 0, canvas.width, canvas.height)
      const { data, width, height } = context.getImageData(0, 0, canvas.width, canvas.height)
      const jsQR = (window as unknown as { jsQR: (d: Uint8ClampedArray, w: number, h: number) => { data: string } | null }).jsQR
      return jsQR(data, width, height)?.data ?? null
    }, svg)
    t.equal(decoded, courtUrl)
    await screenshot('court-sign')
    const pdf = await fetch(`${origin}/apis/v2/admin/courts/${court.id}/sign?format=pdf`, { headers: { authorization: admin } })
    t.equal(pdf.headers.get('content-type'), 'application/pdf')
  })

  await t.test('an unknown court: a page in words for a person, the error shape for a program', async (t) => {
    const { page, screenshot } = await phone()
    const res = await page.goto(`${origin}/r/no-such-court`)
    t.equal(res?.status(), 404)
    t.match(await page.textContent('#not-found'), 'This code does not lead to a court of Padel Club Süd')
    await screenshot('replay-page-not-found')
    const api = await fetch(`${origin}/r/no-such-court`, { headers: { accept: 'application/json' } })
    t.match(await api.json(), { statusCode: 404, error: 'Not Found', message: /no court with slug no-such-court/ })
  })

  await t.test('guests off (the default): the page asks for an account and the server refuses guests', async (t) => {
    const offDir = tempDir(t)
    const off = new TestServer(offDir, { PUBLIC_BASE_URL: 'http://127.0.0.1' })
    await off.start()
    t.teardown(() => off.stop())
    const offArea = await off.area()
    const offCourt = (await off.call('POST', '/apis/v2/admin/courts', await off.admin(), { name: 'Court 1', area: { id: offArea } })).json
    const { page, screenshot } = await phone()
    await page.goto(`${off.url}/r/${offCourt.slug}`)
    await page.waitForSelector('body[data-ready="true"]')
    t.equal(await page.getAttribute('body', 'data-view'), 'signin')
    t.ok(await page.isVisible('#signin-form'))
    t.notOk(await page.isVisible('button.tap'), 'no replay without signing in')
    t.notOk(await page.isVisible('#show-signin'))
    await screenshot('replay-page-guests-off')
    const refused = await off.call('POST', '/apis/v2/replays/guest-sessions', '', { court: { id: offCourt.id } })
    t.equal(refused.status, 403)
    t.match(refused.json.message, /REPLAYS_GUEST/)
  })

  // Thirty seconds of footage before anyone asks for the last thirty.
  await waitFor('32 s of footage', () => agent.finishedSegments('cam-1').length >= 16, 120_000)

  const memberPhone = await phone({ skew: true })
  await t.test('a member signs in, taps "Last 30 s", follows it to a playing video, downloads it and finds it in "My replays"', async (t) => {
    const { page, requests, screenshot } = memberPhone
    await page.goto(courtUrl)
    await page.waitForSelector('body[data-ready="true"]')
    t.equal(await page.textContent('#court'), 'Court 3')
    await page.tap('#show-signin')
    await page.fill('input[name=email]', member.email)
    await page.fill('input[name=password]', member.password)
    await screenshot('replay-page-signin')
    await page.tap('#signin-form button[type=submit]')
    await page.waitForSelector('body[data-view="member"]')

    const before = Date.now()
    await page.tap('button.tap[data-seconds="30"]')
    const after = Date.now()
    await page.waitForSelector('#current[data-id]')
    await screenshot('replay-page-progress')
    const id = (await currentId(page))!
    t.ok((await readyVideo(page)) >= 2, 'the <video> has data to play')
    await screenshot('replay-page-ready')
    const seen = await statuses(page)
    t.equal(seen[0], 'REQUESTED', `statuses seen: ${seen.join(' → ')}`)
    t.equal(seen[seen.length - 1], 'READY')
    const order = ['REQUESTED', 'EXPORTING', 'UPLOADING', 'READY']
    t.same([...seen].sort((a, b) => order.indexOf(a) - order.indexOf(b)), seen, 'forward only')

    const replay = await record(id)
    t.equal(replay.user.id, member.id)
    const end = Date.parse(replay.end)
    const off = await tolerance(page)
    t.ok(end >= before - off && end <= after + off, `the replay ends at the tap despite a clock ${PHONE_CLOCK_SKEW_MS / 60000} min fast (${end - before} ms after it, ${off} ms allowed)`)

    const [download] = await Promise.all([page.waitForEvent('download'), page.tap('#download')])
    const saved = join(dir, 'downloaded.mp4')
    await download.saveAs(saved)
    const probe = await ffprobe(saved)
    t.ok(Math.abs(probe.duration - 30) <= 0.5, `ffprobe reads 30 ± 0.5 s (${probe.duration})`)
    t.ok(probe.streams.some((s) => s.codec_type === 'video'))

    await page.waitForSelector(`#mine li[data-id="${id}"][data-status="READY"]`)
    await page.locator('#mine').scrollIntoViewIfNeeded()
    await screenshot('replay-page-my-replays')

    const stored = await page.evaluate(() => JSON.parse(sessionStorage.getItem('club.replays.auth')!))
    t.ok(stored.access && stored.refresh, 'the tokens are in sessionStorage')
    t.notOk(await page.evaluate(() => localStorage.getItem('club.replays.auth')), 'and not in localStorage')
    const leaking = requests.filter((url) => url.includes(stored.access) || url.includes(stored.refresh) || /token=|access_token/.test(url))
    t.same(leaking, [], 'no URL the page asked for carries a token')
    t.notMatch(page.url(), /token/)

    // Share: this Chromium has no Web Share on Linux, so the page copies the link.
    t.notOk(await page.evaluate(() => 'share' in navigator), 'no Web Share here: the copy path runs')
    await memberPhone.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin })
    await page.tap('#share')
    await page.waitForFunction(() => document.getElementById('notice')!.textContent === 'Link copied')
    t.equal(await page.evaluate(() => navigator.clipboard.readText()), await page.getAttribute('#download', 'href'), 'the link is on the clipboard')

    // An access token about to expire is refreshed with the refresh token before the next call.
    await page.evaluate(() => {
      const auth = JSON.parse(sessionStorage.getItem('club.replays.auth')!)
      sessionStorage.setItem('club.replays.auth', JSON.stringify({ ...auth, expiresAt: 0 }))
    })
    await page.reload()
    await page.waitForSelector(`#mine li[data-id="${id}"]`)
    const renewed = await page.evaluate(() => JSON.parse(sessionStorage.getItem('club.replays.auth')!))
    t.not(renewed.access, stored.access, 'a new access token')
    t.not(renewed.refresh, stored.refresh, 'and a new refresh token (rotated)')
    t.equal(await page.getAttribute('body', 'data-view'), 'member', 'still signed in')
  })

  await t.test('a tap while offline is kept, said so, and sent on reconnection with its own time', async (t) => {
    const { page, context, screenshot } = memberPhone
    const previous = await currentId(page)
    await context.setOffline(true)
    const before = Date.now()
    await page.tap('button.tap[data-seconds="30"]')
    const after = Date.now()
    await page.waitForSelector('#notice[data-kind="offline"]')
    t.match(await page.textContent('#notice'), /No network\. Your tap at .* is kept/)
    await screenshot('replay-page-offline')
    const kept = await page.evaluate(() => JSON.parse(localStorage.getItem('club.replays.pending')!))
    t.equal(kept.length, 1, 'the tap waits in localStorage')
    // The time between tap and reconnection is what this proves the page leaves out: longer than the
    // tolerance, so the two cannot be taken for each other.
    const off = await tolerance(page)
    await waitFor('three seconds offline', () => Date.now() - after > 2 * off + 3000)
    const reconnected = Date.now()
    await context.setOffline(false)
    await page.waitForFunction((old) => {
      const id = document.getElementById('current')!.dataset.id
      return id && id !== old
    }, previous, { timeout: 30_000 })
    const replay = await record((await currentId(page))!)
    const end = Date.parse(replay.end)
    t.ok(end >= before - off && end <= after + off, `the replay ends at the tap (${end - before} ms after it, ${off} ms allowed), not at the reconnection`)
    t.ok(end < reconnected - off - 2000)
    t.equal(await page.evaluate(() => localStorage.getItem('club.replays.pending')), '[]', 'and is no longer waiting')
    await readyVideo(page)
  })

  await t.test('a tap the server fails to take (a 5xx) is kept, said so, and sent again', async (t) => {
    const { page, screenshot } = memberPhone
    const previous = await currentId(page)
    // The server's trouble for one answer: the first POST of a replay gets a 503 in the platform's shape.
    let refused = 0
    const replaysRoute = (url: URL) => url.pathname === '/apis/v2/replays'
    await page.route(
      replaysRoute,
      (route) => {
        if (route.request().method() !== 'POST' || refused > 0) return route.continue()
        refused++
        return route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ statusCode: 503, error: 'Service Unavailable', message: 'database busy' }) })
      }
    )
    t.teardown(() => page.unroute(replaysRoute))
    const before = Date.now()
    await page.tap('button.tap[data-seconds="30"]')
    const after = Date.now()
    await page.waitForSelector('#notice[data-kind="retrying"]')
    t.match(await page.textContent('#notice'), /could not take your tap at .* \(503\)\. It is kept and sent again/)
    t.equal((await page.evaluate(() => JSON.parse(localStorage.getItem('club.replays.pending')!))).length, 1, 'the tap still waits')
    await screenshot('replay-page-retrying')
    await page.waitForFunction((old) => {
      const id = document.getElementById('current')!.dataset.id
      return id && id !== old
    }, previous, { timeout: 30_000 })
    t.equal(refused, 1)
    const end = Date.parse((await record((await currentId(page))!)).end)
    const off = await tolerance(page)
    t.ok(end >= before - off && end <= after + off, `sent again with the moment of the tap (${end - before} ms after it, ${off} ms allowed)`)
    t.equal(await page.evaluate(() => localStorage.getItem('club.replays.pending')), '[]', 'and no longer waiting')
  })

  await t.test('signing out ends the login on the server: the old refresh token is refused', async (t) => {
    const { page } = memberPhone
    const stored = await page.evaluate(() => JSON.parse(sessionStorage.getItem('club.replays.auth')!))
    const [revoked] = await Promise.all([page.waitForResponse((res) => new URL(res.url()).pathname === '/apis/v2/oauth2/revoke'), page.tap('#signout')])
    t.equal(revoked.status(), 200)
    t.equal(await page.getAttribute('body', 'data-view'), 'guest')
    t.equal(await page.evaluate(() => sessionStorage.getItem('club.replays.auth')), null, 'the tab forgot the tokens')
    const refresh = await fetch(`${origin}/apis/v2/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: stored.refresh }) })
    t.equal(refresh.status, 400)
    t.equal((await refresh.json()).error, 'invalid_grant')
  })

  await t.test('guests on: a phone without an account gets its replay and sees only its own', async (t) => {
    const { page, screenshot } = await phone()
    await page.goto(courtUrl)
    await page.waitForSelector('body[data-ready="true"]')
    t.equal(await page.getAttribute('body', 'data-view'), 'guest')
    t.ok(await page.isVisible('#show-signin'), 'members may still sign in')
    await page.tap('button.tap[data-seconds="30"]')
    await page.waitForSelector('#current[data-id]')
    const id = (await currentId(page))!
    t.ok((await readyVideo(page)) >= 2)
    t.equal((await record(id)).user, null, "a guest's replay")
    await page.waitForSelector(`#mine li[data-id="${id}"]`)
    t.equal(await page.locator('#mine li[data-id]').count(), 1, "only this phone's replay, not the member's")
    await screenshot('replay-page-guest-ready')
    const guest = await page.evaluate(() => JSON.parse(localStorage.getItem('club.replays.guest')!))
    t.match(guest.token, /^guest\./, 'the guest token is kept on the phone')

    t.equal(guest.court, court.id, "the guest session is this court's")

    // A tap kept while the phone was offline for an hour: past REPLAY_MAX_AGE_SECONDS, so the page
    // does not send it and says why in words.
    const keepTap = (ageMs: number) =>
      page.evaluate(({ courtId, end }) => {
        localStorage.setItem('club.replays.pending', JSON.stringify([{ key: end, court: courtId, seconds: 30, tapAt: Date.parse(end), end }]))
      }, { courtId: court.id, end: new Date(Date.now() - ageMs).toISOString() })
    // Replays asked for, as the footage access log counts them (the page's own list issues download links too).
    const replaysLogged = async () =>
      (await server.call('GET', '/apis/v2/admin/footage-access?ipp=100', admin)).json.items.filter((row: { purpose: string }) => row.purpose === 'REPLAY').length
    const asked = await replaysLogged()
    await keepTap(3_600_000)
    await page.reload()
    await page.waitForSelector('#notice[data-kind="error"]')
    t.match(await page.textContent('#notice'), /waited too long for the network: a replay can be asked for only within 10 min of the moment, so it was not sent/)
    t.equal(await page.evaluate(() => localStorage.getItem('club.replays.pending')), '[]', 'the tap is dropped')
    t.equal(await replaysLogged(), asked, 'and never reached the server')
    await screenshot('replay-page-too-old')

    // Nine minutes old: within the limit, but before the box started recording; the page says why.
    await keepTap(9 * 60_000)
    await page.reload()
    await page.waitForSelector('#current[data-status="FAILED"]', { timeout: 60_000 })
    t.match(await page.textContent('#message'), 'The camera has no footage of that moment')
    await screenshot('replay-page-failed')

    // Another court's page on the same phone: this court's session is refused there (403), so that
    // page asks for a session of its own before its first tap instead of sending this one.
    const other = (await server.call('POST', '/apis/v2/admin/courts', admin, { name: 'Court 4', area: { id: areaId } })).json as { id: string; slug: string }
    await page.goto(`${origin}/r/${other.slug}`)
    await page.waitForSelector('body[data-ready="true"]')
    await page.tap('button.tap[data-seconds="30"]')
    await page.waitForSelector('#current[data-id], #notice[data-kind="error"]')
    t.notMatch(await page.textContent('#notice'), /another court's page/, "court 3's session was not sent for court 4")
    const otherGuest = await page.evaluate(() => JSON.parse(localStorage.getItem('club.replays.guest')!))
    t.equal(otherGuest.court, other.id, "the phone now keeps court 4's session")
    t.not(otherGuest.token, guest.token)
  })

  await t.test('no page asked anything of another origin', async (t) => {
    for (const recorded of pages) t.same(recorded.foreignRequests(recorded.page.url().startsWith('http') ? recorded.page.url() : origin), [], recorded.page.url())
  })
})
