import t from 'tap'
import { errorOf } from '../test-support/app.js'
import { templateTestContext as setup } from '../test-support/templates.js'

t.test('from-event builds data and places from the event; the body overrides places', async (t) => {
  const { call, venue, asAdmin: admin } = await setup(t)
  const asAdmin = await admin()
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
  const { call, venue, asAdmin: admin } = await setup(t)
  const asAdmin = await admin()
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
