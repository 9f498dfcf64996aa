import t from 'tap'
import { errorOf, testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { testVenue } from '../test-support/venue.js'

async function setup(t: { teardown(fn: () => unknown): void }) {
  const ctx = await testApp(t)
  const staff = await userWithToken(ctx, 'staff')
  const venue = await testVenue(ctx)
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object, headers: Record<string, string> = {}) =>
    ctx.app.inject({ method, url, payload, headers: { authorization: staff.authorization, ...headers } })
  const create = async (body: object = {}) => {
    const res = await call('POST', '/apis/v2/templates', { name: 'Open play', type: 'EVENT', data: { subtype: 'OPEN_PLAY' }, ...body })
    if (res.statusCode !== 201) throw new Error(res.body)
    return res.json()
  }
  return { ctx, staff, venue, call, create }
}

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

t.test('versions: create, patch, no-op patch, rollback and rollback of a rollback', async (t) => {
  const { ctx, call, create, venue } = await setup(t)
  const template = await create({ description: 'first' })
  const url = `/apis/v2/templates/${template.id}`

  ctx.clock.advance(60_000)
  const patched = await call('PATCH', url, { name: 'Open play, evenings', data: { subtype: 'OPEN_PLAY', level: 2 }, areas: { items: [{ id: venue.annex.id }] } })
  t.equal(patched.statusCode, 200)
  t.equal(patched.headers.etag, '"2"')
  t.match(patched.json(), { version: 2, name: 'Open play, evenings', description: 'first', updatedDate: '2026-03-01T10:01:00.000Z', createdDate: '2026-03-01T10:00:00.000Z' })
  t.same(patched.json().areas.items, [{ id: venue.annex.id }])

  ctx.clock.advance(60_000)
  // The same content, keys in another order: nothing changes, no version is recorded.
  const same = await call('PATCH', url, { data: { level: 2, subtype: 'OPEN_PLAY' }, name: 'Open play, evenings', areas: { items: [{ id: venue.annex.id }] } })
  t.equal(same.statusCode, 200)
  t.equal(same.headers.etag, '"2"')
  t.same(same.json(), patched.json())
  const empty = await call('PATCH', url, {})
  t.equal(empty.json().version, 2)

  const removed = await call('PATCH', url, { description: null })
  t.equal(removed.json().version, 3)
  t.notOk('description' in removed.json(), 'description: null removes it')

  const rollback = await call('POST', `${url}/rollback`, { version: 1 })
  t.equal(rollback.statusCode, 200)
  t.equal(rollback.headers.etag, '"4"')
  t.match(rollback.json(), { version: 4, name: 'Open play', description: 'first', data: { subtype: 'OPEN_PLAY' } })
  t.same(rollback.json().data, { subtype: 'OPEN_PLAY' })
  t.same(rollback.json().areas.items, [])

  const again = await call('POST', `${url}/rollback`, { version: 4 })
  t.match(again.json(), { version: 5, name: 'Open play', description: 'first' })
  const toPatched = await call('POST', `${url}/rollback`, { version: 2 })
  t.match(toPatched.json(), { version: 6, name: 'Open play, evenings', data: { level: 2 } })
  t.same(toPatched.json().areas.items, [{ id: venue.annex.id }])

  const versions = await call('GET', `${url}/versions`)
  t.equal(versions.statusCode, 200)
  const body = versions.json()
  t.equal(body._total, 6)
  t.same(body._links, { self: { href: `${url}/versions` } })
  t.same(
    body.items.map((v: { version: number; changeAction: string }) => [v.version, v.changeAction]),
    [[6, 'ROLLBACK'], [5, 'ROLLBACK'], [4, 'ROLLBACK'], [3, 'UPDATE'], [2, 'UPDATE'], [1, 'CREATE']]
  )
  t.match(body.items[4], {
    version: 2,
    name: 'Open play, evenings',
    description: 'first',
    status: 'DRAFT',
    data: { subtype: 'OPEN_PLAY', level: 2 },
    areas: { items: [{ id: venue.annex.id }], _total: 1 },
    changedDate: '2026-03-01T10:01:00.000Z',
    _links: { self: { href: `${url}/versions/2` } }
  })
  t.notOk('description' in body.items[3])

  const one = await call('GET', `${url}/versions/2`)
  t.same(one.json(), body.items[4])
  t.equal((await call('GET', `${url}/versions/9`)).statusCode, 404)
})

