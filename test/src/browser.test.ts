// The browser harness itself: Chromium starts from the distribution's package, a page served on
// loopback renders, its requests are recorded and one to another origin is told apart.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { existsSync } from 'node:fs'
import t from 'tap'
import { launchBrowser, openPage } from './browser.js'

t.test('a loopback page in headless Chromium: rendered, its requests recorded, a foreign one told apart', async (t) => {
  const server = createServer((req, res) => {
    if (req.url === '/') {
      res.setHeader('content-type', 'text/html; charset=utf-8')
      // The image points at another origin on purpose: the harness must report it.
      res.end('<!doctype html><title>t</title><button id=b>Tap</button><img src="http://127.0.0.2:9/x.png"><script src="/app.js"></script>')
    } else if (req.url === '/app.js') {
      res.setHeader('content-type', 'text/javascript')
      res.end("document.getElementById('b').addEventListener('click', () => { document.body.dataset.tapped = 'yes' })")
    } else {
      res.statusCode = 404
      res.end()
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  const browser = await launchBrowser(t)
  const { page, requests, foreignRequests, screenshot } = await openPage(browser)
  await page.goto(origin + '/')
  await page.tap('#b')
  t.equal(await page.evaluate(() => document.body.dataset.tapped), 'yes', 'a tap runs the page script')
  t.same(
    requests.filter((url) => url.startsWith(origin)),
    [origin + '/', origin + '/app.js']
  )
  t.same(foreignRequests(origin), ['http://127.0.0.2:9/x.png'])
  t.ok(existsSync(await screenshot('harness')), 'a screenshot is written')
})
