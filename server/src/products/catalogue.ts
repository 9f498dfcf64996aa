// The product catalogue: what a club sells besides memberships' own sign-up (packages, memberships,
// merchandise, services). Prices in minor units, tax rates in basis points; shown in currency units.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Product, ProductCreate, ProductListQuery, ProductPatch, ProductsOnSaleQuery } from '@club/contract'
import { currencyExponent, toPercentage, unitsOf } from '../billing/money.js'
import { requestBasisPoints, requestMinor } from '../billing/request-money.js'
import type { TaxRate } from '../billing/pricing.js'
import type { Clock } from '../clock.js'
import { isUniqueViolation, type DbOrTx } from '../db/database.js'
import { readThrough } from '../db/read-cache.js'
import { jsonArrayElements } from '../db/sql.js'
import type { ProductsTable } from '../db/schema.js'
import { BadRequestError, ConflictError, NotFoundError, quote } from '../errors.js'
import { pageRequest, paged } from '../paging.js'

export interface CatalogueDeps {
  clock: Clock
  /** The club's currency (CURRENCY): a new product's price is in it. */
  currency: string
}

/** A product as pricing and fulfilment read it. */
export interface CatalogueProduct {
  row: ProductsTable
  categories: string[]
  areaIds: string[]
}

export const productPath = (id: string) => `/apis/v2/admin/products/${id}`

/** The product's tax as billing/pricing.ts takes it; none when it has no rate. */
export function productTaxes(row: ProductsTable): TaxRate[] {
  return row.tax_name === null ? [] : [{ name: row.tax_name, rate: row.tax_basis_points, inclusive: row.tax_inclusive === 1 }]
}

/** The product's pictures as the API links them (an unset one is an empty href). */
export function pictureOf(row: ProductsTable) {
  return { small: { href: row.picture_small ?? '' }, medium: { href: row.picture_medium ?? '' }, large: { href: row.picture_large ?? '' } }
}

export function toProduct(product: CatalogueProduct): Product {
  const { row } = product
  const units = unitsOf(row.currency)
  return {
    id: row.id,
    sku: row.sku,
    name: row.name,
    description: row.description,
    type: row.type,
    categories: product.categories,
    price: units(row.price_minor),
    currency: row.currency,
    picture: pictureOf(row),
    areas: {
      items: product.areaIds.map((id) => ({ id })),
      _total: product.areaIds.length,
      _links: { self: { href: `${productPath(row.id)}#areas` } }
    },
    tax: row.tax_name === null ? null : { name: row.tax_name, percentage: toPercentage(row.tax_basis_points), inclusive: row.tax_inclusive === 1 },
    packageTemplate: row.package_template_id === null ? null : { id: row.package_template_id },
    membership: row.membership_id === null ? null : { id: row.membership_id },
    status: row.status,
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: productPath(row.id) } }
  }
}

/** Categories and areas of some products, by product id. */
async function withParts(db: DbOrTx, rows: ProductsTable[]): Promise<CatalogueProduct[]> {
  if (rows.length === 0) return []
  const ids = rows.map((r) => r.id)
  const [categories, areas] = await Promise.all([
    db.selectFrom('product_categories').select(['product_id', 'category']).where('product_id', 'in', ids).orderBy('category').execute(),
    db.selectFrom('product_areas').select(['product_id', 'area_id']).where('product_id', 'in', ids).orderBy('area_id').execute()
  ])
  return rows.map((row) => ({
    row,
    categories: categories.filter((c) => c.product_id === row.id).map((c) => c.category),
    areaIds: areas.filter((a) => a.product_id === row.id).map((a) => a.area_id)
  }))
}

export async function catalogueProduct(db: DbOrTx, id: string): Promise<CatalogueProduct> {
  const row = await db.selectFrom('products').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw new NotFoundError(`product ${quote(id)} not found`)
  return (await withParts(db, [row]))[0]!
}

export async function getProduct(db: DbOrTx, id: string): Promise<Product> {
  return toProduct(await catalogueProduct(db, id))
}

/** An absolute http(s) URL with a host; anything else is a 400 naming the field. */
function pictureUrl(href: string, field: string): string {
  let url: URL
  try {
    url = new URL(href)
  } catch {
    throw new BadRequestError(`${field}: ${quote(href)} is not an absolute URL`)
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    throw new BadRequestError(`${field}: ${quote(href)} must be an absolute http(s) URL`)
  }
  return href
}

type ProductInput = Omit<ProductCreate, 'sku'>

