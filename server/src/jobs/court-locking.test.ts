// The court-locking job: an event's places lock COURT_LOCK_MINUTES before it starts (every change a
// 409 naming the lock, a court's GET showing it) and unlock when the job sees the event has ended.
import t from 'tap'
import { errorOf, testApp, userWithToken } from '../test-support/app.js'
import { testVenue } from '../test-support/venue.js'
import { runsOf } from './test-helpers.js'

t.test('a court locked and released around its event, with the 409s', async (t) => {
  const ctx = await testApp(t, { COURT_LOCK_MINUTES: '60', ACCESS_TOKEN_TTL_SECONDS: String(7 * 86400) })
  const admin = await userWithToken(ctx, 'admin')
  const venue = await testVenue(ctx)
  const call = (method: 'GET' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    ctx.app.inject({ method, url: `/apis/v2/admin/${url}`, headers: { authorization: admin.authorization }, ...(payload ? { payload } : {}) })
  const created = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/admin/events',
    headers: { authorization: admin.authorization },
    // The hall (and with it its pod and court1) from 12:00 to 14:00.
    payload: { name: 'Spring open', type: 'SOCIAL', startDate: '2026-03-01T12:00:00Z', endDate: '2026-03-01T14:00:00Z', areas: { items: [{ id: venue.hall.id }] } }
  })
  t.equal(created.statusCode, 201)
  const event = created.json()
  const run = async (at: string) => {
    ctx.clock.set(at)
    const outcome = await ctx.app.jobs.run('court-locking', { trigger: 'cli' })
    return outcome.kind === 'ran' ? outcome.run.counts : {}
  }

  t.same(await run('2026-03-01T10:59:00.000Z'), { locked: 0, released: 0 }, '61 minutes before: nothing to lock')
  t.equal((await call('PATCH', `courts/${venue.court1.id}`, { name: 'Court one' })).statusCode, 200)

  t.same(await run('2026-03-01T11:00:00.000Z'), { released: 0, locked: 1 }, '60 minutes before: locked')
  t.same(await run('2026-03-01T11:01:00.000Z'), { locked: 0, released: 0 }, 'running again locks nothing more')
  const court = await call('GET', `courts/${venue.court1.id}`)
  t.match(court.json(), { id: venue.court1.id, lockedUntil: '2026-03-01T14:00:00.000Z', lockingEvent: { id: event.id } }, 'the court inside the hall shows the lock')
  const refusals: Array<[string, 'PATCH' | 'DELETE', string, object?]> = [
    ['the court (in the hall)', 'PATCH', `courts/${venue.court1.id}`, { name: 'Centre court' }],
    ['the court', 'DELETE', `courts/${venue.court1.id}`],
    ['the pod (in the hall)', 'PATCH', `pods/${venue.pod.id}`, { name: 'Pod B' }],
    ['the hall', 'PATCH', `areas/${venue.hall.id}`, { name: 'Great hall' }],
    ['the hall', 'DELETE', `areas/${venue.hall.id}`],
    ['the event', 'PATCH', `events/${event.id}`, { endDate: '2026-03-01T15:00:00Z' }],
    ['the event', 'DELETE', `events/${event.id}`]
  ]
  for (const [what, method, url, body] of refusals) {
    const res = await call(method, url, body)
    t.equal(res.statusCode, 409, `${method} ${what} is refused`)
    t.match(errorOf(res).message, /locked.*until 2026-03-01T14:00:00.000Z/, `${method} ${what}: the message names the lock`)
  }
  t.match(errorOf(await call('PATCH', `courts/${venue.court1.id}`, { name: 'x' })).message, `by event ${event.id}`)
  t.equal((await call('PATCH', `courts/${venue.court2.id}`, { name: 'Field court' })).statusCode, 200, 'a court elsewhere is free')
  t.match((await call('GET', `courts/${venue.court2.id}`)).json(), { lockedUntil: null, lockingEvent: null })

  t.same(await run('2026-03-01T13:59:00.000Z'), { locked: 0, released: 0 }, 'still under way')
  t.equal((await call('PATCH', `courts/${venue.court1.id}`, { name: 'Centre court' })).statusCode, 409)
  t.same(await run('2026-03-01T14:00:00.000Z'), { locked: 0, released: 1 }, 'released at its end')
  t.equal((await call('PATCH', `courts/${venue.court1.id}`, { name: 'Centre court' })).statusCode, 200)
  t.match((await call('GET', `courts/${venue.court1.id}`)).json(), { name: 'Centre court', lockedUntil: null, lockingEvent: null })
  t.equal((await call('DELETE', `events/${event.id}`)).statusCode, 204, 'the ended event may go')
  t.same(await run('2026-03-01T15:00:00.000Z'), { locked: 0, released: 0 }, 'an ended event is never locked again')
  t.equal((await runsOf(ctx, 'court-locking')).length, 6, 'every run recorded')
})

