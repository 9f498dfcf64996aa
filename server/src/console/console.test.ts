// The console as files: the page, its assets under a content hash, and none of it in the API's
// OpenAPI document.
import t from 'tap'
import { testApp } from '../test-support/app.js'

t.test('the console page and its assets', async (t) => {
  const ctx = await testApp(t)
  for (const url of ['/console', '/console/']) {
    const page = await ctx.app.inject({ url })
    t.equal(page.statusCode, 200, url)
    t.match(page.headers['content-type'], /^text\/html/)
    t.equal(page.headers['cache-control'], 'no-cache')
    t.match(page.headers['content-security-policy'], /default-src 'none'; script-src 'self'/, 'only its own origin')
  }
  const html = (await ctx.app.inject({ url: '/console' })).body
  const script = /src="(\/console\/assets\/[0-9a-f]{16}\/console\/main\.js)"/.exec(html)?.[1]
  t.ok(script, 'the page loads its module from a hashed folder')
  t.notMatch(html, /https?:\/\//, 'no address of another origin')
  const asset = await ctx.app.inject({ url: script! })
  t.equal(asset.statusCode, 200)
  t.match(asset.headers['content-type'], /^text\/javascript/)
  t.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable')
  const again = await ctx.app.inject({ url: script!, headers: { 'if-none-match': String(asset.headers.etag) } })
  t.equal(again.statusCode, 304)
  const shared = await ctx.app.inject({ url: script!.replace('console/main.js', 'shared/dom.js') })
  t.equal(shared.statusCode, 200, 'the modules it imports')
  const box = await ctx.app.inject({ url: script!.replace('console/main.js', 'box/main.js') })
  t.equal(box.statusCode, 404, "the box page's modules are not the console's")
  t.equal(box.json().statusCode, 404)

  const doc = (await ctx.app.inject({ url: '/documentation/json' })).json()
  t.notOk(Object.keys(doc.paths).some((path) => path.startsWith('/console')), 'pages are not API')
})
