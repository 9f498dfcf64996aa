// The constraint matcher and the session periods it relies on, as pure functions: each kind of
// constraint matching and refusing, kids, and periods across a peak-hour boundary in a zone.
import t from 'tap'
import { BadRequestError } from '../errors.js'
import type { SessionPeriod } from '@club/contract'
import { parseSessionPeriods, sessionPeriodTypesOf, unmatchedConstraints, type ConstraintSubject } from './constraints.js'
import { noConstraints, parsePackageTemplateData } from './template-data.js'

const subject: ConstraintSubject = {
  eventSubtype: 'DOUBLES',
  eventCustomType: 'CLINIC',
  eventTags: ['beginner', 'evening'],
  kid: false,
  sessionPeriodTypes: ['OFF PEAK'],
  areaSlugs: ['hall'],
  podIds: ['pod-1']
}

const refusedNames = (constraints: Partial<ReturnType<typeof noConstraints>>, s: ConstraintSubject = subject) =>
  unmatchedConstraints({ ...noConstraints(), ...constraints }, s).map((e) => (e.details as { constraint: string }).constraint)

t.test('null constraints match anything', async (t) => {
  t.same(refusedNames({}), [])
  t.same(refusedNames({}, { ...subject, eventSubtype: null, eventCustomType: null, eventTags: [], kid: true, sessionPeriodTypes: null, areaSlugs: [], podIds: [] }), [])
})

t.test('each constraint matches and refuses', async (t) => {
  const cases: Array<[string, Partial<ReturnType<typeof noConstraints>>, Partial<ReturnType<typeof noConstraints>>]> = [
    ['bookingEventSubtype', { bookingEventSubtype: ['SINGLES', 'DOUBLES'] }, { bookingEventSubtype: ['SINGLES'] }],
    ['bookingEventCustomType', { bookingEventCustomType: 'CLINIC' }, { bookingEventCustomType: 'LEAGUE' }],
    ['bookingEventCustomTypesMatchAny', { bookingEventCustomTypesMatchAny: ['LEAGUE', 'CLINIC'] }, { bookingEventCustomTypesMatchAny: ['LEAGUE', 'SOCIAL'] }],
    ['bookingEventTagsMatchAll', { bookingEventTagsMatchAll: ['beginner', 'evening'] }, { bookingEventTagsMatchAll: ['beginner', 'morning'] }],
    ['bookingEventTagsMatchAny', { bookingEventTagsMatchAny: ['morning', 'evening'] }, { bookingEventTagsMatchAny: ['morning', 'advanced'] }],
    ['bookingSessionPeriodTypeMatchAny', { bookingSessionPeriodTypeMatchAny: ['OFF PEAK', 'REDUCED'] }, { bookingSessionPeriodTypeMatchAny: ['PEAK'] }],
    ['bookingAreaSlugMatchAny', { bookingAreaSlugMatchAny: ['annex', 'hall'] }, { bookingAreaSlugMatchAny: ['annex'] }],
    ['bookingPodIdsMatchAny', { bookingPodIdsMatchAny: ['pod-1'] }, { bookingPodIdsMatchAny: ['pod-2'] }]
  ]
  for (const [name, matching, refusing] of cases) {
    t.same(refusedNames(matching), [], `${name} matches`)
    t.same(refusedNames(refusing), [name], `${name} refuses`)
  }
  const errors = unmatchedConstraints({ ...noConstraints(), bookingEventTagsMatchAll: ['beginner', 'morning'] }, subject)
  t.match(errors[0], { code: 'CONSTRAINT_NOT_MATCHED', message: /bookingEventTagsMatchAll: the tags morning are missing/ })
})

t.test('a subject without the field the constraint needs is refused', async (t) => {
  const bare = { ...subject, eventSubtype: null, eventCustomType: null, eventTags: [], sessionPeriodTypes: null, areaSlugs: [], podIds: [] }
  t.same(refusedNames({ bookingEventSubtype: ['DOUBLES'], bookingEventCustomType: 'CLINIC', bookingSessionPeriodTypeMatchAny: ['OFF PEAK'], bookingAreaSlugMatchAny: ['hall'] }, bare), [
    'bookingEventSubtype',
    'bookingEventCustomType',
    'bookingSessionPeriodTypeMatchAny',
    'bookingAreaSlugMatchAny'
  ])
})

t.test('kids: allowKids false refuses a kid; null or true takes anyone', async (t) => {
  const kid = { ...subject, kid: true }
  t.same(refusedNames({ allowKids: false }, kid), ['allowKids'])
  t.same(refusedNames({ allowKids: false }, subject), [], 'an adult is fine')
  t.same(refusedNames({ allowKids: true }, kid), [])
  t.same(refusedNames({ allowKids: null }, kid), [])
})

t.test('several failures are each named', async (t) => {
  t.same(refusedNames({ allowKids: false, bookingPodIdsMatchAny: ['x'], bookingEventSubtype: ['SINGLES'] }, { ...subject, kid: true }), [
    'bookingEventSubtype',
    'allowKids',
    'bookingPodIdsMatchAny'
  ])
})

// Madrid: peak 18:00-22:00 on weekdays, reduced 07:00-09:00 on weekdays.
const periods: SessionPeriod[] = [
  { type: 'PEAK', days: [1, 2, 3, 4, 5], start: '18:00', end: '22:00' },
  { type: 'REDUCED', days: [1, 2, 3, 4, 5], start: '07:00', end: '09:00' }
]
const zone = 'Europe/Madrid'
const types = (start: string, end: string, p = periods, z = zone) => sessionPeriodTypesOf(new Date(start), new Date(end), p, z)

