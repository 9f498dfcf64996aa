// The console's fleet health in a real browser (issue 48): the fleet summary on its first page, a
// dot per camera on the box list and the box's page, coloured by state, its problem in the title.
import t from 'tap'
import { recordHealth } from '@club/server/testing'
import { LAPTOP, launchBrowser, openPage, signIntoConsole } from './browser.js'
import { TestServer, tempDir, waitFor } from './support.js'

const ADMIN = '/apis/v2/admin/replay-servers'

t.test('the console shows the fleet summary and a dot per camera with its problem', async (t) => {
  // A poll interval long enough that the box, registered once, stays online through the test.
  const server = new TestServer(tempDir(t), { REPLAY_POLL_INTERVAL_SECONDS: '600' })
  await server.start()
  t.teardown(() => server.stop())
  const admin = await server.user('admin')
  const areaId = await server.area()
  const registered = await fetch(`${server.url}/apis/v2/replay-servers/device`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ deviceId: 'fleet-box-1', displayName: 'Court 1 box' })
  })
  t.equal(registered.status, 200)
  const box = (await server.call('GET', `${ADMIN}?deviceId=fleet-box-1`, admin.authorization)).json.items[0]
  t.equal((await server.call('POST', `${ADMIN}/${box.id}/approve`, admin.authorization, { areaId })).status, 200)
  // Its report, as a signed poll of it would write it (the server's tests cover the poll itself).
  const report = {
    cameras: [
      { id: 'north', state: 'RECORDING' as const, lastSegmentAt: null, restarts: 0, problem: null },
      { id: 'south', state: 'FAILED' as const, lastSegmentAt: null, restarts: 7, problem: 'connection refused' }
    ],
    disk: { freeBytes: 400e9, totalBytes: 1000e9, recordingsBytes: 500e9, hoursKept: 200 },
    temperatureCelsius: null,
    memoryBytes: 90e6,
    uptimeSeconds: 600
  }
  await recordHealth(server.app!.db, box.id, report, 120, new Date(), 10)

  const browser = await launchBrowser(t)
  const consolePage = await openPage(browser, LAPTOP)
  const { page } = consolePage
  await signIntoConsole(page, server.url, admin)
  await page.getByRole('heading', { name: 'Recording boxes' }).waitFor()

  const problems = page.locator('[data-fleet="problems"]')
  await problems.waitFor()
  t.equal(await problems.innerText(), '1 box with a problem')
  t.match(await page.locator('[data-fleet="cameras"]').innerText(), /1 recording, 1 failed/)
  t.match(await page.locator('[data-fleet="online"]').innerText(), /1 online, 0 offline/)

  const row = page.locator(`tr[data-box="${box.id}"]`)
  await row.waitFor()
  const south = row.locator('[data-camera="south"]')
  t.match(await south.getAttribute('class'), /camera-failed/)
  t.match(await south.getAttribute('title'), /^south: failed since .* \(connection refused\)$/)
  t.match(await row.locator('[data-camera="north"]').getAttribute('class'), /camera-recording/)
  t.match(await row.innerText(), /a camera failed/)
  // The dot's colour is the state's, as the stylesheet says.
  const colour = await south.evaluate((el) => getComputedStyle(el).backgroundColor)
  t.equal(colour, 'rgb(180, 35, 24)', 'failed: the danger colour')
  await consolePage.screenshot('console-fleet')

  await row.getByRole('link').first().click()
  const cameras = page.locator('[data-fact="cameras"]')
  await cameras.waitFor()
  await waitFor('the dots on the box page', async () => (await cameras.locator('[data-camera]').count()) === 2)
  t.match(await cameras.locator('[data-camera="south"]').getAttribute('aria-label'), /connection refused/)
  t.equal(await page.locator('[data-fact="problems"]').innerText(), 'a camera failed')
  await consolePage.screenshot('console-box-health')
  t.same(consolePage.foreignRequests(server.url), [], 'the console loads nothing from another origin')
})