t.test('rollback refuses an unknown version (404) and a missing or non-integer one (400)', async (t) => {
  const { call, create } = await setup(t)
  const template = await create()
  const url = `/apis/v2/templates/${template.id}/rollback`
  const unknown = await call('POST', url, { version: 7 })
  t.equal(unknown.statusCode, 404)
  t.equal(errorOf(unknown).message, `template ${template.id} has no version 7`)
  for (const [payload, message] of [
    [{}, /body\.version is required/],
    [{ version: '1' }, /body\.version must be integer/],
    [{ version: 1.5 }, /body\.version must be integer/],
    [{ version: 0 }, /body\.version must be >= 1/]
  ] as const) {
    const res = await call('POST', url, payload)
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.match(errorOf(res).message, message)
  }
  t.equal((await call('GET', `/apis/v2/templates/${template.id}`)).json().version, 1)
})

t.test('rollback to a version naming a place since deleted is a 409', async (t) => {
  const { call, create, venue, ctx } = await setup(t)
  const admin = await userWithToken(ctx, 'admin')
  const template = await create({ courts: { items: [{ id: venue.court2.id }] } })
  await call('PATCH', `/apis/v2/templates/${template.id}`, { courts: { items: [] } })
  const deleted = await ctx.app.inject({ method: 'DELETE', url: `/apis/v2/admin/courts/${venue.court2.id}`, headers: { authorization: admin.authorization } })
  t.equal(deleted.statusCode, 204)
  const res = await call('POST', `/apis/v2/templates/${template.id}/rollback`, { version: 1 })
  t.equal(res.statusCode, 409)
  t.match(errorOf(res).message, /version 1\.courts\.items\.0\.id: no court/)
})

t.test('PATCH refuses bad input with a 400 and a dangling reference without writing', async (t) => {
  const { call, create } = await setup(t)
  const template = await create()
  const url = `/apis/v2/templates/${template.id}`
  for (const [payload, message] of [
    [{ status: 'LIVE' }, /body\.status must be one of/],
    [{ type: 'SERIES' }, /body\.type is not allowed/],
    [{ name: '' }, /body\.name must NOT have fewer than 1 characters/],
    [{ name: 'z', pods: { items: [{ id: 'ghost' }] } }, /body\.pods\.items\.0\.id: no pod with id "ghost"/]
  ] as const) {
    const res = await call('PATCH', url, payload)
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.match(errorOf(res).message, message)
  }
  const after = (await call('GET', url)).json()
  t.equal(after.version, 1)
  t.equal(after.name, 'Open play')
})

t.test('If-Match: the version read passes, any other is 412 and changes nothing', async (t) => {
  const { call, create } = await setup(t)
  const template = await create()
  const url = `/apis/v2/templates/${template.id}`
  const ok = await call('PATCH', url, { name: 'Second' }, { 'if-match': '"1"' })
  t.equal(ok.statusCode, 200)
  t.equal(ok.headers.etag, '"2"')
  const stale = await call('PATCH', url, { name: 'Lost update' }, { 'if-match': '"1"' })
  t.equal(stale.statusCode, 412)
  t.match(errorOf(stale).message, /is at version 2/)
  t.equal((await call('GET', url)).json().name, 'Second')
  t.equal((await call('PATCH', url, { name: 'Any' }, { 'if-match': '*' })).statusCode, 200)
  t.equal((await call('POST', `${url}/rollback`, { version: 1 }, { 'if-match': '"2"' })).statusCode, 412)
  t.equal((await call('DELETE', url, undefined, { 'if-match': '"2"' })).statusCode, 412)
  t.equal((await call('GET', `${url}/versions`)).json()._total, 3)
  t.equal((await call('DELETE', url, undefined, { 'if-match': '"3"' })).statusCode, 204)
})

