import t from 'tap'
import { errorOf } from '../test-support/app.js'
import { templateTestContext as setup } from '../test-support/templates.js'

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
  const { call, create, venue, asAdmin } = await setup(t)
  const template = await create({ courts: { items: [{ id: venue.court2.id }] } })
  await call('PATCH', `/apis/v2/templates/${template.id}`, { courts: { items: [] } })
  const deleted = await (await asAdmin())('DELETE', `/apis/v2/admin/courts/${venue.court2.id}`)
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
