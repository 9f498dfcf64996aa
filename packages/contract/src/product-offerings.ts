// The deprecated product-offering list (legacy; kept for old clients).
import Type, { type Static } from 'typebox'
import { Category, Collection, DescribedAmount, ErrorBody, ItemRef, Link, defineRoutes, bearerSecurity } from './common.js'

export const ProductOffering = Type.Object({
  id: Type.String(),
  product: Type.Object({
    id: Type.String(),
    sku: Type.String(),
    name: Type.String(),
    description: Type.String(),
    type: Type.String(),
    picture: Type.Object({ small: Link, medium: Link, large: Link }),
    price: Type.Number(),
    areas: Collection(Type.String()),
    _links: Type.Record(Type.String(), Type.Unknown())
  }),
  areas: Collection(Type.String()),
  discount: DescribedAmount,
  tax: DescribedAmount,
  subtotal: Type.Number(),
  total: Type.Number(),
  user: ItemRef,
  _links: Type.Record(Type.String(), Type.Unknown())
})
export type ProductOffering = Static<typeof ProductOffering>
export const ProductOfferingCollection = Collection(ProductOffering)
export type ProductOfferingCollection = Static<typeof ProductOfferingCollection>

export const ProductOfferingQuery = Type.Object({
  userId: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Staff only for another user; default: the caller' })),
  category: Type.Optional(
    Type.Array(Category, { maxItems: 20, examples: [['POD_SHOP', 'APPAREL', 'EQUIPMENT']] })
  )
})
export type ProductOfferingQuery = Static<typeof ProductOfferingQuery>

export const productOfferingRoutes = defineRoutes({
  list: {
    method: 'GET',
    url: '/apis/v2/product-offerings',
    schema: {
      operationId: 'listProductOfferings',
      summary: 'List product offerings (deprecated)',
      tags: ['product-offerings'],
      deprecated: true,
      security: bearerSecurity,
      querystring: ProductOfferingQuery,
      response: { 200: ProductOfferingCollection, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }
    }
  }
})
