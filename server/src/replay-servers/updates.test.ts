// When a box may install: its update window's opening in the club's timezone, and the events on its
// courts it must not cut. Times are injected; the events are real rows in a real SQLite file.
import t from 'tap'
import { testApp } from '../test-support/app.js'
import { testVenue } from '../test-support/venue.js'
import { createEvent } from '../venue/events.js'
import { busyIntervals, windowOpening } from './updates.js'

t.test("the update window's opening: today's while it lasts, else the next, in the club's timezone", async (t) => {
  // Amsterdam is UTC+1 in winter: 02:00-05:00 local is 01:00-04:00 UTC.
  const tz = 'Europe/Amsterdam'
  const today = { start: '2026-01-15T01:00:00.000Z', end: '2026-01-15T04:00:00.000Z' }
  const tomorrow = { start: '2026-01-16T01:00:00.000Z', end: '2026-01-16T04:00:00.000Z' }
  t.same(windowOpening('02:00-05:00', tz, new Date('2026-01-15T00:30:00Z')), today, 'before it opens: today')
  t.same(windowOpening('02:00-05:00', tz, new Date('2026-01-15T02:00:00Z')), today, 'while it is open: today, already open')
  t.same(windowOpening('02:00-05:00', tz, new Date('2026-01-15T04:00:00Z')), tomorrow, 'once it closed: tomorrow')
  t.same(windowOpening('02:00-05:00', 'UTC', new Date('2026-01-15T04:30:00Z')), { start: '2026-01-15T02:00:00.000Z', end: '2026-01-15T05:00:00.000Z' }, 'the same hours in UTC are other instants')
  // Summer time: UTC+2.
  t.same(windowOpening('02:00-05:00', tz, new Date('2026-07-01T12:00:00Z')), { start: '2026-07-02T00:00:00.000Z', end: '2026-07-02T03:00:00.000Z' })
})

t.test('a window across midnight ends the next day, and is open after midnight', async (t) => {
  const tz = 'Europe/Amsterdam'
  const night = { start: '2026-01-15T21:00:00.000Z', end: '2026-01-16T03:00:00.000Z' }
  t.same(windowOpening('22:00-04:00', tz, new Date('2026-01-15T12:00:00Z')), night, 'at noon: tonight')
  t.same(windowOpening('22:00-04:00', tz, new Date('2026-01-15T23:30:00Z')), night, 'after midnight local: still open')
  t.same(windowOpening('22:00-04:00', tz, new Date('2026-01-16T02:00:00Z')), night, 'at 03:00 local: still open')
  t.same(windowOpening('22:00-04:00', tz, new Date('2026-01-16T03:00:00Z')), { start: '2026-01-16T21:00:00.000Z', end: '2026-01-17T03:00:00.000Z' }, 'closed at 04:00: the next night')
})

t.test("busy intervals: events under way or to come within a day on the box's courts, their pod or its area", async (t) => {
  const ctx = await testApp(t)
  const venue = await testVenue(ctx)
  const now = new Date('2026-03-01T10:00:00.000Z')
  const event = async (name: string, start: string, end: string, places: { courts?: string[]; pods?: string[]; areas?: string[] }) => {
    const refs = (ids?: string[]) => (ids ? { items: ids.map((id) => ({ id })) } : undefined)
    await createEvent(
      ctx.app.db,
      { name, type: 'LEAGUE', startDate: start, endDate: end, courts: refs(places.courts), pods: refs(places.pods), areas: refs(places.areas) },
      ctx.clock
    )
  }
  const box = { area_id: venue.hall.id, config: JSON.stringify({ cameras: [{ id: 'cam-1', name: 'north', feed: 'rtsp://10.0.0.20/1', isEnabled: true, courtIds: [venue.court1.id] }] }) }

  t.same(await busyIntervals(ctx.app.db, box, now), [], 'no events: never busy')
  await event('starts in 10 minutes', '2026-03-01T10:10:00.000Z', '2026-03-01T11:00:00.000Z', { courts: [venue.court1.id] })
  t.same(await busyIntervals(ctx.app.db, box, now), [{ start: '2026-03-01T10:10:00.000Z', end: '2026-03-01T11:00:00.000Z' }], 'an event starting within 15 minutes is told')
  await event('under way on the pod', '2026-03-01T09:00:00.000Z', '2026-03-01T10:30:00.000Z', { pods: [venue.pod.id] })
  await event('later on the area', '2026-03-01T18:00:00.000Z', '2026-03-01T20:00:00.000Z', { areas: [venue.hall.id] })
  await event('over already', '2026-03-01T08:00:00.000Z', '2026-03-01T10:00:00.000Z', { courts: [venue.court1.id] })
  await event('beyond a day', '2026-03-02T10:00:00.000Z', '2026-03-02T11:00:00.000Z', { courts: [venue.court1.id] })
  await event('on another area', '2026-03-01T10:05:00.000Z', '2026-03-01T11:00:00.000Z', { courts: [venue.court2.id] })
  t.same(
    await busyIntervals(ctx.app.db, box, now),
    [
      { start: '2026-03-01T09:00:00.000Z', end: '2026-03-01T10:30:00.000Z' },
      { start: '2026-03-01T10:10:00.000Z', end: '2026-03-01T11:00:00.000Z' },
      { start: '2026-03-01T18:00:00.000Z', end: '2026-03-01T20:00:00.000Z' }
    ],
    'soonest first; not what ended, what is more than a day away or on another area'
  )
  t.same(
    await busyIntervals(ctx.app.db, { area_id: venue.hall.id, config: null }, now),
    [{ start: '2026-03-01T18:00:00.000Z', end: '2026-03-01T20:00:00.000Z' }],
    'a box naming no courts: only its whole area counts'
  )
  t.same(await busyIntervals(ctx.app.db, { area_id: null, config: box.config }, now), [], 'a box with no area')
})
