import t from 'tap'
import { errorOf, userWithToken } from '../test-support/app.js'
import { templateTestContext as setup } from '../test-support/templates.js'

t.test('POST creates version 1 with its places, an ETag and the caller as author', async (t) => {
  const { call, staff, venue } = await setup(t)
  const res = await call('POST', '/apis/v2/templates', {
    name: 'Doubles clinic',
    description: 'Two hours of drills',
    type: 'EVENT',
    data: { subtype: 'CLINIC', capacity: 8 },
    areas: { items: [{ id: venue.hall.id }] },
    courts: { items: [{ id: venue.court1.id }], _total: 1, _links: { self: { href: '/anything' } } }
  })
  t.equal(res.statusCode, 201)
  t.equal(res.headers.etag, '"1"')
  const body = res.json()
  t.match(body, {
    type: 'EVENT',
    status: 'DRAFT',
    name: 'Doubles clinic',
    description: 'Two hours of drills',
    version: 1,
    data: { subtype: 'CLINIC', capacity: 8 },
    areas: { items: [{ id: venue.hall.id }], _total: 1, _links: { self: { href: `/apis/v2/templates/${body.id}` } } },
    courts: { items: [{ id: venue.court1.id }], _total: 1 },
    regions: { items: [], _total: 0 },
    pods: { items: [], _total: 0 },
    createdBy: { id: staff.id },
    lastUpdatedBy: { id: staff.id },
    createdDate: '2026-03-01T10:00:00.000Z',
    updatedDate: '2026-03-01T10:00:00.000Z',
    _links: { self: { href: `/apis/v2/templates/${body.id}` } }
  })
  const got = await call('GET', `/apis/v2/templates/${body.id}`)
  t.equal(got.statusCode, 200)
  t.equal(got.headers.etag, '"1"')
  t.same(got.json(), body)
})

t.test('POST refuses bad bodies with a 400 naming the field', async (t) => {
  const { call, venue } = await setup(t)
  const cases: Array<[object, RegExp]> = [
    [{ type: 'EVENT', data: {} }, /body\.name is required/],
    [{ name: 'x', type: 'PARTY', data: {} }, /body\.type must be one of EVENT, SERIES/],
    [{ name: 'x', type: 'EVENT' }, /body\.data is required/],
    [{ name: 'x', type: 'EVENT', data: {}, status: 'LIVE' }, /body\.status must be one of DRAFT, PUBLISHED, ARCHIVED/],
    [{ name: 'x', type: 'EVENT', data: {}, colour: 'red' }, /body\.colour is not allowed/],
    [{ name: 'x', type: 'EVENT', data: {}, areas: [{ id: venue.hall.id }] }, /body\.areas/],
    [{ name: 'x', type: 'EVENT', data: {}, areas: { items: [{ id: venue.hall.id }, { id: 'nowhere' }] } }, /body\.areas\.items\.1\.id: no area with id "nowhere"/],
    [{ name: 'x', type: 'EVENT', data: {}, regions: { items: [{ id: venue.hall.id }] } }, /body\.regions\.items\.0\.id: no region/],
    [{ name: 'x', type: 'EVENT', data: {}, pods: { items: [{ id: 'p' }] } }, /body\.pods\.items\.0\.id: no pod/],
    [{ name: 'x', type: 'EVENT', data: {}, courts: { items: [{ id: 'c' }] } }, /body\.courts\.items\.0\.id: no court/]
  ]
  for (const [payload, message] of cases) {
    const res = await call('POST', '/apis/v2/templates', payload)
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.match(errorOf(res).message, message)
  }
  // An id 100 KB long is quoted briefly, as every other echo of a caller's input is.
  const huge = await call('POST', '/apis/v2/templates', { name: 'x', type: 'EVENT', data: {}, areas: { items: [{ id: 'a'.repeat(100_000) }] } })
  t.equal(huge.statusCode, 400)
  t.match(errorOf(huge).message, /^body\.areas\.items\.0\.id: no area with id "a+"… \(100000 characters\)$/)
  t.ok(huge.body.length < 1000, `the answer is short (${huge.body.length} bytes)`)
  const list = await call('GET', '/apis/v2/templates')
  t.equal(list.json()._total, 0, 'nothing was written')
})