t.test('two concurrent PATCHes give consecutive versions; with If-Match one of them gets 412', async (t) => {
  const { call, create } = await setup(t)
  const template = await create()
  const url = `/apis/v2/templates/${template.id}`
  const [a, b] = await Promise.all([call('PATCH', url, { name: 'A' }), call('PATCH', url, { name: 'B' })])
  t.same([a.statusCode, b.statusCode], [200, 200])
  t.same([a.json().version, b.json().version].sort(), [2, 3])
  const versions = (await call('GET', `${url}/versions`)).json().items.map((v: { version: number }) => v.version)
  t.same(versions, [3, 2, 1])

  const [c, d] = await Promise.all([
    call('PATCH', url, { name: 'C' }, { 'if-match': '"3"' }),
    call('PATCH', url, { name: 'D' }, { 'if-match': '"3"' })
  ])
  t.same([c.statusCode, d.statusCode].sort(), [200, 412])
  const winner = c.statusCode === 200 ? 'C' : 'D'
  const now = (await call('GET', url)).json()
  t.match(now, { version: 4, name: winner })
})

t.test('DELETE answers 204; the template and its versions are gone from every answer', async (t) => {
  const { ctx, call, create } = await setup(t)
  const keep = await create({ name: 'Keep' })
  const gone = await create({ name: 'Gone' })
  await call('PATCH', `/apis/v2/templates/${gone.id}`, { name: 'Gone soon' })
  const res = await call('DELETE', `/apis/v2/templates/${gone.id}`)
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.equal((await call('GET', `/apis/v2/templates/${gone.id}`)).statusCode, 404)
  t.equal((await call('GET', `/apis/v2/templates/${gone.id}/versions`)).statusCode, 404)
  t.equal((await call('GET', `/apis/v2/templates/${gone.id}/versions/1`)).statusCode, 404)
  t.equal((await call('POST', `/apis/v2/templates/${gone.id}/rollback`, { version: 1 })).statusCode, 404)
  t.equal((await call('DELETE', `/apis/v2/templates/${gone.id}`)).statusCode, 404)
  const list = (await call('GET', '/apis/v2/templates')).json()
  t.same(list.items.map((i: { id: string }) => i.id), [keep.id])
  t.equal((await call('GET', '/apis/v2/templates?search=gone')).json()._total, 0)
  const versions = await ctx.app.db.selectFrom('template_versions').select('template_id').where('template_id', '=', gone.id).execute()
  t.same(versions, [], 'its versions are deleted, not hidden')
})

async function admin(ctx: TestApp) {
  const user = await userWithToken(ctx, 'admin')
  return (method: 'POST', url: string, payload: object) => ctx.app.inject({ method, url, payload, headers: { authorization: user.authorization } })
}

