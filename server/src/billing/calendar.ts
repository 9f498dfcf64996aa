// Renewal and grant dates (BILLING.md, "Calendars"): every date is the anchor plus n periods in the
// subscription's own timezone, the day clamped to the month's length, never chained from the
// previous date. Local times go to UTC through the timezone database (Luxon).
import { DateTime, IANAZone } from 'luxon'

export type RenewalPeriod = 'MONTHLY' | 'SIX_MONTHS' | 'YEARLY'

export const PERIOD_MONTHS: Record<RenewalPeriod, number> = { MONTHLY: 1, SIX_MONTHS: 6, YEARLY: 12 }

/** A schedule's anchor: a local wall time (no offset) and the IANA zone it is read in. */
export interface Anchor {
  /** `YYYY-MM-DDTHH:mm:ss.SSS`, local to `timezone`. */
  local: string
  timezone: string
}

export class CalendarError extends Error {
  override name = 'CalendarError'
}

// Luxon checks a zone by building an Intl.DateTimeFormat for it on every call, tens of microseconds
// each; every calendar date asks several times, and the jobs compute thousands. The valid ones are
// remembered, at most 1,000 of them (the IANA database has about 600 names, though Intl takes any
// casing of each: past the bound a name is simply checked every time).
const validZones = new Set<string>()

export function isValidTimezone(timezone: string): boolean {
  if (validZones.has(timezone)) return true
  const valid = timezone.length <= 100 && IANAZone.isValidZone(timezone)
  if (valid && validZones.size < 1000) validZones.add(timezone)
  return valid
}

function zoneOf(timezone: string): string {
  if (!isValidTimezone(timezone)) throw new CalendarError(`${JSON.stringify(timezone.slice(0, 40))} is not an IANA timezone`)
  return timezone
}

/** The anchor of a schedule starting at `start`: its local date and time in `timezone`. */
export function anchorAt(start: Date, timezone: string): Anchor {
  const local = DateTime.fromJSDate(start, { zone: zoneOf(timezone) })
  return { local: local.toFormat("yyyy-MM-dd'T'HH:mm:ss.SSS"), timezone }
}

type LocalFields = { year: number; month: number; day: number; hour: number; minute: number; second: number; millisecond: number }

/**
 * The instant of a local wall time. A time that does not exist (the spring-forward gap) moves
 * forward by the gap, as Luxon does; one that exists twice (falling back) is the first of the two,
 * where Luxon would take the second.
 */
export function instantOf(fields: LocalFields, timezone: string): Date {
  const zone = zoneOf(timezone)
  const chosen = DateTime.fromObject(fields, { zone })
  const offsetBefore = DateTime.fromMillis(chosen.toMillis() - 86_400_000, { zone }).offset
  if (offsetBefore > chosen.offset) {
    const earlier = DateTime.fromMillis(chosen.toMillis() - (offsetBefore - chosen.offset) * 60_000, { zone })
    const same = earlier.hour === fields.hour && earlier.minute === fields.minute && earlier.day === fields.day
    if (same) return earlier.toJSDate()
  }
  return chosen.toJSDate()
}

function anchorFields(anchor: Anchor): DateTime {
  const local = DateTime.fromISO(anchor.local, { zone: 'UTC' })
  if (!local.isValid) throw new CalendarError(`anchor ${JSON.stringify(anchor.local.slice(0, 40))} is not a local date and time`)
  return local
}

/** The anchor plus `months`, the day clamped to the month's length (Jan 31 + 1 month = Feb 28 or 29). */
export function monthsAfter(anchor: Anchor, months: number): Date {
  // Calendar arithmetic on the wall time alone (UTC has no gaps), then into the zone.
  const local = anchorFields(anchor).plus({ months })
  return instantOf(local.toObject() as LocalFields, anchor.timezone)
}

/** The n-th charge date (n = 0 is the start). */
export function chargeDate(anchor: Anchor, period: RenewalPeriod, n: number): Date {
  return monthsAfter(anchor, n * PERIOD_MONTHS[period])
}

/** The n-th grant date: perks are granted monthly, whatever the charge period. */
export function grantDate(anchor: Anchor, n: number): Date {
  return monthsAfter(anchor, n)
}

/** The end of a NON_RECURRING membership: `days` local calendar days after its start. */
export function daysAfter(anchor: Anchor, days: number): Date {
  const local = anchorFields(anchor).plus({ days })
  return instantOf(local.toObject() as LocalFields, anchor.timezone)
}

/** The billing cycle an instant falls in: its index and its [start, end) dates. */
export function cycleAt(anchor: Anchor, period: RenewalPeriod, instant: Date): { index: number; start: Date; end: Date } {
  const start = anchorFields(anchor)
  const local = DateTime.fromJSDate(instant, { zone: zoneOf(anchor.timezone) })
  const months = (local.year - start.year) * 12 + (local.month - start.month)
  // The estimate from whole months may be one cycle off either way (day of month, clamping, time).
  let index = Math.max(0, Math.floor(months / PERIOD_MONTHS[period]) - 1)
  while (chargeDate(anchor, period, index + 1) <= instant) index++
  while (index > 0 && chargeDate(anchor, period, index) > instant) index--
  return { index, start: chargeDate(anchor, period, index), end: chargeDate(anchor, period, index + 1) }
}