t.test('without a token every template route is 401; members get 403; admins may', async (t) => {
  const { ctx, create } = await setup(t)
  const template = await create()
  const member = await userWithToken(ctx, 'member')
  const admin = await userWithToken(ctx, 'admin')
  const routes: Array<[string, string, object | undefined]> = [
    ['GET', '/apis/v2/templates', undefined],
    ['POST', '/apis/v2/templates', { name: 'x', type: 'EVENT', data: {} }],
    ['GET', `/apis/v2/templates/${template.id}`, undefined],
    ['PATCH', `/apis/v2/templates/${template.id}`, { name: 'y' }],
    ['GET', `/apis/v2/templates/${template.id}/versions`, undefined],
    ['GET', `/apis/v2/templates/${template.id}/versions/1`, undefined],
    ['POST', `/apis/v2/templates/${template.id}/rollback`, { version: 1 }],
    ['POST', '/apis/v2/templates/from-event/e', { name: 'x' }],
    ['POST', '/apis/v2/templates/from-series/s', { name: 'x' }],
    ['DELETE', `/apis/v2/templates/${template.id}`, undefined]
  ]
  for (const [method, url, payload] of routes) {
    const none = await ctx.app.inject({ method: method as 'GET', url, payload })
    t.equal(none.statusCode, 401, `${method} ${url} without a token`)
    t.equal(errorOf(none).error, 'Unauthorized')
    const forbidden = await ctx.app.inject({ method: method as 'GET', url, payload, headers: { authorization: member.authorization } })
    t.equal(forbidden.statusCode, 403, `${method} ${url} as a member`)
    t.match(errorOf(forbidden).message, /staff or admin/)
  }
  // Who may call is decided before the body is validated.
  const anonymousBadBody = await ctx.app.inject({ method: 'POST', url: '/apis/v2/templates', payload: { nonsense: true } })
  t.equal(anonymousBadBody.statusCode, 401)
  const memberBadBody = await ctx.app.inject({ method: 'POST', url: '/apis/v2/templates', payload: { nonsense: true }, headers: { authorization: member.authorization } })
  t.equal(memberBadBody.statusCode, 403)
  const asAdmin = await ctx.app.inject({ method: 'PATCH', url: `/apis/v2/templates/${template.id}`, payload: { name: 'by admin' }, headers: { authorization: admin.authorization } })
  t.equal(asAdmin.statusCode, 200)
  t.same(asAdmin.json().lastUpdatedBy, { id: admin.id })
})

t.test('unknown templates are 404 on every route', async (t) => {
  const { call } = await setup(t)
  for (const [method, url, payload] of [
    ['GET', '/apis/v2/templates/nope', undefined],
    ['PATCH', '/apis/v2/templates/nope', { name: 'y' }],
    ['DELETE', '/apis/v2/templates/nope', undefined],
    ['GET', '/apis/v2/templates/nope/versions', undefined],
    ['GET', '/apis/v2/templates/nope/versions/1', undefined],
    ['POST', '/apis/v2/templates/nope/rollback', { version: 1 }]
  ] as const) {
    const res = await call(method, url, payload)
    t.equal(res.statusCode, 404, `${method} ${url}`)
    t.equal(errorOf(res).message, 'template nope not found')
  }
})

t.test('every template route is in /documentation/json with the contract schemas', async (t) => {
  const { ctx } = await setup(t)
  const doc = (await ctx.app.inject({ method: 'GET', url: '/documentation/json' })).json()
  const paths = doc.paths as Record<string, Record<string, any>>
  const expected: Array<[string, string]> = [
    ['/apis/v2/templates', 'get'],
    ['/apis/v2/templates', 'post'],
    ['/apis/v2/templates/{id}', 'get'],
    ['/apis/v2/templates/{id}', 'patch'],
    ['/apis/v2/templates/{id}', 'delete'],
    ['/apis/v2/templates/{id}/versions', 'get'],
    ['/apis/v2/templates/{id}/rollback', 'post'],
    ['/apis/v2/templates/from-event/{eventId}', 'post'],
    ['/apis/v2/templates/from-series/{seriesId}', 'post']
  ]
  for (const [path, method] of expected) {
    const op = paths[path]?.[method]
    t.ok(op, `${method.toUpperCase()} ${path} is documented`)
    t.same(op?.security, [{ bearerAuth: [] }])
    t.ok(op?.responses['401'] && op?.responses['403'], `${path} documents 401 and 403`)
  }
  const list = paths['/apis/v2/templates']!.get
  t.match(list.description, /marks all of them required; this is treated as an error of the reference/)
  const names = list.parameters.map((p: { name: string; required?: boolean }) => [p.name, p.required ?? false])
  t.same(names.map(([n]: [string]) => n).sort(), ['areaId', 'courtId', 'ipp', 'page', 'podId', 'regionId', 'search', 'status', 'subtype', 'type'])
  t.ok(names.every(([, required]: [string, boolean]) => required === false), 'every query parameter is optional')
  t.ok(paths['/apis/v2/templates/{id}'].patch.responses['412'])
  t.ok(paths['/apis/v2/templates']!.post.requestBody.content['application/json'].schema.properties.areas)
})
