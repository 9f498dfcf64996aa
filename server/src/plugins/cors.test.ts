import t from 'tap'
import { testApp, userWithToken } from '../test-support/app.js'

const club = 'https://club.test'
const preflight = (url: string, origin?: string, headers = 'authorization,content-type,if-match') => ({
  method: 'OPTIONS' as const,
  url,
  headers: {
    ...(origin ? { origin } : {}),
    'access-control-request-method': 'PATCH',
    'access-control-request-headers': headers
  }
})

function varies(t: { match(found: string, wanted: RegExp, message: string): void }, headers: Record<string, unknown>) {
  t.match(String(headers.vary), /\bOrigin\b/i, 'Vary: Origin, so no cache hands one origin the answer of another')
}

t.test('a listed origin: preflights answered with what the API uses', async (t) => {
  const ctx = await testApp(t, { CORS_ORIGINS: `${club}, http://localhost:5173` })
  for (const url of ['/apis/v2/templates', '/apis/v2/templates/some-id', '/apis/v2/replay-servers/device/x/status']) {
    const res = await ctx.app.inject(preflight(url, club))
    t.equal(res.statusCode, 204, `${url}: preflight answered`)
    t.equal(res.headers['access-control-allow-origin'], club)
    t.equal(res.headers['access-control-allow-methods'], 'GET, HEAD, POST, PUT, PATCH, DELETE')
    t.equal(res.headers['access-control-allow-headers'], 'authorization, x-api-key, content-type, if-match, if-none-match')
    t.equal(res.headers['access-control-max-age'], '600')
    t.notOk(res.headers['access-control-allow-credentials'], 'no credentials mode: tokens travel in headers')
    t.equal(res.headers['x-content-type-options'], 'nosniff')
    varies(t, res.headers)
  }
  const second = await ctx.app.inject(preflight('/apis/v2/templates', 'http://localhost:5173'))
  t.equal(second.headers['access-control-allow-origin'], 'http://localhost:5173', 'each listed origin is reflected, never *')
})

t.test('another origin, or none: the browser is refused, with an answer and not a 404', async (t) => {
  for (const env of [{ CORS_ORIGINS: club }, {}] as Array<Record<string, string>>) {
    const ctx = await testApp(t, env)
    const other = await ctx.app.inject(preflight('/apis/v2/templates', 'https://evil.test'))
    t.equal(other.statusCode, 204, `${JSON.stringify(env)}: a preflight from another origin is answered`)
    t.notOk(other.headers['access-control-allow-origin'], 'without Access-Control-Allow-Origin: the browser refuses')
    varies(t, other.headers)
    const noOrigin = await ctx.app.inject(preflight('/apis/v2/templates'))
    t.equal(noOrigin.statusCode, 204, 'an OPTIONS without Origin is answered too')
    t.notOk(noOrigin.headers['access-control-allow-origin'])
    // A simple request from another origin still runs (CORS protects the reader, not the server),
    // but its answer is unreadable to that page.
    const read = await ctx.app.inject({ url: '/apis/v2/users/current', headers: { origin: 'https://evil.test' } })
    t.equal(read.statusCode, 401)
    t.notOk(read.headers['access-control-allow-origin'])
  }
})

t.test('a real request from a listed origin can read its answer, its ETag and its limits', async (t) => {
  const ctx = await testApp(t, { CORS_ORIGINS: club, TOKEN_RATE_LIMIT_MAX: '1' })
  const staff = await userWithToken(ctx, 'staff')
  const created = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/templates',
    headers: { origin: club, authorization: staff.authorization },
    payload: { name: 'Doubles clinic', type: 'EVENT', data: {} }
  })
  t.equal(created.statusCode, 201)
  const res = await ctx.app.inject({ url: `/apis/v2/templates/${created.json().id}`, headers: { origin: club, authorization: staff.authorization } })
  t.equal(res.statusCode, 200)
  t.equal(res.headers.etag, '"1"')
  t.equal(res.headers['access-control-allow-origin'], club)
  const exposed = String(res.headers['access-control-expose-headers']).split(', ')
  for (const name of ['etag', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    t.ok(exposed.includes(name), `${name} is exposed`)
  }
  t.equal(res.headers['x-content-type-options'], 'nosniff')
  t.equal(res.headers['referrer-policy'], 'no-referrer')
  varies(t, res.headers)

  // An error is readable too, so a browser app can show its message.
  const denied = await ctx.app.inject({ url: '/apis/v2/templates', headers: { origin: club } })
  t.equal(denied.statusCode, 401)
  t.equal(denied.headers['access-control-allow-origin'], club)
  t.equal(denied.headers['x-content-type-options'], 'nosniff')

  // And a refusal by the rate limit, with the Retry-After the page may read.
  const token = { method: 'POST' as const, url: '/apis/v2/oauth2/token', headers: { origin: club }, payload: { grant_type: 'password', username: 'x@example.org', password: 'wrong' } }
  await ctx.app.inject(token)
  const limited = await ctx.app.inject(token)
  t.equal(limited.statusCode, 429)
  t.ok(limited.headers['retry-after'])
  t.ok(limited.headers['x-ratelimit-limit'], 'the rate-limit headers the exposed list names are sent')
  t.equal(limited.headers['access-control-allow-origin'], club)
  t.equal(limited.headers['referrer-policy'], 'no-referrer')
})

t.test('every answer carries nosniff and no-referrer: 404s, bad input, the documentation', async (t) => {
  const ctx = await testApp(t)
  const answers = [
    await ctx.app.inject({ url: '/nowhere' }),
    await ctx.app.inject({ method: 'POST', url: '/apis/v2/replay-servers/device', headers: { 'content-type': 'application/json' }, payload: '{' }),
    await ctx.app.inject({ url: '/apis/v2/replay-servers/device/unknown/status' }),
    await ctx.app.inject({ url: '/documentation/json' }),
    await ctx.app.inject({ url: '/documentation/' })
  ]
  t.same(answers.map((a) => a.statusCode), [404, 400, 404, 200, 200])
  for (const answer of answers) {
    t.equal(answer.headers['x-content-type-options'], 'nosniff')
    t.equal(answer.headers['referrer-policy'], 'no-referrer')
    t.notOk(answer.headers['content-security-policy'], 'no CSP that would break Swagger UI')
  }
  // Swagger UI still loads under nosniff: its scripts and styles come with their right types.
  const page = answers[4]!.body
  const assets = [...page.matchAll(/(?:src|href)="\.?\/?([^"]+\.(?:js|css))"/g)].map((m) => m[1]!)
  t.ok(assets.length >= 2, `the page loads ${assets.join(', ')}`)
  for (const asset of assets) {
    const res = await ctx.app.inject({ url: `/documentation/${asset.replace(/^documentation\//, '')}` })
    t.equal(res.statusCode, 200, asset)
    t.match(res.headers['content-type'], asset.endsWith('.js') ? /javascript/ : /text\/css/, `${asset} has its type`)
  }
})
