// Money as a request gives it (currency units, percentages) into minor units and basis points: a
// value the currency cannot hold, or a percentage with more than two decimals, is a 400 naming its field.
import { BadRequestError } from '../errors.js'
import { MoneyError, toBasisPoints, toMinor, type BasisPoints, type Minor } from './money.js'

function asBadRequest<T>(field: string, convert: () => T): T {
  try {
    return convert()
  } catch (err) {
    if (err instanceof MoneyError) throw new BadRequestError(`${field}: ${err.message}`)
    throw err
  }
}

/** An amount of the API in minor units of a currency with `exponent` decimals. */
export const requestMinor = (value: number, field: string, exponent: number): Minor => asBadRequest(field, () => toMinor(value, exponent))

/** A percentage of the API in basis points. */
export const requestBasisPoints = (value: number, field: string): BasisPoints => asBadRequest(field, () => toBasisPoints(value))
