import t from 'tap'
import { applyRate, currencyExponent, divideRoundHalfUp, fromMinor, includedTax, toBasisPoints, toMinor } from './money.js'

t.test('each currency has its own minor unit', async (t) => {
  t.equal(currencyExponent('EUR'), 2)
  t.equal(currencyExponent('JPY'), 0)
  t.equal(currencyExponent('KWD'), 3)
  t.throws(() => currencyExponent('euro'), /not an ISO 4217 currency code/)
})

t.test('currency units to minor units and back, refusing what a currency cannot hold', async (t) => {
  t.equal(toMinor(12.5, 2), 1250)
  t.equal(toMinor(0.1, 2), 10, '0.1 is not 10.000000000000002 cents')
  t.equal(toMinor(19.99, 2), 1999)
  t.equal(toMinor(1000, 0), 1000)
  t.throws(() => toMinor(12.345, 2), /more than 2 decimal/)
  t.throws(() => toMinor(1.5, 0), /more than 0 decimal/)
  t.throws(() => toMinor(Number.NaN, 2), /finite/)
  t.throws(() => toMinor(1e20, 2), /too large/)
  t.equal(fromMinor(1250, 2), 12.5)
  t.equal(fromMinor(1999, 2), 19.99)
  t.equal(fromMinor(-1589, 2), -15.89)
})

t.test('percentages to basis points', async (t) => {
  t.equal(toBasisPoints(12.5), 1250)
  t.equal(toBasisPoints(21), 2100)
  t.equal(toBasisPoints(0.07), 7)
  t.throws(() => toBasisPoints(12.345), /more than two decimals/)
})

t.test('rounding is half up, per line, and a refund mirrors its charge', async (t) => {
  t.equal(applyRate(1250, 500), 63, '0.625 rounds up to 0.63')
  t.equal(applyRate(1313, 2100), 276, '2.7573 rounds to 2.76')
  t.equal(applyRate(1, 5000), 1, 'half a cent rounds up')
  t.equal(applyRate(1, 4999), 0)
  t.equal(applyRate(-1250, 500), -63)
  t.equal(divideRoundHalfUp(5n, 2n), 3)
  t.equal(divideRoundHalfUp(-5n, 2n), -3)
  t.equal(applyRate(900_000_000_000_000, 9_999), 899_910_000_000_000, 'no overflow where amount x rate passes 2^53')
})

t.test('an inclusive tax is the part of the gross it already holds', async (t) => {
  t.equal(includedTax(12100, 2100), 2100, '121.00 with 21% inside holds 21.00')
  t.equal(includedTax(1000, 2100), 174, '10.00 holds 1.7355 -> 1.74')
})