t.test('session periods in the area timezone', async (t) => {
  // Tuesday 2026-03-03; Madrid is UTC+1 in March before the switch.
  t.same(types('2026-03-03T17:00:00Z', '2026-03-03T18:00:00Z'), ['PEAK'], '18:00-19:00 local is peak')
  t.same(types('2026-03-03T16:00:00Z', '2026-03-03T17:00:00Z'), ['OFF PEAK'], '17:00-18:00 local is off peak (peak starts as it ends)')
  t.same(types('2026-03-03T16:30:00Z', '2026-03-03T17:30:00Z'), ['PEAK', 'OFF PEAK'], '17:30-18:30 local runs across the boundary: both')
  t.same(types('2026-03-03T06:00:00Z', '2026-03-03T07:00:00Z'), ['REDUCED'], '07:00-08:00 local')
  t.same(types('2026-03-07T17:00:00Z', '2026-03-07T18:00:00Z'), ['OFF PEAK'], 'Saturday evening is off peak')
  // In UTC the same instants are other local hours: 17:00-18:00 UTC on the Tuesday is within 18:00-22:00 only in Madrid.
  t.same(types('2026-03-03T17:00:00Z', '2026-03-03T18:00:00Z', periods, 'UTC'), ['OFF PEAK'], 'the zone decides')
  // Summer time (UTC+2): 18:00 local is 16:00Z.
  t.same(types('2026-07-07T16:00:00Z', '2026-07-07T17:00:00Z'), ['PEAK'], 'after the clocks change, still 18:00 local')
  t.same(types('2026-03-03T20:30:00Z', '2026-03-03T21:30:00Z'), ['PEAK', 'OFF PEAK'], '21:30-22:30 local leaves peak')
  t.same(types('2026-03-03T17:00:00Z', '2026-03-03T18:00:00Z', []), ['OFF PEAK'], 'an area without periods is off peak')
  const midnight: SessionPeriod[] = [
    { type: 'PEAK', days: [2], start: '22:00', end: '24:00' },
    { type: 'PEAK', days: [3], start: '00:00', end: '01:00' }
  ]
  t.same(types('2026-03-03T21:30:00Z', '2026-03-03T23:30:00Z', midnight), ['PEAK'], 'a late period split at midnight covers 22:30-00:30 whole')
})

t.test('session periods as given: an end after the start, weekdays once each and sorted', async (t) => {
  t.same(parseSessionPeriods([{ type: 'PEAK', days: [5, 1, 1], start: '18:00', end: '24:00' }], 'body.periods'), [
    { type: 'PEAK', days: [1, 5], start: '18:00', end: '24:00' }
  ])
  t.throws(() => parseSessionPeriods([{ type: 'PEAK', days: [1], start: '22:00', end: '02:00' }], 'body.periods'), /^body\.periods\[0\]\.end must be after .*a period past midnight is two periods/)
})

t.test('PACKAGE template data: a bad item is refused naming its path', async (t) => {
  const good = { validityDays: 90, items: [{ type: 'BOOKING', displayName: 'Court booking', displayNamePlural: 'Court bookings', totalItems: 10 }] }
  t.match(parsePackageTemplateData(good), { validityDays: 90, displayName: null, items: [{ totalItems: 10, constraints: noConstraints() }] })
  const item = good.items[0]!
  const cases: Array<[unknown, RegExp]> = [
    [[], /^body\.data must be an object/],
    [{ ...good, items: [] }, /^body\.data\.items must be a list of 1 to 50 items/],
    [{ ...good, validityDays: 0 }, /^body\.data\.validityDays must be a whole number from 1 to 3650/],
    [{ ...good, items: [item, { ...item, type: 'PARKING' }] }, /^body\.data\.items\[1\]\.type must be one of BOOKING/],
    [{ ...good, items: [{ ...item, totalItems: 2.5 }] }, /^body\.data\.items\[0\]\.totalItems must be a whole number/],
    [{ ...good, items: [{ ...item, displayName: ' ' }] }, /^body\.data\.items\[0\]\.displayName must be a non-empty string/],
    [{ ...good, items: [{ ...item, constraints: { allowKid: false } }] }, /^body\.data\.items\[0\]\.constraints\.allowKid is not a constraint/],
    [{ ...good, items: [{ ...item, constraints: { allowKids: 'no' } }] }, /constraints\.allowKids must be true, false or null/],
    [{ ...good, items: [{ ...item, constraints: { bookingEventTagsMatchAll: [] } }] }, /bookingEventTagsMatchAll must be null or a list of 1 to 100 values/],
    [{ ...good, items: [{ ...item, constraints: { bookingSessionPeriodTypeMatchAny: ['OFF_PEAK'] } }] }, /bookingSessionPeriodTypeMatchAny\[0\] must be one of PEAK, REDUCED, OFF PEAK/]
  ]
  for (const [data, message] of cases) {
    let thrown: unknown
    try {
      parsePackageTemplateData(data)
    } catch (err) {
      thrown = err
    }
    t.ok(thrown instanceof BadRequestError && message.test(thrown.message), `${String(message)}: ${String((thrown as Error | undefined)?.message)}`)
  }
})
