// The console's rollouts page in a real browser against a real server: an admin sees each group's
// progress move as a canary box (polling the real status route) installs the release, and pauses the
// rollout from the page.
import t from 'tap'
import { storeRelease } from '@club/server/testing'
import { LAPTOP, consoleSection, launchBrowser, openPage } from './browser.js'
import { TestServer, tempDir, waitFor } from './support.js'

const DEVICE = '/apis/v2/replay-servers/device'

t.test("the console shows each rollout's groups and their progress, and pauses one", async (t) => {
  const server = new TestServer(tempDir(t))
  await server.start()
  t.teardown(() => server.stop())
  const admin = await server.user('admin')
  const areaId = await server.area()
  await storeRelease(server.app!.db, server.app!.config, '1.1.0')

  // Three boxes that poll as boxes do, reporting the version they run.
  const boxes: Array<{ id: string; serverId: string; version: string }> = []
  for (const deviceId of ['canary', 'box-2', 'box-3']) {
    const res = await fetch(`${server.url}${DEVICE}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ deviceId }) })
    const { serverId } = (await res.json()) as { serverId: string }
    const listed = await server.call('GET', `/apis/v2/admin/replay-servers?deviceId=${deviceId}`, admin.authorization)
    const id = listed.json.items[0].id as string
    t.equal((await server.call('POST', `/apis/v2/admin/replay-servers/${id}/approve`, admin.authorization, { areaId })).status, 200)
    boxes.push({ id, serverId, version: '1.0.0' })
  }
  const pollAll = async () => {
    for (const box of boxes) {
      const answer = (await (await fetch(`${server.url}${DEVICE}/${box.serverId}/status?version=${box.version}&architecture=amd64`)).json()) as any
      // The canary installs what it is offered; the others wait for their update window.
      if (answer.pendingUpdate && box === boxes[0]) box.version = answer.pendingUpdate.version
    }
  }
  await pollAll()
  const created = await server.call('POST', '/apis/v2/admin/agent-rollouts', admin.authorization, {
    version: '1.1.0',
    groups: [{ boxes: [{ id: boxes[0]!.id }] }, { percent: 100 }],
    errorThresholdPercent: 50,
    healthSeconds: 0
  })
  t.equal(created.status, 201)

  const browser = await launchBrowser(t)
  const consolePage = await openPage(browser, LAPTOP)
  const { page } = consolePage
  await consoleSection(page, server.url, admin, 'Rollouts')
  await page.getByRole('heading', { name: 'Rollouts' }).waitFor()
  const rollout = page.getByRole('region', { name: 'Rollout of 1.1.0' })
  await rollout.waitFor()
  const row = (name: string) => rollout.getByRole('row').filter({ hasText: name })
  t.match(await row('Group 1 (canaries)').innerText(), /OPEN[\s\S]*0 of 1 updated/)
  t.match(await row('Group 2 (100 %)').innerText(), /WAITING[\s\S]*0 of 2 updated/)

  // The canary installs; the server's teller (every poll interval) completes its group and opens the next.
  await pollAll()
  await pollAll()
  await waitFor('the canary group completed on the page', async () => /COMPLETED[\s\S]*1 of 1 updated/.test(await row('Group 1 (canaries)').innerText()), 30_000)
  await waitFor('the second group open on the page', async () => /OPEN/.test(await row('Group 2 (100 %)').innerText()), 30_000)
  await consolePage.screenshot('console-rollouts')

  await rollout.getByRole('button', { name: 'Pause the rollout of 1.1.0' }).click()
  await waitFor('paused', async () => /PAUSED/.test(await rollout.getByRole('heading').innerText()), 30_000)
  await rollout.getByRole('button', { name: 'Resume the rollout of 1.1.0' }).waitFor()
  t.equal((await server.call('GET', `/apis/v2/admin/agent-rollouts/${created.json.id}`, admin.authorization)).json.status, 'PAUSED')
  t.same(consolePage.foreignRequests(server.url), [], 'the console loads nothing from another origin')
})
