// The console's webhook endpoints page in a real browser against a real server: an admin adds an
// endpoint (a private address is refused in words), copies its secret shown once, and reads the
// delivery a receiver on loopback verified with the standardwebhooks package.
import t from 'tap'
// Through the test support, the app's plugins (webhook-delivery declares app.webhookDelivery) are typed too.
import { WebhookReceiver } from '@club/server/testing'
import { LAPTOP, launchBrowser, openPage, signIntoConsole } from './browser.js'
import { TestServer, tempDir, waitFor } from './support.js'

t.test('the console adds a webhook endpoint, shows its secret once, and lists its deliveries', async (t) => {
  const server = new TestServer(tempDir(t), { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' })
  await server.start()
  t.teardown(() => server.stop())
  server.app!.webhookDelivery.start()
  const admin = await server.user('admin')
  const receiver = await WebhookReceiver.start(t)

  const browser = await launchBrowser(t)
  const consolePage = await openPage(browser, LAPTOP)
  const { page } = consolePage
  await signIntoConsole(page, server.url, admin)
  await page.getByRole('link', { name: 'Webhooks' }).click()
  await page.getByRole('heading', { name: 'Webhook endpoints' }).waitFor()

  await page.getByLabel('URL').fill('http://10.0.0.1/hooks')
  await page.getByLabel('Event types').fill('package.issued')
  await page.getByRole('button', { name: 'Add the endpoint' }).click()
  const refused = page.getByRole('alert').filter({ hasText: 'Not added' })
  await refused.waitFor()
  t.match(await refused.innerText(), /body\.url host 10\.0\.0\.1 is at 10\.0\.0\.1: private, loopback and link-local addresses are refused/)

  await page.getByLabel('URL').fill(receiver.url)
  await page.getByRole('button', { name: 'Add the endpoint' }).click()
  const secret = page.locator('#webhook-secret code')
  await secret.waitFor()
  receiver.secret = await secret.innerText()
  t.match(receiver.secret, /^whsec_/)
  await page.getByRole('link', { name: receiver.url }).waitFor()
  await consolePage.screenshot('console-webhooks')

  const template = await server.call('POST', '/apis/v2/templates', admin.authorization, {
    name: '3 replays',
    type: 'PACKAGE',
    data: { validityDays: 30, items: [{ type: 'REPLAY', displayName: 'Replay', displayNamePlural: 'Replays', totalItems: 3 }] }
  })
  const issued = await server.call('POST', '/apis/v2/packages', admin.authorization, { template: { id: template.json.id }, user: { id: admin.id } })
  t.equal(issued.status, 201)
  const [delivery] = await receiver.waitFor((r) => r.length === 1)
  t.ok(delivery!.verified, 'the receiver verified it under the secret the page showed')
  t.equal(delivery!.type, 'package.issued')

  await page.getByRole('link', { name: receiver.url }).click()
  await page.getByRole('heading', { name: 'Deliveries' }).waitFor()
  const row = page.getByRole('row').filter({ hasText: delivery!.id })
  await waitFor('the delivery listed', async () => (await row.count()) === 1)
  t.match(await row.innerText(), /package\.issued[\s\S]*SUCCEEDED \(204\)/)
  await consolePage.screenshot('console-webhook-deliveries')
  t.same(consolePage.foreignRequests(server.url), [], 'the console loads nothing from another origin')
  t.notOk(consolePage.requests.some((u) => u.includes(receiver.secret.slice(6))), 'the secret is in no URL')
})
