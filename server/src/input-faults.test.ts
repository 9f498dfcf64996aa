// Inputs the server cannot keep as sent: each is refused in the error shape, with a status that says why.
import { gzipSync } from 'node:zlib'
import t from 'tap'
import { errorOf, testApp, userWithApiKey, userWithToken } from './test-support/app.js'
import { templateTestContext as setup } from './test-support/templates.js'
import { ADMIN, registeredBox } from './replay-servers/test-helpers.js'

const json = { 'content-type': 'application/json' }

t.test('a form-encoded body is a 415 everywhere but the token endpoint', async (t) => {
  const { ctx, staff } = await setup(t)
  const res = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/templates',
    headers: { authorization: staff.authorization, 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'name=Open&type=EVENT'
  })
  t.equal(res.statusCode, 415)
  errorOf(res)
  const token = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: `grant_type=password&username=${encodeURIComponent(staff.email)}&password=${encodeURIComponent(staff.password)}`
  })
  t.equal(token.statusCode, 201, 'the token endpoint still takes forms')
})

t.test('a compressed body or a charset other than UTF-8 is a 415', async (t) => {
  const { ctx, staff } = await setup(t)
  const body = JSON.stringify({ name: 'Open', type: 'EVENT', data: {} })
  const cases: Array<[string, Record<string, string>, string | Buffer]> = [
    ['gzip header, plain body', { 'content-encoding': 'gzip' }, body],
    ['real gzip', { 'content-encoding': 'gzip' }, gzipSync(body)],
    ['unknown encoding', { 'content-encoding': 'x-squash' }, body],
    ['utf-16', { 'content-type': 'application/json; charset=utf-16' }, body],
    ['latin1', { 'content-type': 'application/json; charset=latin1' }, body]
  ]
  for (const [what, headers, payload] of cases) {
    const res = await ctx.app.inject({ method: 'POST', url: '/apis/v2/templates', headers: { authorization: staff.authorization, ...json, ...headers }, payload })
    t.equal(res.statusCode, 415, what)
    t.match(errorOf(res).message, /not supported/, what)
  }
  const token = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=iso-8859-1' },
    payload: 'grant_type=password&username=a&password=b'
  })
  t.equal(token.statusCode, 415, 'forms too')
  const utf8 = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/templates',
    headers: { authorization: staff.authorization, 'content-type': 'application/json; charset=UTF-8', 'content-encoding': 'identity' },
    payload: body
  })
  t.equal(utf8.statusCode, 201, 'UTF-8 said out loud, identity encoding: fine')
})

t.test('NUL, other control characters and lone surrogates are a 400 naming the field, in any stored string', async (t) => {
  const { ctx, staff, asAdmin } = await setup(t)
  const post = (url: string, text: string) =>
    ctx.app.inject({ method: 'POST', url, headers: { authorization: staff.authorization, ...json }, payload: text })
  const cases: Array<[string, RegExp]> = [
    ['{"name":"Open\\u0000play","type":"EVENT","data":{}}', /body\.name contains the control character U\+0000/],
    ['{"name":"Open\\u001bplay","type":"EVENT","data":{}}', /body\.name contains the control character U\+001B/],
    ['{"name":"Open\\u0085play","type":"EVENT","data":{}}', /body\.name contains the control character U\+0085/],
    ['{"name":"Open\\ud800play","type":"EVENT","data":{}}', /body\.name is not well-formed Unicode/],
    ['{"name":"Open","type":"EVENT","data":{"notes":["fine","bad\\u0007"]}}', /body\.data\.notes\.1 contains the control character U\+0007/],
    ['{"name":"Open","type":"EVENT","data":{"k\\u0000":1}}', /body\.data has a key that contains the control character U\+0000/]
  ]
  for (const [payload, message] of cases) {
    const res = await post('/apis/v2/templates', payload)
    t.equal(res.statusCode, 400, payload)
    t.match(errorOf(res).message, message, payload)
  }
  const multiLine = await post('/apis/v2/templates', '{"name":"Open play","type":"EVENT","data":{"description":"line one\\n\\tline two\\r\\n"}}')
  t.equal(multiLine.statusCode, 201, 'tab and line breaks are kept')
  const emoji = await post('/apis/v2/templates', '{"name":"Open \\ud83c\\udfbe play","type":"EVENT","data":{}}')
  t.equal(emoji.statusCode, 201, 'a surrogate pair (an emoji) is well-formed')
  t.equal(emoji.json().name, 'Open 🎾 play')

  const admin = await asAdmin()
  const region = await admin('POST', '/apis/v2/admin/regions', { name: 'North\u0000' })
  t.equal(region.statusCode, 400, 'the same on every route')
  t.match(errorOf(region).message, /body\.name/)
})

