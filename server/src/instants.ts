// An instant as a request gives it. The date-time format admits leap seconds (23:59:60), which a
// JavaScript Date cannot hold: such a value is a 400 naming the field, never an Invalid Date.
import { BadRequestError } from './errors.js'

/** Milliseconds in a UTC day (a day in the club's zone can be 23 or 25 hours: count those with luxon). */
export const DAY_MS = 86_400_000

export function requestInstant(value: string, field: string): Date {
  const ms = Date.parse(value)
  if (!Number.isFinite(ms)) throw new BadRequestError(`${field} is not a representable instant (leap seconds are not)`)
  return new Date(ms)
}
