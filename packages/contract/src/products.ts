// The product catalogue (admin), what is on sale (members) and buying products (POST /orders).
import Type, { type Static, type TBoolean, type TSchemaOptions } from 'typebox'
import {
  Category,
  DateTime,
  DescribedAmount,
  ErrorBody,
  IdParams,
  ItemRef,
  ItemRefCollection,
  ItemRefCollectionInput,
  Link,
  Links,
  Nullable,
  PageQuery,
  PagedCollection,
  ValidationError,
  apiKeyOrBearerSecurity,
  bearerSecurity,
  defineRoutes
} from './common.js'
import { MembershipTaxRate } from './membership-plans.js'
import { SubscriptionMode } from './memberships.js'
import { OrderStatus } from './orders.js'

export const ProductType = Type.Enum(['PACKAGE', 'MEMBERSHIP', 'MERCHANDISE', 'SERVICE'])
export type ProductType = Static<typeof ProductType>
export const ProductStatus = Type.Enum(['ON_SALE', 'WITHDRAWN'])
export type ProductStatus = Static<typeof ProductStatus>

const Categories = Type.Array(Category, { minItems: 1, maxItems: 20, uniqueItems: true })
/** No control characters: a name is shown to members and printed on receipts. */
const ProductName = Type.String({ minLength: 1, maxLength: 200, pattern: '^[^\\u0000-\\u001f\\u007f]+$' })
const PictureLink = Type.Object(
  { href: Type.String({ minLength: 8, maxLength: 2000, pattern: '^https?://', description: 'An absolute http(s) URL' }) },
  { additionalProperties: false }
)
const Picture = Type.Object({ small: PictureLink, medium: PictureLink, large: PictureLink }, { additionalProperties: false })

/**
 * A product's tax is a plan's tax rate: the same name, percentage and inclusive flag. The plan's flag
 * carries `default: false`; a product's answer always states it and a request's default is not filled
 * in (inside a nullable), so here the default is said in words only.
 */
const { name: taxName, percentage: taxPercentage, inclusive: taxInclusive } = MembershipTaxRate.properties
const TaxPercentage = Type.Number({ ...taxPercentage, description: 'At most two decimals' })
const inclusiveDescription = (taxInclusive as TBoolean & TSchemaOptions).description
export const ProductTax = Type.Object({ name: taxName, percentage: TaxPercentage, inclusive: Type.Boolean({ description: inclusiveDescription }) })
export type ProductTax = Static<typeof ProductTax>
/** As a request gives it: `inclusive` may be left out (false). */
const ProductTaxInput = Type.Object(
  { name: taxName, percentage: TaxPercentage, inclusive: Type.Optional(Type.Boolean({ description: `${inclusiveDescription}; default false` })) },
  { additionalProperties: false }
)

export const Product = Type.Object({
  id: Type.String(),
  sku: Type.String(),
  name: Type.String(),
  description: Type.String(),
  type: ProductType,
  categories: Type.Array(Type.String()),
  price: Type.Number({ description: 'One unit, in currency units, before any member discount' }),
  currency: Type.String({ description: 'ISO 4217' }),
  picture: Type.Object({ small: Link, medium: Link, large: Link }),
  areas: ItemRefCollection,
  tax: Nullable(ProductTax),
  packageTemplate: Nullable(ItemRef),
  membership: Nullable(ItemRef),
  status: ProductStatus,
  createdDate: DateTime(),
  updatedDate: DateTime(),
  _links: Links
})
export type Product = Static<typeof Product>

const Price = Type.Number({ minimum: 0, maximum: 1_000_000, description: 'One unit, in currency units, at most the currency\'s decimals' })
const ProductFields = {
  name: ProductName,
  description: Type.Optional(Type.String({ maxLength: 5000 })),
  categories: Categories,
  price: Price,
  picture: Picture,
  areas: Type.Optional(ItemRefCollectionInput),
  tax: Type.Optional(Nullable(ProductTaxInput)),
  packageTemplate: Type.Optional(Nullable(ItemRef)),
  membership: Type.Optional(Nullable(ItemRef))
}

export const ProductCreate = Type.Object(
  {
    ...ProductFields,
    sku: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$', description: 'Unique; a second product with it is a 409' }),
    type: ProductType
  },
  { additionalProperties: false }
)
export type ProductCreate = Static<typeof ProductCreate>

