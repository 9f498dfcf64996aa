// The deprecated product-offering list: one offering per product on sale in the asked categories,
// priced for one user by priceItem, the function a PREVIEW order of one unit uses.
import type { ProductOffering, ProductOfferingCollection, ProductOfferingQuery } from '@club/contract'
import { isStaff, type Actor } from '../actor.js'
import { unitsOf } from '../billing/money.js'
import { randomUUID } from 'node:crypto'
import type { DbOrTx } from '../db/database.js'
import { readThrough } from '../db/read-cache.js'
import { ForbiddenError, NotFoundError, quote } from '../errors.js'
import { pictureOf, productPath, productsOnSale, type CatalogueProduct } from './catalogue.js'
import type { ProductDiscount } from '../memberships/plans.js'
import { memberDiscounts, priceItem } from './pricing.js'
import type { SharedAnswer } from '../reply.js'

const PRODUCT_OFFERINGS_PATH = '/apis/v2/product-offerings'
/** Its successor (RFC 8288 `successor-version`). */
const PRODUCTS_ON_SALE_PATH = '/apis/v2/products'
/** When the list was deprecated: the day the catalogue and POST /orders replaced it. */
const PRODUCT_OFFERINGS_DEPRECATED = new Date('2026-11-23T00:00:00Z')

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

/** Whose offerings: a member sees their own; staff anyone's. */
async function offeringsUser(db: DbOrTx, query: ProductOfferingQuery, actor: Actor): Promise<string> {
  const userId = query.userId ?? actor.id
  if (userId !== actor.id) {
    if (!isStaff(actor)) throw new ForbiddenError("only staff may list another user's product offerings")
    if (!(await db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst())) throw new NotFoundError(`user ${quote(userId)} not found`)
  }
  return userId
}

/**
 * Stands for the user's id in a kept answer (a token no product text can hold by chance): every user
 * with the same discounts gets the same offerings but for their id.
 */
const USER_PLACEHOLDER = `user-${randomUUID()}`
const offeringsCache = { name: 'product-offerings', tables: ['products', 'product_categories', 'product_areas'], share: 0.01 }

/** A user's offerings: the list kept for every user with the same discounts, `placeholder` standing for the user's id. */
export type UserOfferings = SharedAnswer<ProductOfferingCollection>

/**
 * The list, built once per (categories, discounts) while the catalogue stays as it is, for a
 * placeholder user: a request only names its user (the HTTP layer keeps the list's text cut around
 * the placeholder, reply.ts). The discounts are read for each request (they follow the user's
 * memberships and the time).
 */
export async function listProductOfferings(db: DbOrTx, query: ProductOfferingQuery, actor: Actor, now: Date): Promise<UserOfferings> {
  const userId = await offeringsUser(db, query, actor)
  const discounts = await memberDiscounts(db, userId, now)
  // The categories in the order asked: the answer's self link repeats them so.
  const key = JSON.stringify([query.category ?? [], discounts])
  const shared = await readThrough(db, offeringsCache, key, async () =>
    offerings(await productsOnSale(db, { categories: query.category }), discounts, USER_PLACEHOLDER, query)
  )
  return { shared, placeholder: USER_PLACEHOLDER, value: userId }
}

function offerings(products: readonly CatalogueProduct[], discounts: ProductDiscount[], userId: string, query: ProductOfferingQuery): ProductOfferingCollection {
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
        picture: pictureOf(row),
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
