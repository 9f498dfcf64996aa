// Money in integer minor units, rates in basis points, and rounding half up per line: the rules of
// BILLING.md ("Money"). The API speaks currency units; these convert only at its edge.

/** An amount in the currency's smallest unit (cents for EUR), always an integer. */
export type Minor = number
/** A rate in hundredths of a percent: 12.5% is 1250. */
export type BasisPoints = number

export class MoneyError extends Error {
  override name = 'MoneyError'
}

// Building an Intl.NumberFormat costs tens of microseconds, and every answer with money asks.
const exponents = new Map<string, number>()

/** Digits after the decimal point of an ISO 4217 currency (EUR 2, JPY 0, KWD 3), from Intl. */
export function currencyExponent(currency: string): number {
  const known = exponents.get(currency)
  if (known !== undefined) return known
  if (!/^[A-Z]{3}$/.test(currency)) throw new MoneyError(`${JSON.stringify(currency.slice(0, 10))} is not an ISO 4217 currency code`)
  const exponent = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2
  exponents.set(currency, exponent)
  return exponent
}

/**
 * Currency units as the API gives them (12.5) to minor units (1250 for EUR). An amount with more
 * decimals than the currency has is refused rather than rounded: the caller meant something else.
 */
export function toMinor(amount: number, exponent: number): Minor {
  if (!Number.isFinite(amount)) throw new MoneyError('an amount must be a finite number')
  const scaled = amount * 10 ** exponent
  const minor = Math.round(scaled)
  // Binary fractions make 0.1 * 100 = 10.000000000000002; anything further off has too many decimals.
  if (Math.abs(scaled - minor) > 1e-6) throw new MoneyError(`${amount} has more than ${exponent} decimal(s)`)
  if (!Number.isSafeInteger(minor)) throw new MoneyError(`${amount} is too large`)
  return minor
}

/** Minor units back to currency units, for answers. */
export function fromMinor(minor: Minor, exponent: number): number {
  return Number((minor / 10 ** exponent).toFixed(exponent))
}

/** Minor units back to currency units in `currency`, as a function for the many amounts of one answer. */
export function unitsOf(currency: string): (minor: Minor) => number {
  const exponent = currencyExponent(currency)
  return (minor) => fromMinor(minor, exponent)
}

/** A percentage as the API gives it (12.5) to basis points (1250); at most two decimals. */
export function toBasisPoints(percentage: number): BasisPoints {
  if (!Number.isFinite(percentage)) throw new MoneyError('a percentage must be a finite number')
  const bp = Math.round(percentage * 100)
  if (Math.abs(percentage * 100 - bp) > 1e-6) throw new MoneyError(`${percentage}% has more than two decimals`)
  return bp
}

export function toPercentage(bp: BasisPoints): number {
  return bp / 100
}

/**
 * numerator / denominator rounded half up (away from zero for negative amounts, so a refund
 * mirrors its charge), in BigInt so that no binary fraction or overflow decides a cent.
 */
export function divideRoundHalfUp(numerator: bigint, denominator: bigint): Minor {
  if (denominator <= 0n) throw new MoneyError('a rate denominator must be positive')
  const negative = numerator < 0n
  const n = negative ? -numerator : numerator
  const rounded = Number((2n * n + denominator) / (2n * denominator))
  return negative ? -rounded : rounded
}

/** amount x rate, rounded half up: one line of a fee or an exclusive tax. */
export function applyRate(amount: Minor, rate: BasisPoints): Minor {
  return divideRoundHalfUp(BigInt(amount) * BigInt(rate), 10_000n)
}

/** The tax already inside a gross amount at an inclusive rate: gross x r / (1 + r), rounded half up. */
export function includedTax(gross: Minor, rate: BasisPoints, allInclusiveRates: BasisPoints = rate): Minor {
  return divideRoundHalfUp(BigInt(gross) * BigInt(rate), 10_000n + BigInt(allInclusiveRates))
}
