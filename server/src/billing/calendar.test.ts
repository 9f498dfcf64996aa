import t from 'tap'
import { anchorAt, chargeDate, cycleAt, daysAfter, grantDate, instantOf, isValidTimezone, type Anchor } from './calendar.js'

const iso = (d: Date) => d.toISOString()

t.test('anchored on the 31st through a leap year: clamped each month, never drifting', async (t) => {
  const anchor = anchorAt(new Date('2024-01-31T09:00:00Z'), 'UTC')
  t.same(
    Array.from({ length: 6 }, (_, n) => iso(chargeDate(anchor, 'MONTHLY', n))),
    [
      '2024-01-31T09:00:00.000Z',
      '2024-02-29T09:00:00.000Z',
      '2024-03-31T09:00:00.000Z',
      '2024-04-30T09:00:00.000Z',
      '2024-05-31T09:00:00.000Z',
      '2024-06-30T09:00:00.000Z'
    ]
  )
  t.equal(iso(chargeDate(anchor, 'MONTHLY', 13)), '2025-02-28T09:00:00.000Z', 'no leap day the next year')
  const leapDay = anchorAt(new Date('2024-02-29T12:00:00Z'), 'UTC')
  t.same([1, 4].map((n) => iso(chargeDate(leapDay, 'YEARLY', n))), ['2025-02-28T12:00:00.000Z', '2028-02-29T12:00:00.000Z'])
  t.equal(iso(chargeDate(anchor, 'SIX_MONTHS', 1)), '2024-07-31T09:00:00.000Z')
})

t.test('the local time stays the same across DST changes, in Madrid and New York', async (t) => {
  const madrid = anchorAt(new Date('2026-01-15T09:00:00Z'), 'Europe/Madrid') // 10:00 CET
  t.equal(madrid.local, '2026-01-15T10:00:00.000')
  t.equal(iso(chargeDate(madrid, 'MONTHLY', 3)), '2026-04-15T08:00:00.000Z', '10:00 CEST')
  t.equal(iso(chargeDate(madrid, 'MONTHLY', 10)), '2026-11-15T09:00:00.000Z', '10:00 CET again')
  const newYork = anchorAt(new Date('2026-01-31T23:30:00Z'), 'America/New_York') // 18:30 EST on the 31st
  t.same([1, 2].map((n) => iso(chargeDate(newYork, 'MONTHLY', n))), ['2026-02-28T23:30:00.000Z', '2026-03-31T22:30:00.000Z'])
  t.equal(newYork.local.slice(0, 10), '2026-01-31', 'the anchor is the local date, not the UTC one (Feb 1)')
})

t.test('a local time in the spring-forward gap moves forward; one that exists twice takes the first', async (t) => {
  // Madrid: 2026-03-29 02:00 CET jumps to 03:00 CEST; 2026-10-25 03:00 CEST falls back to 02:00 CET.
  const gap = instantOf({ year: 2026, month: 3, day: 29, hour: 2, minute: 30, second: 0, millisecond: 0 }, 'Europe/Madrid')
  t.equal(iso(gap), '2026-03-29T01:30:00.000Z', '03:30 CEST')
  const twice = instantOf({ year: 2026, month: 10, day: 25, hour: 2, minute: 30, second: 0, millisecond: 0 }, 'Europe/Madrid')
  t.equal(iso(twice), '2026-10-25T00:30:00.000Z', '02:30 CEST, the first of the two')
  const after = instantOf({ year: 2026, month: 10, day: 25, hour: 10, minute: 0, second: 0, millisecond: 0 }, 'Europe/Madrid')
  t.equal(iso(after), '2026-10-25T09:00:00.000Z', 'an ordinary time that day is untouched')
  const ny = instantOf({ year: 2026, month: 11, day: 1, hour: 1, minute: 30, second: 0, millisecond: 0 }, 'America/New_York')
  t.equal(iso(ny), '2026-11-01T05:30:00.000Z', '01:30 EDT, the first of the two')
  // An anchor at 02:30 on the 29th meets the gap two months on.
  const anchor: Anchor = { local: '2026-01-29T02:30:00.000', timezone: 'Europe/Madrid' }
  t.equal(iso(chargeDate(anchor, 'MONTHLY', 2)), '2026-03-29T01:30:00.000Z')
  t.equal(iso(chargeDate(anchor, 'MONTHLY', 3)), '2026-04-29T00:30:00.000Z', 'and is back at 02:30 the month after')
})

t.test('NON_RECURRING ends after its days, counted in local calendar days', async (t) => {
  const anchor = anchorAt(new Date('2026-03-20T11:00:00Z'), 'Europe/Madrid') // 12:00 CET
  t.equal(iso(daysAfter(anchor, 30)), '2026-04-19T10:00:00.000Z', '12:00 CEST: 30 calendar days, not 720 hours')
})

t.test('grants are monthly under a YEARLY charge', async (t) => {
  const anchor = anchorAt(new Date('2026-01-31T10:00:00Z'), 'UTC')
  t.same(
    [1, 2, 12].map((n) => iso(grantDate(anchor, n))),
    ['2026-02-28T10:00:00.000Z', '2026-03-31T10:00:00.000Z', '2027-01-31T10:00:00.000Z']
  )
  t.equal(iso(chargeDate(anchor, 'YEARLY', 1)), '2027-01-31T10:00:00.000Z')
})

t.test('the billing cycle an instant falls in', async (t) => {
  const anchor = anchorAt(new Date('2024-01-31T09:00:00Z'), 'UTC')
  t.match(cycleAt(anchor, 'MONTHLY', new Date('2024-01-31T09:00:00Z')), { index: 0 })
  t.match(cycleAt(anchor, 'MONTHLY', new Date('2024-02-29T08:59:59Z')), { index: 0 })
  const third = cycleAt(anchor, 'MONTHLY', new Date('2024-03-31T09:00:00Z'))
  t.same([third.index, iso(third.start), iso(third.end)], [2, '2024-03-31T09:00:00.000Z', '2024-04-30T09:00:00.000Z'])
  t.match(cycleAt(anchor, 'YEARLY', new Date('2026-06-01T00:00:00Z')), { index: 2 })
  t.match(cycleAt(anchor, 'MONTHLY', new Date('2023-01-01T00:00:00Z')), { index: 0 }, 'before the start: the first cycle')
})

t.test('timezones are IANA names', async (t) => {
  t.ok(isValidTimezone('Europe/Madrid'))
  t.notOk(isValidTimezone('Mars/Olympus'))
  t.notOk(isValidTimezone('+02:00x'))
  t.throws(() => anchorAt(new Date(), 'Mars/Olympus'), /not an IANA timezone/)
})