/** The columns a create or a patch (merged over the product) asks for, checked as a whole. */
async function productColumns(db: DbOrTx, input: ProductInput, currency: string) {
  const templateId = input.packageTemplate?.id ?? null
  const membershipId = input.membership?.id ?? null
  if (input.type === 'PACKAGE') {
    if (templateId === null) throw new BadRequestError('packageTemplate is required for a PACKAGE product')
    const template = await db.selectFrom('templates').select(['type']).where('id', '=', templateId).executeTakeFirst()
    if (!template) throw new BadRequestError(`packageTemplate.id: no template ${quote(templateId)}`)
    if (template.type !== 'PACKAGE') throw new BadRequestError(`packageTemplate.id: template ${quote(templateId)} is a ${template.type} template, not a PACKAGE template`)
  } else if (templateId !== null) {
    throw new BadRequestError(`packageTemplate applies only to PACKAGE products, not ${input.type}`)
  }
  if (input.type === 'MEMBERSHIP') {
    if (membershipId === null) throw new BadRequestError('membership is required for a MEMBERSHIP product')
    if (!(await db.selectFrom('memberships').select('id').where('id', '=', membershipId).executeTakeFirst())) {
      throw new BadRequestError(`membership.id: no membership ${quote(membershipId)}`)
    }
  } else if (membershipId !== null) {
    throw new BadRequestError(`membership applies only to MEMBERSHIP products, not ${input.type}`)
  }
  const areaIds = [...new Set((input.areas?.items ?? []).map((a) => a.id))]
  if (areaIds.length > 0) {
    const known = new Set((await db.selectFrom('areas').select('id').where('id', 'in', areaIds).execute()).map((a) => a.id))
    const missing = areaIds.findIndex((id) => !known.has(id))
    if (missing >= 0) throw new BadRequestError(`areas/items/${missing}/id: no area ${quote(areaIds[missing])}`)
  }
  const tax = input.tax ?? null
  return {
    columns: {
      name: input.name,
      description: input.description ?? '',
      type: input.type,
      currency,
      price_minor: requestMinor(input.price, 'price', currencyExponent(currency)),
      tax_name: tax === null ? null : tax.name,
      tax_basis_points: tax === null ? 0 : requestBasisPoints(tax.percentage, 'tax.percentage'),
      tax_inclusive: tax?.inclusive ? 1 : 0,
      picture_small: pictureUrl(input.picture.small.href, 'picture.small.href'),
      picture_medium: pictureUrl(input.picture.medium.href, 'picture.medium.href'),
      picture_large: pictureUrl(input.picture.large.href, 'picture.large.href'),
      package_template_id: templateId,
      membership_id: membershipId
    },
    categories: input.categories,
    areaIds
  }
}

async function writeParts(tx: DbOrTx, id: string, categories: string[], areaIds: string[]): Promise<void> {
  await tx.deleteFrom('product_categories').where('product_id', '=', id).execute()
  await tx.deleteFrom('product_areas').where('product_id', '=', id).execute()
  await tx.insertInto('product_categories').values(categories.map((category) => ({ product_id: id, category }))).execute()
  if (areaIds.length > 0) await tx.insertInto('product_areas').values(areaIds.map((area_id) => ({ product_id: id, area_id }))).execute()
}

export async function createProduct(db: DbOrTx, input: ProductCreate, deps: CatalogueDeps): Promise<Product> {
  const now = deps.clock.now().toISOString()
  return db.transaction().execute(async (tx) => {
    const { columns, categories, areaIds } = await productColumns(tx, input, deps.currency)
    const row: ProductsTable = { id: randomUUID(), sku: input.sku, ...columns, status: 'ON_SALE', created_at: now, updated_at: now }
    try {
      await tx.insertInto('products').values(row).execute()
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConflictError(`a product with sku ${quote(input.sku)} already exists`)
      throw err
    }
    await writeParts(tx, row.id, categories, areaIds)
    return toProduct({ row, categories: [...categories].sort(), areaIds: [...areaIds].sort() })
  })
}

export async function patchProduct(db: DbOrTx, id: string, patch: ProductPatch, deps: CatalogueDeps): Promise<Product> {
  return db.transaction().execute(async (tx) => {
    const current = await catalogueProduct(tx, id)
    if (current.row.status === 'WITHDRAWN') throw new ConflictError(`product ${quote(id)} was withdrawn; add a new one instead`)
    const shown = toProduct(current)
    const merged: ProductInput = {
      name: patch.name ?? shown.name,
      description: patch.description ?? shown.description,
      type: shown.type,
      categories: patch.categories ?? shown.categories,
      price: patch.price ?? shown.price,
      picture: patch.picture ?? shown.picture,
      areas: patch.areas ?? { items: shown.areas.items },
      tax: patch.tax !== undefined ? patch.tax : shown.tax,
      packageTemplate: patch.packageTemplate ?? shown.packageTemplate,
      membership: patch.membership ?? shown.membership
    }
    const { columns, categories, areaIds } = await productColumns(tx, merged, current.row.currency)
    const row: ProductsTable = { ...current.row, ...columns, currency: current.row.currency, updated_at: deps.clock.now().toISOString() }
    await tx.updateTable('products').set(row).where('id', '=', id).execute()
    await writeParts(tx, id, categories, areaIds)
    return toProduct({ row, categories: [...categories].sort(), areaIds: [...areaIds].sort() })
  })
}

