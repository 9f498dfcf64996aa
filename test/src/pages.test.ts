// The two web pages in a real browser against a real server and a real agent: the admin console
// approves a box that registered itself and configures its camera (a bad value is shown at its
// field), and the box's own page shows the installer what the box waits for, then its camera.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { LAPTOP, PHONE, launchBrowser, openPage } from './browser.js'
import { TestAgent, TestServer, freePort, tempDir, testCameraFile, waitFor } from './support.js'

const ADMIN = '/apis/v2/admin/replay-servers'

t.test('the console approves and configures a box; the box page follows it', async (t) => {
  const dir = tempDir(t)
  const server = new TestServer(join(dir, 'server'))
  await server.start()
  t.teardown(() => server.stop())
  const admin = await server.user('admin')
  const areaId = await server.area()
  const courtId = await server.court(areaId)
  const camera = await testCameraFile(dir)
  const deviceId = `console-box-${Date.now()}`
  const agent = new TestAgent({ serverUrl: server.url, dir: join(dir, 'box'), deviceId, httpPort: await freePort() })
  agent.start()
  t.teardown(() => agent.stop('SIGKILL'))
  const browser = await launchBrowser(t)

  // The box registers itself through the API, as in a venue.
  const registered = await waitFor('the box registered', async () => {
    const list = await server.call('GET', `${ADMIN}?deviceId=${deviceId}`, admin.authorization)
    return list.json.items[0]
  })
  const password = await agent.newLocalPassword()
  // Two other boxes of the fleet, registered through the API too: one already approved in the area, one
  // rejected. The waiting one must come first all the same.
  for (const [hostname, decision] of [['court-2-box', 'approve'], ['old-box', 'reject']] as const) {
    const otherId = `${hostname}-${Date.now()}`
    const res = await fetch(`${server.url}/apis/v2/replay-servers/device`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ deviceId: otherId, hostname, version: '0.9.0', localIp: '10.0.0.7' })
    })
    t.equal(res.status, 200)
    const other = (await server.call('GET', `${ADMIN}?deviceId=${otherId}`, admin.authorization)).json.items[0]
    const body = decision === 'approve' ? { areaId, displayName: 'Court 2' } : undefined
    t.equal((await server.call('POST', `${ADMIN}/${other.id}/${decision}`, admin.authorization, body)).status, 200)
  }

  const boxPage = await openPage(browser, PHONE)
  await t.test("the box's page: the installer signs in and reads the deviceId of a pending box", async (t) => {
    const { page } = boxPage
    await page.goto(`${agent.url}/`)
    await page.getByLabel('Local password').fill(password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.locator('[data-fact=status]', { hasText: 'Waiting for approval' }).waitFor()
    t.equal(await page.locator('[data-fact=deviceId]').textContent(), deviceId)
    t.match(await page.locator('[data-fact=waiting]').textContent(), `device id ${deviceId}`)
    const text = await page.locator('body').innerText()
    t.notMatch(text, agent.state().serverId!, 'the page shows no serverId')
    await boxPage.screenshot('box-page-pending')
  })

  const consolePage = await openPage(browser, LAPTOP)
  await t.test('the console: sign in, the pending box, approve it into an area by name', async (t) => {
    const { page } = consolePage
    await page.goto(`${server.url}/console`)
    await page.getByLabel('E-mail').fill(admin.email)
    await page.getByLabel('Password').fill(admin.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    const row = page.locator(`tr[data-box="${registered.id}"]`)
    await row.waitFor()
    t.match(await row.innerText(), /Pending/)
    t.equal(await page.locator('tbody tr').count(), 3)
    t.equal(await page.locator('tbody tr').first().getAttribute('data-box'), registered.id, 'the pending box is listed first')
    await page.getByLabel('Status').selectOption({ label: 'Rejected' })
    t.equal(await page.locator('tbody tr').count(), 1, 'the status filter')
    t.match(await page.locator('tbody tr').innerText(), 'old-box')
    await page.getByLabel('Status').selectOption({ label: 'Any status' })
    await page.getByLabel('Area').selectOption({ label: 'Centre Court' })
    t.match(await page.locator('tbody tr').innerText(), 'Court 2', 'the area filter')
    await page.getByLabel('Area').selectOption({ label: 'Any area' })
    await consolePage.screenshot('console-boxes')

    await row.getByRole('link').click()
    await page.getByLabel('Area', { exact: true }).selectOption({ label: 'Centre Court' })
    await page.getByRole('button', { name: 'Approve' }).click()
    await page.locator('[data-fact=status]', { hasText: 'Approved' }).waitFor()
    t.match(await page.locator('[data-fact=area]').textContent(), 'Centre Court')
  })

  await t.test('the console: a camera with a bad lens value gets the 400 at that field, then is saved', async (t) => {
    const { page } = consolePage
    await page.getByRole('button', { name: 'Add a camera' }).click()
    await page.getByLabel('Feed', { exact: true }).fill(pathToFileURL(camera).href)
    await page.getByLabel('Lens correction k1').fill('5')
    await page.getByRole('button', { name: 'Save the configuration' }).click()
    const error = page.locator('[data-field="cameras.0.distortion1"] .field-error')
    await error.waitFor()
    t.match(await error.textContent(), /distortion1 must be <= 1/)
    t.equal(await page.getByLabel('Lens correction k1').getAttribute('aria-invalid'), 'true')
    t.equal(await page.locator('.field-error').count(), 1, 'no other field is marked')

    await page.getByLabel('Lens correction k1').fill('0.1')
    await page.getByLabel('Court 1').check()
    await page.getByRole('button', { name: 'Save the configuration' }).click()
    await page.getByText('Configuration saved').waitFor()
    const stored = (await server.call('GET', `${ADMIN}/${registered.id}`, admin.authorization)).json
    t.match(stored.config.cameras[0], { id: 'cam-1', feed: pathToFileURL(camera).href, distortion1: 0.1, courtIds: [String] })
  })

  await t.test("the console: a court's printable sign, fetched with the admin's token", async (t) => {
    const { page } = consolePage
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Sign for Court 1 (PDF)' }).click()])
    t.match(download.suggestedFilename(), /^sign-.+\.pdf$/)
    const path = await download.path()
    t.equal(readFileSync(path).subarray(0, 5).toString('latin1'), '%PDF-', 'a PDF')
  })

  await t.test('the console: a target version with no release is refused in words and nothing is stored', async (t) => {
    const { page } = consolePage
    await page.getByRole('textbox', { name: 'Target version' }).fill('9.9.9')
    await page.getByLabel('Update window (optional)').fill('02:00-05:00')
    await page.getByRole('button', { name: 'Set target version' }).click()
    await page.getByRole('alert').filter({ hasText: 'is not a release' }).waitFor()
    const stored = (await server.call('GET', `${ADMIN}/${registered.id}`, admin.authorization)).json
    t.same([stored.targetVersion, stored.updateWindow], [null, null], 'nothing stored')
  })

  await t.test("the console: the box's status changes on its next poll", async (t) => {
    const { page } = consolePage
    await page.locator('.pickup', { hasText: 'has its approval and configuration' }).waitFor({ timeout: 30_000 })
    t.match(await page.locator('[data-fact=online]').textContent(), 'Online')
    await consolePage.screenshot('console-box')
    t.same(consolePage.foreignRequests(server.url), [], 'the console loads nothing from another origin')
  })

  await t.test('the console: the footage log lists each look at footage, under the notice of what is kept', async (t) => {
    const { page } = consolePage
    const courtId = (await server.call('GET', `${ADMIN}/${registered.id}`, admin.authorization)).json.config.cameras[0].courtIds[0]
    t.equal((await server.call('POST', '/apis/v2/replays', admin.authorization, { court: { id: courtId }, seconds: 10 })).status, 201)
    await page.getByRole('link', { name: 'Footage log' }).click()
    await page.getByRole('heading', { name: 'Footage log' }).waitFor()
    await page.locator('#footage-notice', { hasText: 'kept 180 days' }).waitFor()
    const row = page.locator('table.list tbody tr').first()
    await row.waitFor()
    t.match(await row.innerText(), new RegExp(`admin ${admin.id}[\\s\\S]*replay[\\s\\S]*${courtId}[\\s\\S]*cam-1`))
    await consolePage.screenshot('console-footage-log')
  })

  await t.test('the console: a replay taken down with the reason typed in its row', async (t) => {
    const { page } = consolePage
    const member = await server.user('member')
    const asked = await server.call('POST', '/apis/v2/replays', member.authorization, { court: { id: courtId }, seconds: 5 })
    t.equal(asked.status, 201)
    await page.getByRole('link', { name: 'Replays' }).click()
    const reason = page.getByLabel(`Why replay ${asked.json.id} is taken down`)
    await reason.fill('a parent asked')
    // The row of this replay: the list holds the earlier tests' replays too, each with its own button.
    await page.getByRole('row').filter({ has: reason }).getByRole('button', { name: 'Take down' }).click()
    await page.getByText('Replay taken down: its clip is deleted.').waitFor()
    // First: the footage goes with it, so the admin's replay of the same seconds (asked above) may read so too.
    await page.locator('td', { hasText: 'TAKEN_DOWN (a parent asked)' }).first().waitFor()
    const stored = (await server.call('GET', `/apis/v2/replays/${asked.json.id}`, admin.authorization)).json
    t.match(stored, { status: 'TAKEN_DOWN', takedown: { by: { id: admin.id }, reason: 'a parent asked' } })
  })

  await t.test('the console: its tokens stay out of URLs and localStorage; signing out revokes them', async (t) => {
    const { page, requests } = consolePage
    const session = await page.evaluate(() => JSON.parse(sessionStorage.getItem('club.console.session')!))
    t.ok(session.accessToken && session.refreshToken, 'the tokens are in sessionStorage')
    t.ok(requests.length > 10, `${requests.length} requests recorded`)
    const leaking = requests.filter((url) => url.includes(session.accessToken) || url.includes(session.refreshToken) || /token=|access_token/.test(url))
    t.same(leaking, [], 'no URL the console asked for carries a token')
    t.equal(await page.evaluate(() => localStorage.length), 0, 'nothing in localStorage')

    const [revoked] = await Promise.all([
      page.waitForResponse((res) => new URL(res.url()).pathname === '/apis/v2/oauth2/revoke'),
      page.getByRole('button', { name: 'Sign out' }).click()
    ])
    t.equal(revoked.status(), 200)
    await page.getByText('You are signed out.').waitFor()
    t.equal(await page.evaluate(() => sessionStorage.getItem('club.console.session')), null)
    const refresh = await fetch(`${server.url}/apis/v2/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: session.refreshToken }) })
    t.equal(refresh.status, 400)
    t.equal((await refresh.json()).error, 'invalid_grant', 'the old refresh token is refused')
  })

  await t.test("the box's page: approved, the camera's picture loads and it records", async (t) => {
    const { page } = boxPage
    await page.locator('[data-fact=status]', { hasText: 'Approved' }).waitFor({ timeout: 30_000 })
    const card = page.locator('article[data-camera="cam-1"]')
    await card.locator('[data-fact=state]', { hasText: /^Recording$/ }).waitFor({ timeout: 30_000 })
    const picture = card.locator('img')
    await picture.waitFor({ timeout: 30_000 })
    await page.waitForFunction(() => ((document.querySelector('article[data-camera="cam-1"] img') as HTMLImageElement | null)?.naturalWidth ?? 0) > 0)
    t.ok(await picture.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0), 'the snapshot is a picture that loads')
    t.equal(await card.locator('[data-fact=feed]').textContent(), 'main feed')
    t.match(await page.locator('[data-fact=retention]').textContent(), '72 hours')
    // The recordings' size is counted every 10 s: the footage so far shows within one count and one refresh.
    await page.locator('[data-fact=recordingsBytes]', { hasText: /KB|MB/ }).waitFor({ timeout: 30_000 })
    await boxPage.screenshot('box-page-approved')
    t.same(boxPage.foreignRequests(agent.url), [], 'the box page loads nothing from another origin')
  })
})

t.test('a member who signs in is told they have no access', async (t) => {
  const server = new TestServer(tempDir(t))
  await server.start()
  t.teardown(() => server.stop())
  const member = await server.user('member')
  const browser = await launchBrowser(t)
  const { page, foreignRequests } = await openPage(browser, PHONE)
  await page.goto(`${server.url}/console`)
  await page.getByLabel('E-mail').fill(member.email)
  await page.getByLabel('Password').fill(member.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  const alert = page.getByRole('alert').filter({ hasText: 'No access' })
  await alert.waitFor()
  t.match(await alert.innerText(), /has no access/)
  t.same(foreignRequests(server.url), [])
})