t.test('an event created inside its lock window is locked at the next run', async (t) => {
  const ctx = await testApp(t, { COURT_LOCK_MINUTES: '30' })
  const admin = await userWithToken(ctx, 'admin')
  const venue = await testVenue(ctx)
  const res = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/admin/events',
    headers: { authorization: admin.authorization },
    payload: { name: 'Drop-in', type: 'SOCIAL', startDate: '2026-03-01T10:10:00Z', endDate: '2026-03-01T11:00:00Z', courts: { items: [{ id: venue.court2.id }] } }
  })
  const outcome = await ctx.app.jobs.run('court-locking', { trigger: 'cli' })
  t.match(outcome, { kind: 'ran', run: { counts: { locked: 1 } } })
  const court = await ctx.app.inject({ url: `/apis/v2/admin/courts/${venue.court2.id}`, headers: { authorization: admin.authorization } })
  t.match(court.json(), { lockingEvent: { id: res.json().id } })
  const area = await ctx.app.inject({ method: 'PATCH', url: `/apis/v2/admin/areas/${venue.field.id}`, headers: { authorization: admin.authorization }, payload: { name: 'Big field' } })
  t.equal(area.statusCode, 200, "naming a court does not lock the area around it")
})

t.test("a lock ends with its event, before the job has released it", async (t) => {
  const ctx = await testApp(t, { COURT_LOCK_MINUTES: '60', ACCESS_TOKEN_TTL_SECONDS: String(86400) })
  const admin = await userWithToken(ctx, 'admin')
  const venue = await testVenue(ctx)
  const call = (method: 'GET' | 'PATCH', url: string, payload?: object) =>
    ctx.app.inject({ method, url: `/apis/v2/admin/${url}`, headers: { authorization: admin.authorization }, ...(payload ? { payload } : {}) })
  const created = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/admin/events',
    headers: { authorization: admin.authorization },
    payload: { name: 'Morning social', type: 'SOCIAL', startDate: '2026-03-01T10:30:00Z', endDate: '2026-03-01T12:00:00Z', courts: { items: [{ id: venue.court1.id }] } }
  })
  t.equal(created.statusCode, 201)
  const event = created.json()
  t.match(await ctx.app.jobs.run('court-locking', { trigger: 'cli' }), { kind: 'ran', run: { counts: { locked: 1 } } })

  ctx.clock.set('2026-03-01T11:59:59.999Z')
  t.equal((await call('PATCH', `courts/${venue.court1.id}`, { name: 'Centre court' })).statusCode, 409, 'a millisecond before the end: still locked')

  // The event has ended; the job has not run since.
  ctx.clock.set('2026-03-01T12:00:00.000Z')
  t.equal((await call('PATCH', `courts/${venue.court1.id}`, { name: 'Centre court' })).statusCode, 200, 'the court may change')
  t.match((await call('GET', `courts/${venue.court1.id}`)).json(), { name: 'Centre court', lockedUntil: null, lockingEvent: null }, 'and shows no lock')
  t.equal((await call('PATCH', `events/${event.id}`, { name: 'Morning social (ended)' })).statusCode, 200, 'the event may change')
  const held = await ctx.app.db.selectFrom('event_locks').select('released_at').where('event_id', '=', event.id).executeTakeFirstOrThrow()
  t.equal(held.released_at, null, 'the job has not released it yet')
})
