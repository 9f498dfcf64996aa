// Whether a package item may pay for a target: the reference's PackageItemConstraints, matched by
// one pure function. A null constraint matches anything; `...MatchAny` any one of its values;
// `bookingEventTagsMatchAll` every value; `allowKids` false refuses a kid; session period types are
// those of the area's hours the target's time overlaps.
import type { PackageItemConstraints, SessionPeriod, ValidationError } from '@club/contract'
import { DateTime } from 'luxon'
import { instantOf } from '../billing/calendar.js'
import { BadRequestError, quote } from '../errors.js'
import { SESSION_PERIOD_TYPES, type SessionPeriodType } from './template-data.js'

/** What is being paid for, as the constraints see it. */
export interface ConstraintSubject {
  eventSubtype: string | null
  /** The event's (or series') own type, e.g. CLINIC: the reference's "custom type". */
  eventCustomType: string | null
  eventTags: string[]
  kid: boolean
  /** Every session period type the target's time overlaps; null when it has no time and place. */
  sessionPeriodTypes: SessionPeriodType[] | null
  areaSlugs: string[]
  podIds: string[]
}

function refused(constraint: keyof PackageItemConstraints, message: string, allowed: unknown, actual: unknown): ValidationError {
  return { code: 'CONSTRAINT_NOT_MATCHED', message: `${constraint}: ${message}`, details: { constraint, allowed, actual } }
}

const anyOf = (allowed: string[], actual: string[]) => actual.some((value) => allowed.includes(value))

/** Each constraint the subject does not meet; empty when the item may pay for it. */
export function unmatchedConstraints(c: PackageItemConstraints, s: ConstraintSubject): ValidationError[] {
  const errors: ValidationError[] = []
  if (c.bookingEventSubtype !== null && (s.eventSubtype === null || !c.bookingEventSubtype.includes(s.eventSubtype))) {
    errors.push(refused('bookingEventSubtype', `the subtype ${s.eventSubtype === null ? 'is none' : quote(s.eventSubtype)} is not one of ${c.bookingEventSubtype.join(', ')}`, c.bookingEventSubtype, s.eventSubtype))
  }
  if (c.bookingEventCustomType !== null && s.eventCustomType !== c.bookingEventCustomType) {
    errors.push(refused('bookingEventCustomType', `the type must be ${c.bookingEventCustomType}`, c.bookingEventCustomType, s.eventCustomType))
  }
  if (c.bookingEventCustomTypesMatchAny !== null && (s.eventCustomType === null || !c.bookingEventCustomTypesMatchAny.includes(s.eventCustomType))) {
    errors.push(refused('bookingEventCustomTypesMatchAny', `the type must be one of ${c.bookingEventCustomTypesMatchAny.join(', ')}`, c.bookingEventCustomTypesMatchAny, s.eventCustomType))
  }
  if (c.bookingEventTagsMatchAll !== null) {
    const missing = c.bookingEventTagsMatchAll.filter((tag) => !s.eventTags.includes(tag))
    if (missing.length > 0) errors.push(refused('bookingEventTagsMatchAll', `the tags ${missing.join(', ')} are missing`, c.bookingEventTagsMatchAll, s.eventTags))
  }
  if (c.bookingEventTagsMatchAny !== null && !anyOf(c.bookingEventTagsMatchAny, s.eventTags)) {
    errors.push(refused('bookingEventTagsMatchAny', `none of the tags ${c.bookingEventTagsMatchAny.join(', ')} is present`, c.bookingEventTagsMatchAny, s.eventTags))
  }
  if (c.allowKids === false && s.kid) errors.push(refused('allowKids', 'this item is not for kids', false, true))
  if (c.bookingSessionPeriodTypeMatchAny !== null) {
    const allowed = c.bookingSessionPeriodTypeMatchAny
    const actual = s.sessionPeriodTypes
    if (actual === null) {
      errors.push(refused('bookingSessionPeriodTypeMatchAny', 'the target has no time at a place to take a session period from', allowed, null))
    } else if (!actual.every((type) => allowed.includes(type))) {
      // A booking that runs into a peak hour is a peak booking, even if it starts off peak.
      errors.push(refused('bookingSessionPeriodTypeMatchAny', `the time falls in ${actual.join(' and ')}; allowed: ${allowed.join(', ')}`, allowed, actual))
    }
  }
  if (c.bookingAreaSlugMatchAny !== null && !anyOf(c.bookingAreaSlugMatchAny, s.areaSlugs)) {
    errors.push(refused('bookingAreaSlugMatchAny', `the area must be one of ${c.bookingAreaSlugMatchAny.join(', ')}`, c.bookingAreaSlugMatchAny, s.areaSlugs))
  }
  if (c.bookingPodIdsMatchAny !== null && !anyOf(c.bookingPodIdsMatchAny, s.podIds)) {
    errors.push(refused('bookingPodIdsMatchAny', `the pod must be one of ${c.bookingPodIdsMatchAny.join(', ')}`, c.bookingPodIdsMatchAny, s.podIds))
  }
  return errors
}

/**
 * An area's session periods as a request gives them (the contract has checked each field): a
 * period must end after it starts, and its weekdays are kept sorted and once each.
 */
export function parseSessionPeriods(periods: SessionPeriod[], path: string): SessionPeriod[] {
  return periods.map((period, i) => {
    if (period.end <= period.start) throw new BadRequestError(`${path}[${i}].end must be after ${path}[${i}].start (a period past midnight is two periods)`)
    return { ...period, days: [...new Set(period.days)].sort() }
  })
}

function localInstant(day: DateTime, clock: string, timezone: string): number {
  const [hour, minute] = clock.split(':').map(Number) as [number, number]
  const base = hour === 24 ? day.plus({ days: 1 }) : day
  return instantOf({ year: base.year, month: base.month, day: base.day, hour: hour % 24, minute, second: 0, millisecond: 0 }, timezone).getTime()
}

/**
 * The session period types the span [start, end) overlaps in an area whose periods are given in
 * `timezone`; OFF PEAK when some of it is covered by no period. Sorted as the reference lists them.
 */
export function sessionPeriodTypesOf(start: Date, end: Date, periods: SessionPeriod[], timezone: string): SessionPeriodType[] {
  const from = start.getTime()
  const to = end.getTime()
  const found = new Set<SessionPeriodType>()
  const covered: Array<[number, number]> = []
  // From the local day before the start (a span may begin inside yesterday's late period) to the end's.
  let day = DateTime.fromMillis(from, { zone: timezone }).startOf('day').minus({ days: 1 })
  const lastDay = DateTime.fromMillis(to, { zone: timezone }).startOf('day')
  for (; day <= lastDay; day = day.plus({ days: 1 })) {
    for (const period of periods) {
      if (!period.days.includes(day.weekday)) continue
      const periodStart = localInstant(day, period.start, timezone)
      const periodEnd = localInstant(day, period.end, timezone)
      if (periodStart < to && periodEnd > from) {
        found.add(period.type)
        covered.push([Math.max(periodStart, from), Math.min(periodEnd, to)])
      }
    }
  }
  covered.sort((a, b) => a[0] - b[0])
  let reached = from
  for (const [spanStart, spanEnd] of covered) {
    if (spanStart > reached) break
    reached = Math.max(reached, spanEnd)
  }
  if (reached < to) found.add('OFF PEAK')
  return SESSION_PERIOD_TYPES.filter((type) => found.has(type))
}
