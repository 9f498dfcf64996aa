// The deprecated product-offering list: one offering per product on sale in the asked categories,
// priced for one user by priceItem, the function a PREVIEW order of one unit uses.
import type { ProductOffering, ProductOfferingCollection, ProductOfferingQuery } from '@club/contract'
import { isStaff, type Actor } from '../actor.js'
import type { DbOrTx } from '../db/database.js'
import { ForbiddenError, NotFoundError, quote } from '../errors.js'
import { productPath, productsOnSale } from './catalogue.js'
import { memberDiscounts, priceItem, unitsOf } from './pricing.js'

export const PRODUCT_OFFERINGS_PATH = '/apis/v2/product-offerings'
/** Its successor (RFC 8288 `successor-version`). */
export const PRODUCTS_ON_SALE_PATH = '/apis/v2/products'
/** When the list was deprecated: the day the catalogue and POST /orders replaced it. */
export const PRODUCT_OFFERINGS_DEPRECATED = new Date('2026-11-23T00:00:00Z')

/**
 * The headers every answer of the list carries: Deprecation as an RFC 9745 structured-field date
 * (`@` and Unix seconds), Sunset as an RFC 8594 HTTP-date, and a Link to what replaces it.
 */
export function deprecationHeaders(sunset: string): Record<string, string> {
  return {
    deprecation: `@${Math.floor(PRODUCT_OFFERINGS_DEPRECATED.getTime() / 1000)}`,
    sunset: new Date(sunset).toUTCString(),
    link: `<${PRODUCTS_ON_SALE_PATH}>; rel="successor-version"`
  }
}

/** A member sees their own offerings; staff anyone's. */
export async function listProductOfferings(db: DbOrTx, query: ProductOfferingQuery, actor: Actor, now: Date): Promise<ProductOfferingCollection> {
  const userId = query.userId ?? actor.id
  if (userId !== actor.id) {
    if (!isStaff(actor)) throw new ForbiddenError("only staff may list another user's product offerings")
    if (!(await db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst())) throw new NotFoundError(`user ${quote(userId)} not found`)
  }
  const [products, discounts] = await Promise.all([productsOnSale(db, { categories: query.category }), memberDiscounts(db, userId, now)])
  const self = new URLSearchParams({ userId })
  for (const category of query.category ?? []) self.append('category', category)
  const items = products.map((product): ProductOffering => {
    const { row } = product
    const units = unitsOf(row.currency)
    const priced = priceItem(product, 1, discounts)
    const areas = { items: product.areaIds, _total: product.areaIds.length, _links: { self: { href: productPath(row.id) } } }
    return {
      id: row.id,
      product: {
        id: row.id,
        sku: row.sku,
        name: row.name,
        description: row.description,
        type: row.type,
        picture: { small: { href: row.picture_small ?? '' }, medium: { href: row.picture_medium ?? '' }, large: { href: row.picture_large ?? '' } },
        price: units(row.price_minor),
        areas,
        _links: { self: { href: productPath(row.id) } }
      },
      areas,
      discount: { amount: units(priced.discount.amount), description: priced.discount.description },
      tax: { amount: units(priced.taxAmount), description: priced.taxDescription },
      subtotal: units(priced.charge.subtotal),
      total: units(priced.charge.total),
      user: { id: userId },
      _links: { self: { href: `${PRODUCT_OFFERINGS_PATH}?${self}` }, order: { href: '/apis/v2/orders' } }
    }
  })
  return { items, _total: items.length, _links: { self: { href: `${PRODUCT_OFFERINGS_PATH}?${self}` } } }
}