export const ProductPatch = Type.Object(
  {
    name: Type.Optional(ProductName),
    description: Type.Optional(Type.String({ maxLength: 5000 })),
    categories: Type.Optional(Categories),
    price: Type.Optional(Price),
    picture: Type.Optional(Picture),
    areas: Type.Optional(ItemRefCollectionInput),
    tax: Type.Optional(Nullable(ProductTaxInput)),
    packageTemplate: Type.Optional(ItemRef),
    membership: Type.Optional(ItemRef)
  },
  { additionalProperties: false }
)
export type ProductPatch = Static<typeof ProductPatch>

const CategoryFilter = Type.Optional(Type.Array(Category, { maxItems: 20, description: 'Any of these categories' }))
const AreaFilter = Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Sold in this area (or everywhere)' }))

export const ProductListQuery = Type.Object(
  { ...PageQuery, category: CategoryFilter, area: AreaFilter, type: Type.Optional(ProductType), status: Type.Optional(ProductStatus) },
  { additionalProperties: false }
)
export type ProductListQuery = Static<typeof ProductListQuery>

export const ProductsOnSaleQuery = Type.Object(
  { ...PageQuery, category: CategoryFilter, area: AreaFilter, type: Type.Optional(ProductType) },
  { additionalProperties: false }
)
export type ProductsOnSaleQuery = Static<typeof ProductsOnSaleQuery>

const admin = { tags: ['products'], security: bearerSecurity }
const guarded = { 401: ErrorBody, 403: ErrorBody }

export const productRoutes = defineRoutes({
  create: {
    method: 'POST',
    url: '/apis/v2/admin/products',
    schema: {
      ...admin,
      operationId: 'createProduct',
      summary: 'Add a product to the catalogue',
      description:
        "Admins only. The price is in the club's currency (CURRENCY). A PACKAGE product names the PACKAGE template its " +
        'packages are issued from; a MEMBERSHIP product the plan whose first period it pays. A sku already used is a 409.',
      body: ProductCreate,
      response: { 201: Product, 400: ErrorBody, ...guarded, 409: ErrorBody }
    }
  },
  list: {
    method: 'GET',
    url: '/apis/v2/admin/products',
    schema: {
      ...admin,
      operationId: 'listProducts',
      summary: 'The catalogue',
      description: 'Staff and admins: withdrawn products too, unless filtered by status. By name.',
      querystring: ProductListQuery,
      response: { 200: PagedCollection(Product), 400: ErrorBody, ...guarded }
    }
  },
  get: {
    method: 'GET',
    url: '/apis/v2/admin/products/:id',
    schema: { ...admin, operationId: 'getProduct', summary: 'A product', description: 'Staff and admins.', params: IdParams, response: { 200: Product, ...guarded, 404: ErrorBody } }
  },
  patch: {
    method: 'PATCH',
    url: '/apis/v2/admin/products/:id',
    schema: {
      ...admin,
      operationId: 'updateProduct',
      summary: 'Change a product',
      description: 'Admins only. A new price applies to later orders; orders already made keep theirs. A withdrawn product cannot be changed (409).',
      params: IdParams,
      body: ProductPatch,
      response: { 200: Product, 400: ErrorBody, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  },
  delete: {
    method: 'DELETE',
    url: '/apis/v2/admin/products/:id',
    schema: {
      ...admin,
      operationId: 'deleteProduct',
      summary: 'Delete a product, or withdraw one that orders name',
      description:
        'Admins only. A product never ordered is deleted (204). One that orders name is withdrawn instead: no longer listed ' +
        'or sold, kept for those orders, and answered (200).',
      params: IdParams,
      response: { 200: Product, 204: Type.Null({ description: 'Deleted' }), ...guarded, 404: ErrorBody }
    }
  },
  onSale: {
    method: 'GET',
    url: '/apis/v2/products',
    schema: {
      tags: ['products'],
      security: apiKeyOrBearerSecurity,
      operationId: 'listProductsOnSale',
      summary: 'Products on sale',
      description: 'Any signed-in user. Filters combine; `category` may be repeated (any of them). By name.',
      querystring: ProductsOnSaleQuery,
      response: { 200: PagedCollection(Product), 400: ErrorBody, ...guarded }
    }
  }
})

// Buying products: the same request previewed and ordered (one computation for both).

export const PurchaseRequest = Type.Object(
  {
    mode: SubscriptionMode,
    items: Type.Array(
      Type.Object({ product: ItemRef, quantity: Type.Integer({ minimum: 1, maximum: 100, default: 1 }) }, { additionalProperties: false }),
      { minItems: 1, maxItems: 50 }
    )
  },
  { additionalProperties: false }
)
export type PurchaseRequest = Static<typeof PurchaseRequest>

const Amount = (description: string) => Type.Number({ description })

export const PurchaseItem = Type.Object({
  product: Type.Object({ id: Type.String(), sku: Type.String(), name: Type.String(), type: ProductType }),
  quantity: Type.Integer(),
  price: Amount('One unit, before the discount'),
  amount: Amount('price x quantity'),
  discount: Type.Object(DescribedAmount.properties, { description: "The best of the buyer's membership discounts for the product's categories" }),
  tax: DescribedAmount,
  subtotal: Amount('amount - discount: what the tax is due on'),
  total: Amount('subtotal plus an exclusive tax (an inclusive one is already in it)'),
  packages: Type.Array(ItemRef, { description: 'PACKAGE products: the packages issued, one per unit, once paid' }),
  membershipSubscription: Nullable(ItemRef)
})
export type PurchaseItem = Static<typeof PurchaseItem>

export const Purchase = Type.Object({
  id: Nullable(Type.String({ description: 'The order; null in a PREVIEW, which stores nothing' })),
  mode: SubscriptionMode,
  status: Nullable(OrderStatus),
  currency: Type.String(),
  items: Type.Array(PurchaseItem),
  discount: Amount('The sum of the items\' discounts'),
  tax: Amount('The sum of the items\' taxes, inclusive ones too'),
  subtotal: Amount('The sum of the items\' subtotals'),
  total: Amount('What is charged: the sum of the items\' totals'),
  user: ItemRef,
  errors: Nullable(Type.Array(ValidationError)),
  createdDate: DateTime(),
  _links: Links
})
export type Purchase = Static<typeof Purchase>

export const PurchaseHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, pattern: '^[\\x21-\\x7e]+$', description: 'The same key again answers the first order instead of charging twice' })
  )
})

