import t from 'tap'
import { errorOf, testApp, userWithToken } from '../test-support/app.js'
import { testVenue } from '../test-support/venue.js'

t.test('events and series: create, get, list, patch, delete, and the references between them', async (t) => {
  const ctx = await testApp(t)
  const admin = await userWithToken(ctx, 'admin')
  const venue = await testVenue(ctx)
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    ctx.app.inject({ method, url, payload, headers: { authorization: admin.authorization } })

  const seriesRes = await call('POST', '/apis/v2/admin/series', { name: 'Ladder', type: 'LEAGUE' })
  t.equal(seriesRes.statusCode, 201)
  const series = seriesRes.json()
  t.match(series, { name: 'Ladder', type: 'LEAGUE', subtype: null, description: null, events: { items: [], _total: 0 } })

  const created = await call('POST', '/apis/v2/admin/events', {
    name: 'Ladder night',
    type: 'LEAGUE',
    subtype: 'SINGLES',
    tags: ['ladder', 'ladder', 'evening'],
    startDate: '2026-03-03T19:00:00+01:00',
    endDate: '2026-03-03T21:00:00+01:00',
    areas: { items: [{ id: venue.hall.id }] },
    pods: { items: [{ id: venue.pod.id }] },
    courts: { items: [{ id: venue.court1.id }, { id: venue.court2.id }] },
    series: { id: series.id }
  })
  t.equal(created.statusCode, 201)
  const event = created.json()
  t.match(event, {
    name: 'Ladder night',
    subtype: 'SINGLES',
    tags: ['ladder', 'evening'],
    startDate: '2026-03-03T18:00:00.000Z',
    endDate: '2026-03-03T20:00:00.000Z',
    areas: { items: [{ id: venue.hall.id }], _total: 1 },
    courts: { items: [{ id: venue.court1.id }, { id: venue.court2.id }], _total: 2 },
    series: { id: series.id },
    _links: { self: { href: `/apis/v2/admin/events/${event.id}` } }
  })
  t.same((await call('GET', `/apis/v2/admin/events/${event.id}`)).json(), event)
  t.same((await call('GET', `/apis/v2/admin/series/${series.id}`)).json().events.items, [{ id: event.id }])
  t.same((await call('GET', '/apis/v2/admin/series')).json().items[0].events.items, [{ id: event.id }])
  t.same((await call('GET', '/apis/v2/admin/events')).json().items, [event])

  for (const [body, message] of [
    [{ name: 'x', type: 'T', startDate: '2026-03-03T19:00:00Z', endDate: '2026-03-03T18:00:00Z' }, /body\.endDate must be after body\.startDate/],
    [{ name: 'x', type: 'T', startDate: 'tomorrow', endDate: '2026-03-03T18:00:00Z' }, /body\.startDate must match format "date-time"/],
    [{ name: 'x', type: 'T', startDate: '2026-03-03T19:00:00Z' }, /body\.endDate is required/],
    [{ name: 'x', type: 'T', startDate: '2026-03-03T19:00:00Z', endDate: '2026-03-03T20:00:00Z', courts: { items: [{ id: 'ghost' }] } }, /body\.courts\.items\.0\.id: no court with id "ghost"/],
    [{ name: 'x', type: 'T', startDate: '2026-03-03T19:00:00Z', endDate: '2026-03-03T20:00:00Z', series: { id: 'ghost' } }, /body\.series\.id: no series with id "ghost"/]
  ] as const) {
    const res = await call('POST', '/apis/v2/admin/events', body)
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.match(errorOf(res).message, message)
  }

  ctx.clock.advance(60_000)
  const patched = await call('PATCH', `/apis/v2/admin/events/${event.id}`, { name: 'Ladder', courts: { items: [] }, endDate: '2026-03-03T21:30:00Z', description: 'Bring balls' })
  t.equal(patched.statusCode, 200)
  t.match(patched.json(), { name: 'Ladder', description: 'Bring balls', endDate: '2026-03-03T21:30:00.000Z', courts: { _total: 0 }, areas: { _total: 1 }, updatedDate: '2026-03-01T10:01:00.000Z' })
  const backwards = await call('PATCH', `/apis/v2/admin/events/${event.id}`, { endDate: '2026-03-01T00:00:00Z' })
  t.equal(backwards.statusCode, 400)

  const seriesPatched = await call('PATCH', `/apis/v2/admin/series/${series.id}`, { subtype: 'DOUBLES', description: 'Weekly' })
  t.match(seriesPatched.json(), { name: 'Ladder', subtype: 'DOUBLES', description: 'Weekly' })

  t.equal((await call('DELETE', `/apis/v2/admin/series/${series.id}`)).statusCode, 204)
  t.equal((await call('GET', `/apis/v2/admin/series/${series.id}`)).statusCode, 404)
  t.equal((await call('GET', `/apis/v2/admin/events/${event.id}`)).json().series, null, 'its events stay, outside any series')
  t.equal((await call('DELETE', `/apis/v2/admin/events/${event.id}`)).statusCode, 204)
  t.equal((await call('GET', '/apis/v2/admin/events')).json()._total, 0)
})