t.test('from-event builds data and places from the event; the body overrides places', async (t) => {
  const { ctx, call, venue } = await setup(t)
  const asAdmin = await admin(ctx)
  const event = (
    await asAdmin('POST', '/apis/v2/admin/events', {
      name: 'Friday social',
      description: 'Mixed doubles and pizza',
      type: 'SOCIAL',
      subtype: 'MIXED_DOUBLES',
      tags: ['social', 'doubles'],
      startDate: '2026-03-06T18:00:00Z',
      endDate: '2026-03-06T20:30:00Z',
      areas: { items: [{ id: venue.hall.id }] },
      pods: { items: [{ id: venue.pod.id }] },
      courts: { items: [{ id: venue.court1.id }] }
    })
  ).json()

  const res = await call('POST', `/apis/v2/templates/from-event/${event.id}`, { name: 'Friday social template', status: 'PUBLISHED' })
  t.equal(res.statusCode, 201)
  t.equal(res.headers.etag, '"1"')
  const body = res.json()
  t.match(body, { type: 'EVENT', status: 'PUBLISHED', name: 'Friday social template', description: 'Mixed doubles and pizza', version: 1 })
  t.same(body.data, {
    type: 'SOCIAL',
    subtype: 'MIXED_DOUBLES',
    description: 'Mixed doubles and pizza',
    durationMinutes: 150,
    tags: ['social', 'doubles'],
    event: { id: event.id }
  })
  t.same(body.areas.items, [{ id: venue.hall.id }])
  t.same(body.pods.items, [{ id: venue.pod.id }])
  t.same(body.courts.items, [{ id: venue.court1.id }])
  t.equal((await call('GET', '/apis/v2/templates?subtype=MIXED_DOUBLES')).json()._total, 1)

  const overridden = await call('POST', `/apis/v2/templates/from-event/${event.id}`, {
    name: 'Elsewhere',
    description: 'Own words',
    areas: { items: [{ id: venue.field.id }] },
    courts: { items: [] }
  })
  t.equal(overridden.statusCode, 201)
  t.equal(overridden.json().description, 'Own words')
  t.same(overridden.json().areas.items, [{ id: venue.field.id }])
  t.same(overridden.json().courts.items, [])
  t.same(overridden.json().pods.items, [{ id: venue.pod.id }], 'what the body leaves out comes from the event')

  const unknown = await call('POST', '/apis/v2/templates/from-event/nope', { name: 'x' })
  t.equal(unknown.statusCode, 404)
  t.equal(errorOf(unknown).message, 'event nope not found')
  const dangling = await call('POST', `/apis/v2/templates/from-event/${event.id}`, { name: 'x', areas: { items: [{ id: 'nope' }] } })
  t.equal(dangling.statusCode, 400)
  t.match(errorOf(dangling).message, /body\.areas\.items\.0\.id/)
  const noName = await call('POST', `/apis/v2/templates/from-event/${event.id}`, {})
  t.equal(noName.statusCode, 400)
  t.match(errorOf(noName).message, /body\.name is required/)
})

t.test('from-series builds data from the series, its events and their weekly schedule', async (t) => {
  const { ctx, call, venue } = await setup(t)
  const asAdmin = await admin(ctx)
  const series = (await asAdmin('POST', '/apis/v2/admin/series', { name: 'Spring league', type: 'LEAGUE', subtype: 'SINGLES', description: 'Weekly ladder' })).json()
  for (const [day, area, tags] of [
    ['2026-03-03', venue.hall.id, ['league']],
    ['2026-03-10', venue.field.id, ['league', 'ladder']],
    ['2026-03-17', venue.hall.id, []]
  ] as const) {
    const res = await asAdmin('POST', '/apis/v2/admin/events', {
      name: `League ${day}`,
      type: 'LEAGUE',
      startDate: `${day}T19:00:00Z`,
      endDate: `${day}T21:00:00Z`,
      areas: { items: [{ id: area }] },
      tags,
      series: { id: series.id }
    })
    t.equal(res.statusCode, 201)
  }
  const res = await call('POST', `/apis/v2/templates/from-series/${series.id}`, { name: 'League night' })
  t.equal(res.statusCode, 201)
  const body = res.json()
  t.match(body, { type: 'SERIES', status: 'DRAFT', description: 'Weekly ladder' })
  t.same(body.data, {
    type: 'LEAGUE',
    subtype: 'SINGLES',
    description: 'Weekly ladder',
    durationMinutes: 120,
    tags: ['league', 'ladder'],
    schedule: {
      occurrences: 3,
      firstStart: '2026-03-03T19:00:00.000Z',
      lastStart: '2026-03-17T19:00:00.000Z',
      daysOfWeek: ['TUESDAY'],
      startTimes: ['19:00'],
      intervalDays: 7
    },
    series: { id: series.id }
  })
  t.same(body.areas.items, [{ id: venue.hall.id }, { id: venue.field.id }])
  t.equal((await call('GET', `/apis/v2/templates?regionId=${venue.south.id}`)).json()._total, 1, 'the series template lies in both regions')

  const unknown = await call('POST', '/apis/v2/templates/from-series/nope', { name: 'x' })
  t.equal(unknown.statusCode, 404)
  t.equal(errorOf(unknown).message, 'series nope not found')
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