export const purchaseRoutes = defineRoutes({
  create: {
    method: 'POST',
    url: '/apis/v2/orders',
    schema: {
      tags: ['products'],
      security: apiKeyOrBearerSecurity,
      operationId: 'createOrder',
      summary: 'Preview or buy products',
      description:
        "Each line is priced on its own: price x quantity, less the best discount of the buyer's memberships for the " +
        "product's categories, then the product's tax, each rounded half up in minor units. PREVIEW answers the numbers and " +
        "stores nothing (200). ORDER charges the total to the buyer's saved payment method (201); once paid, a PACKAGE " +
        'product issues one package per unit and a MEMBERSHIP product starts its subscription (its order pays the first ' +
        'period). A declined card is a 402 and nothing is issued. With an `Idempotency-Key` the same key again answers the ' +
        'first order (200), charging at most once, even after the product was withdrawn or the card removed. An unreachable ' +
        'payment provider is a 502 naming the order, left PENDING: POST its `confirm` link (or send the same key again) to ' +
        'retry the same charge. REQUIRES_AUTHENTICATION: the customer completes it, then POST the `confirm` link.',
      headers: PurchaseHeaders,
      body: PurchaseRequest,
      response: { 200: Purchase, 201: Purchase, 400: ErrorBody, ...guarded, 402: ErrorBody, 409: ErrorBody, 502: ErrorBody }
    }
  },
  confirm: {
    method: 'POST',
    url: '/apis/v2/orders/:id/confirm',
    schema: {
      tags: ['products'],
      security: apiKeyOrBearerSecurity,
      operationId: 'confirmOrder',
      summary: "Confirm a purchase after the customer completed the bank's authentication, or retry one left PENDING",
      description:
        'For an order REQUIRES_AUTHENTICATION: asks the payment provider how the charge stands. For one left PENDING (the ' +
        'provider could not be reached): retries its charge under the order\'s own idempotency key, so it is charged at most ' +
        'once. Once paid, what was bought is issued. Its payer or staff; any other status is a 409.',
      params: IdParams,
      response: { 200: Purchase, ...guarded, 404: ErrorBody, 409: ErrorBody, 502: ErrorBody }
    }
  }
})