t.test('two credentials on one request are a 400', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithApiKey(ctx, 'member')
  const both = await ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: user.authorization, 'x-api-key': 'garbage' } })
  t.equal(both.statusCode, 400)
  t.match(errorOf(both).message, /one credential/)
  const admin = await userWithToken(ctx, 'admin')
  const adminBoth = await ctx.app.inject({ url: ADMIN, headers: { authorization: admin.authorization, 'x-api-key': user.apiKey } })
  t.equal(adminBoth.statusCode, 400, 'on a Bearer-only route too')
  t.equal((await ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: user.authorization } })).statusCode, 200)
  t.equal((await ctx.app.inject({ url: '/apis/v2/users/current', headers: { 'x-api-key': user.apiKey } })).statusCode, 200)
})

t.test('error messages quote a short prefix of the input, never all of it', async (t) => {
  const { ctx, call } = await setup(t)
  const long = 'x'.repeat(100_000)
  const cases: Array<[string, number]> = [
    [`/apis/v2/templates/${long}`, 400],
    [`/apis/v2/nowhere/${long}`, 404],
    // Just under the router's parameter limit, so the service's own not-found message answers.
    [`/apis/v2/templates/${'y'.repeat(99)}`, 404]
  ]
  for (const [url, status] of cases) {
    const res = await call('GET', url)
    t.equal(res.statusCode, status, url.slice(0, 30))
    const { message } = errorOf(res)
    t.ok(message.length < 200, `${message.length} characters`)
    t.notMatch(message, 'x'.repeat(100))
  }
  t.match(errorOf(await call('GET', `/apis/v2/templates/${'y'.repeat(99)}`)).message, /^template "y{40}"… \(99 characters\) not found$/)
  t.equal(errorOf(await call('GET', '/apis/v2/templates/short-id')).message, 'template short-id not found', 'a short id reads as it is')
  const key = 'k'.repeat(50_000)
  const unknownField = await call('POST', '/apis/v2/templates', { name: 'Open', type: 'EVENT', data: {}, [key]: 1 })
  t.equal(unknownField.statusCode, 400)
  t.match(errorOf(unknownField).message, /^body\."k{40}"… \(50000 characters\) is not allowed$/, 'an unknown key, by its prefix')
  const admin = await userWithToken(ctx, 'admin')
  const res = await ctx.app.inject({ method: 'POST', url: `${ADMIN}/${long}/approve`, headers: { authorization: admin.authorization }, payload: {} })
  t.equal(res.statusCode, 400, 'on the admin routes as well')
  t.ok(errorOf(res).message.length < 200)
})

t.test('a body over the limit on the token endpoint is a 413 in the error shape', async (t) => {
  const ctx = await testApp(t, { BODY_LIMIT_BYTES: '1024' })
  const res = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: `grant_type=password&username=a&password=${'p'.repeat(2000)}`
  })
  t.equal(res.statusCode, 413)
  errorOf(res)
})

t.test('JSON with a __proto__ or constructor key is a 400 saying that key is refused', async (t) => {
  const { ctx, staff } = await setup(t)
  for (const [key, payload] of [
    ['__proto__', '{"name":"P","type":"EVENT","data":{"__proto__":{"admin":true}}}'],
    ['constructor', '{"name":"P","type":"EVENT","data":{"constructor":{"prototype":{"x":1}}}}'],
    ['__proto__', '{"name":"P","type":"EVENT","data":{"\\u005f_proto__":{}}}']
  ] as const) {
    const res = await ctx.app.inject({ method: 'POST', url: '/apis/v2/templates', headers: { authorization: staff.authorization, ...json }, payload })
    t.equal(res.statusCode, 400, payload)
    t.match(errorOf(res).message, new RegExp(`the key "${key}" is refused`), payload)
  }
  const broken = await ctx.app.inject({ method: 'POST', url: '/apis/v2/templates', headers: { authorization: staff.authorization, ...json }, payload: '{"name":' })
  t.equal(broken.statusCode, 400)
  t.match(errorOf(broken).message, /not valid JSON/)
})

t.test('the admin list of recording boxes is newest first', async (t) => {
  const ctx = await testApp(t)
  await registeredBox(ctx, { deviceId: 'box-old' })
  ctx.clock.advance(60_000)
  await registeredBox(ctx, { deviceId: 'box-new' })
  const admin = await userWithToken(ctx, 'admin')
  const res = await ctx.app.inject({ url: ADMIN, headers: { authorization: admin.authorization } })
  t.same(res.json().items.map((b: { deviceId: string }) => b.deviceId), ['box-new', 'box-old'])
})
