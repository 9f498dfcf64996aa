// One product line's price for one buyer: price x quantity, less the best discount of the buyer's
// memberships for the product's categories, then the product's tax (BILLING.md, "Money"). A PREVIEW,
// an ORDER and the deprecated offering list all call priceItem, so they cannot disagree.
import { applyRate, toPercentage, type Minor } from '../billing/money.js'
import { priceCharge, PricingError, type PricedCharge } from '../billing/pricing.js'
import { compiledOnce, runCompiled } from '../db/compiled.js'
import type { DbOrTx } from '../db/database.js'
import { readThrough } from '../db/read-cache.js'
import { BadRequestError } from '../errors.js'
import { parseProductDiscounts, type ProductDiscount } from '../memberships/plans.js'
import { productTaxes, type CatalogueProduct } from './catalogue.js'

// Every enrollment of the user with its subscription's state and its plan's discounts, whatever the
// time: which are in force now, and when that next changes, are worked out from them.
const enrollmentsQuery = compiledOnce((db) =>
  db
    .selectFrom('membership_enrollments as e')
    .innerJoin('membership_subscriptions as s', 's.id', 'e.subscription_id')
    .innerJoin('memberships as m', 'm.id', 's.membership_id')
    .select(['e.start_date', 'e.end_date', 's.end_date as subscription_end', 's.status', 's.condition', 'm.product_discounts'])
    .where('e.user_id', '=', '')
    .where('m.product_discounts', '!=', '[]')
)

const discountsCache = { name: 'member-discounts', tables: ['membership_enrollments', 'membership_subscriptions', 'memberships'] }

interface KeptDiscounts {
  at: string
  discounts: ProductDiscount[]
  /** The next start or end among the user's enrollments: the discounts may change then without a write. */
  changesAt: string | null
}

/**
 * The product discounts of the memberships the user holds now: owned or enrolled in (an enrollment
 * active now, in a subscription in force), except in HOLD, where a membership's perks are suspended.
 * Kept in the read cache until a membership table changes or one of the user's dates passes.
 */
export async function memberDiscounts(db: DbOrTx, userId: string, now: Date): Promise<ProductDiscount[]> {
  const at = now.toISOString()
  const load = async (): Promise<KeptDiscounts> => {
    const rows = await runCompiled(db, enrollmentsQuery, [userId, '[]'])
    const discounts: ProductDiscount[] = []
    let changesAt: string | null = null
    for (const r of rows) {
      for (const date of [r.start_date, r.end_date, r.subscription_end]) if (date !== null && date > at && (changesAt === null || date < changesAt)) changesAt = date
      const inForce = r.start_date <= at && (r.end_date === null || r.end_date > at) && r.status === 'CONFIRMED' && (r.subscription_end === null || r.subscription_end > at) && r.condition !== 'HOLD'
      if (inForce) discounts.push(...parseProductDiscounts(r.product_discounts))
    }
    return { at, discounts, changesAt }
  }
  // A kept answer holds from when it was read until the next date it depends on (a clock may go back in tests).
  const fresh = (kept: KeptDiscounts) => kept.at <= at && (kept.changesAt === null || at < kept.changesAt)
  return (await readThrough(db, discountsCache, userId, load, fresh)).discounts
}

/** The largest discount naming one of the categories; the first listed wins a tie. */
function bestDiscount(discounts: ProductDiscount[], categories: string[]): ProductDiscount | null {
  let best: ProductDiscount | null = null
  for (const discount of discounts) {
    if (!discount.categories.some((c) => categories.includes(c))) continue
    if (best === null || discount.rate > best.rate) best = discount
  }
  return best
}

export interface PricedItem {
  product: CatalogueProduct
  quantity: number
  /** price x quantity */
  amount: Minor
  discount: { amount: Minor; description: string }
  /** The line after the discount, priced with the product's tax: its subtotal, taxes and total. */
  charge: PricedCharge
  /** The taxes' amounts together (an inclusive one is inside the subtotal). */
  taxAmount: Minor
  taxDescription: string
}

export function priceItem(product: CatalogueProduct, quantity: number, discounts: ProductDiscount[]): PricedItem {
  const { row } = product
  const amount = row.price_minor * quantity
  if (!Number.isSafeInteger(amount)) throw new BadRequestError(`the amount of ${quantity} x ${row.sku} is too large`)
  const best = bestDiscount(discounts, product.categories)
  const discount = best === null ? 0 : applyRate(amount, best.rate)
  const taxes = productTaxes(row)
  let charge: PricedCharge
  try {
    charge = priceCharge([{ kind: 'product', description: row.name, amount: amount - discount }], [], taxes)
  } catch (err) {
    if (err instanceof PricingError) throw new BadRequestError(err.message)
    throw err
  }
  return {
    product,
    quantity,
    amount,
    discount: { amount: discount, description: best === null ? '' : best.description },
    charge,
    taxAmount: charge.taxes.reduce((sum, t) => sum + t.amount, 0),
    taxDescription: taxes.map((t) => `${t.name} ${toPercentage(t.rate)}%${t.inclusive ? ' included' : ''}`).join(', ')
  }
}
