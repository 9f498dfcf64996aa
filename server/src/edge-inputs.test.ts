// Inputs at the edges that once answered 500: each must be a 400 naming the field, or harmless.
import t from 'tap'
import { errorOf, userWithToken } from './test-support/app.js'
import { templateTestContext as setup } from './test-support/templates.js'
import { redactUrl } from './logging.js'

t.test('a data object nested thousands of levels deep is a 400, on create and on patch', async (t) => {
  const { ctx, call, staff } = await setup(t)
  // Built as text: JSON.stringify itself would overflow the stack on such an object.
  const deep = `${'{"d":'.repeat(5000)}{}${'}'.repeat(5000)}`
  const send = (method: 'POST' | 'PATCH', url: string, body: string) =>
    ctx.app.inject({ method, url, headers: { authorization: staff.authorization, 'content-type': 'application/json' }, payload: body })
  const created = await send('POST', '/apis/v2/templates', `{"name":"Deep","type":"EVENT","data":${deep}}`)
  t.equal(created.statusCode, 400)
  t.match(errorOf(created).message, /body\.data is nested deeper than/)
  const ok = await call('POST', '/apis/v2/templates', { name: 'Shallow', type: 'EVENT', data: { a: { b: 1 } } })
  t.equal(ok.statusCode, 201)
  const patched = await send('PATCH', `/apis/v2/templates/${ok.json().id}`, `{"data":${deep}}`)
  t.equal(patched.statusCode, 400)
  t.equal((await call('GET', `/apis/v2/templates/${ok.json().id}`)).json().version, 1, 'nothing was written')
})

t.test('a search with a control character is a 400 naming search', async (t) => {
  const { call } = await setup(t)
  for (const search of ['%00abc', 'abc%00', 'a%0Ab']) {
    const res = await call('GET', `/apis/v2/templates?search=${search}`)
    t.equal(res.statusCode, 400, search)
    t.match(errorOf(res).message, /querystring\.search/)
  }
})

t.test('a page past any real list is a 400, not a database error', async (t) => {
  const { ctx, call } = await setup(t)
  const admin = await userWithToken(ctx, 'admin')
  for (const url of ['/apis/v2/templates?page=100000000000000000000', '/apis/v2/templates?ipp=100&page=92233720368547759']) {
    const res = await call('GET', url)
    t.equal(res.statusCode, 400, url)
    t.match(errorOf(res).message, /querystring\.page/)
  }
  const devices = await ctx.app.inject({ url: '/apis/v2/admin/replay-servers?page=100000000000000000000', headers: { authorization: admin.authorization } })
  t.equal(devices.statusCode, 400)
  const last = await call('GET', '/apis/v2/templates?page=1000000')
  t.equal(last.statusCode, 200, 'the largest page allowed is simply empty')
  t.same(last.json().items, [])
})

t.test('an event at a leap second is a 400 naming the field', async (t) => {
  const { ctx } = await setup(t)
  const admin = await userWithToken(ctx, 'admin')
  const post = (body: object) => ctx.app.inject({ method: 'POST', url: '/apis/v2/admin/events', headers: { authorization: admin.authorization }, payload: body })
  const res = await post({ name: 'New year', type: 'EVENT', startDate: '2016-12-31T23:59:60Z', endDate: '2017-01-01T01:00:00Z' })
  t.equal(res.statusCode, 400)
  t.match(errorOf(res).message, /body\.startDate is not a representable instant/)
  const good = await post({ name: 'New year', type: 'EVENT', startDate: '2016-12-31T23:00:00Z', endDate: '2017-01-01T01:00:00Z' })
  t.equal(good.statusCode, 201)
  const patched = await ctx.app.inject({ method: 'PATCH', url: `/apis/v2/admin/events/${good.json().id}`, headers: { authorization: admin.authorization }, payload: { endDate: '2016-12-31T23:59:60Z' } })
  t.equal(patched.statusCode, 400)
  t.match(errorOf(patched).message, /body\.endDate/)
})

t.test("a device's serverId is blanked from logged URLs whatever path follows it", async (t) => {
  for (const path of ['/apis/v2/replay-servers/device/s3cret/status', '/apis/v2/replay-servers/device/s3cret/statu', '/apis/v2/replay-servers/device/s3cret']) {
    t.notMatch(redactUrl(path), /s3cret/, path)
  }
  t.equal(redactUrl('/apis/v2/replay-servers/device'), '/apis/v2/replay-servers/device')
})