/** Whether any order names the product (its lines carry the product's id). */
async function isOrdered(db: DbOrTx, id: string): Promise<boolean> {
  const found = await db
    .selectFrom('orders')
    .select('orders.id')
    .where('orders.kind', '=', 'PURCHASE')
    .where(sql<boolean>`exists (select 1 from ${jsonArrayElements(db, sql.ref('orders.lines'), 'line')} where line.value -> 'product' ->> 'id' = ${id})`)
    .limit(1)
    .executeTakeFirst()
  return found !== undefined
}

/** Deleted when never ordered (undefined); otherwise withdrawn, and the withdrawn product answered. */
export async function deleteProduct(db: DbOrTx, id: string, deps: CatalogueDeps): Promise<Product | undefined> {
  return db.transaction().execute(async (tx) => {
    const current = await catalogueProduct(tx, id)
    if (!(await isOrdered(tx, id))) {
      await tx.deleteFrom('products').where('id', '=', id).execute()
      return undefined
    }
    const row: ProductsTable = { ...current.row, status: 'WITHDRAWN', updated_at: deps.clock.now().toISOString() }
    await tx.updateTable('products').set({ status: row.status, updated_at: row.updated_at }).where('id', '=', id).execute()
    return toProduct({ ...current, row })
  })
}

const onSaleCache = { name: 'products-on-sale', tables: ['products', 'product_categories', 'product_areas'], share: 0.01 }

/**
 * Products on sale in any of `categories` (all when none): what the offering list and the shop show.
 * Kept in the read cache until the catalogue changes (the answer is shared: callers must not change it).
 */
export async function productsOnSale(db: DbOrTx, filter: { categories?: string[]; areaId?: string; type?: ProductsTable['type'] }): Promise<readonly CatalogueProduct[]> {
  const key = JSON.stringify([[...(filter.categories ?? [])].sort(), filter.areaId ?? null, filter.type ?? null])
  return readThrough(db, onSaleCache, key, async () => (await productPage(db, { ...filter, status: 'ON_SALE' }, null)).products)
}

async function productPage(
  db: DbOrTx,
  filter: { categories?: string[]; areaId?: string; type?: ProductsTable['type']; status?: ProductsTable['status'] },
  page: { ipp: number; offset: number } | null
) {
  let base = db.selectFrom('products')
  if (filter.status) base = base.where('status', '=', filter.status)
  if (filter.type) base = base.where('type', '=', filter.type)
  const categories = filter.categories ?? []
  if (categories.length > 0) {
    base = base.where((eb) =>
      eb.exists(eb.selectFrom('product_categories as c').select('c.product_id').whereRef('c.product_id', '=', 'products.id').where('c.category', 'in', categories))
    )
  }
  const areaId = filter.areaId
  if (areaId !== undefined) {
    // A product with no areas is sold everywhere.
    base = base.where((eb) =>
      eb.or([
        eb.not(eb.exists(eb.selectFrom('product_areas as a').select('a.product_id').whereRef('a.product_id', '=', 'products.id'))),
        eb.exists(eb.selectFrom('product_areas as a').select('a.product_id').whereRef('a.product_id', '=', 'products.id').where('a.area_id', '=', areaId))
      ])
    )
  }
  let rows = base.selectAll().orderBy('name').orderBy('id')
  if (page) rows = rows.limit(page.ipp).offset(page.offset)
  const [found, count] = await Promise.all([
    rows.execute(),
    page ? base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow() : Promise.resolve(null)
  ])
  return { products: await withParts(db, found), total: count === null ? found.length : Number(count.n) }
}

/** The catalogue for staff (withdrawn too unless filtered), or with `onSale` what a member may buy. By name. */
export async function listProducts(db: DbOrTx, query: ProductListQuery | ProductsOnSaleQuery, onSale: boolean, path: string) {
  const request = pageRequest(query)
  const status = onSale ? 'ON_SALE' : (query as ProductListQuery).status
  const { products, total } = await productPage(db, { categories: query.category, areaId: query.area, type: query.type, status }, request)
  return paged(products.map(toProduct), total, request, path, query)
}
