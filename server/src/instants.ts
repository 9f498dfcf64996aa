// An instant as a request gives it. The date-time format admits leap seconds (23:59:60), which a
// JavaScript Date cannot hold: such a value is a 400 naming the field, never an Invalid Date.
import { BadRequestError } from './errors.js'

export function requestInstant(value: string, field: string): Date {
  const ms = Date.parse(value)
  if (!Number.isFinite(ms)) throw new BadRequestError(`${field} is not a representable instant (leap seconds are not)`)
  return new Date(ms)
}
