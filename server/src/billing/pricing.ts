// One charge's price from its lines, fees and taxes (BILLING.md, "Money"). A preview and the order
// it becomes both call priceCharge, so the same request can never show one total and charge another.
import { applyRate, includedTax, type BasisPoints, type Minor } from './money.js'

export type ChargeLineKind = 'base' | 'initiation_fee' | 'additional_member_fee' | 'custom_fee' | 'pause_fee' | 'product' | 'discount'

export interface ChargeLine {
  kind: ChargeLineKind
  description: string
  /** Negative only for a discount line of an order (never priced by priceCharge). */
  amount: Minor
  /** A purchase's lines name the product bought and how many. */
  product?: { id: string }
  quantity?: number
}

export interface FeeRate {
  name: string
  /** 0 to 100% */
  rate: BasisPoints
}

export interface TaxRate {
  name: string
  rate: BasisPoints
  /** Already inside the price (the total does not change) rather than added on top. */
  inclusive: boolean
}

export interface PricedFee extends FeeRate {
  amount: Minor
}

export interface PricedTax extends TaxRate {
  amount: Minor
}

export interface PricedCharge {
  lines: ChargeLine[]
  /** The sum of the lines. */
  subtotal: Minor
  fees: PricedFee[]
  /** Subtotal plus fees: what the customer pays for, and what taxes are due on. */
  taxable: Minor
  taxes: PricedTax[]
  /** Taxable plus the exclusive taxes; inclusive ones are already in it. */
  total: Minor
}

export class PricingError extends Error {
  override name = 'PricingError'
}

/**
 * The lines of one charge: the base price, the initiation fee on the first charge only, and for each
 * added member (`members`, none on the first charge) the additional member fee and their custom fee.
 */
export function chargeLines(
  plan: { chargeType: string; displayName: string },
  subscription: { priceMinor: number; initiationFeeMinor: number; additionalMemberFeeMinor: number },
  options: {
    /** The subscription's first charge, which carries the initiation fee. */
    first: boolean
    members?: Array<{ name: string; customFeeMinor: number }>
  }
): ChargeLine[] {
  const { first, members = [] } = options
  if (plan.chargeType === 'FREE') return []
  const lines: ChargeLine[] = [{ kind: 'base', description: plan.displayName, amount: subscription.priceMinor }]
  if (first && subscription.initiationFeeMinor > 0) {
    lines.push({ kind: 'initiation_fee', description: 'Initiation fee', amount: subscription.initiationFeeMinor })
  }
  for (const member of members) {
    if (subscription.additionalMemberFeeMinor > 0) {
      lines.push({ kind: 'additional_member_fee', description: `Additional member: ${member.name}`, amount: subscription.additionalMemberFeeMinor })
    }
    if (member.customFeeMinor > 0) lines.push({ kind: 'custom_fee', description: `Custom fee: ${member.name}`, amount: member.customFeeMinor })
  }
  return lines
}

/**
 * Subtotal = the lines; each fee = round(subtotal x rate); taxable = subtotal + fees. An inclusive
 * tax is the part of the taxable amount it already holds (with several inclusive rates, each is its
 * share of the net amount: taxable x r / (1 + sum of inclusive rates)); an exclusive tax is
 * round(net x rate), on the amount without inclusive taxes, so no tax is levied on another tax.
 * Rounded half up per line, then summed (Stripe's rule).
 */
export function priceCharge(lines: ChargeLine[], fees: FeeRate[], taxes: TaxRate[]): PricedCharge {
  for (const line of lines) {
    if (!Number.isSafeInteger(line.amount) || line.amount < 0) throw new PricingError(`line "${line.description}" must be a whole, non-negative number of minor units`)
  }
  for (const fee of fees) {
    if (!Number.isInteger(fee.rate) || fee.rate < 0 || fee.rate > 10_000) throw new PricingError(`fee "${fee.name}" must be between 0 and 100%`)
  }
  for (const tax of taxes) {
    if (!Number.isInteger(tax.rate) || tax.rate < 0 || tax.rate > 10_000) throw new PricingError(`tax "${tax.name}" must be between 0 and 100%`)
  }
  const subtotal = lines.reduce((sum, line) => sum + line.amount, 0)
  const pricedFees = fees.map((fee) => ({ ...fee, amount: applyRate(subtotal, fee.rate) }))
  const taxable = subtotal + pricedFees.reduce((sum, fee) => sum + fee.amount, 0)
  const inclusiveRates = taxes.filter((t) => t.inclusive).reduce((sum, t) => sum + t.rate, 0)
  const inclusive = taxes.map((tax) => (tax.inclusive ? includedTax(taxable, tax.rate, inclusiveRates) : 0))
  const net = taxable - inclusive.reduce((sum, amount) => sum + amount, 0)
  const pricedTaxes = taxes.map((tax, i) => ({ ...tax, amount: tax.inclusive ? inclusive[i]! : applyRate(net, tax.rate) }))
  const total = taxable + pricedTaxes.filter((t) => !t.inclusive).reduce((sum, tax) => sum + tax.amount, 0)
  return { lines, subtotal, fees: pricedFees, taxable, taxes: pricedTaxes, total }
}
