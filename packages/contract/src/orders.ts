// Orders: every charge and refund (a membership, its renewals, a pause fee, a purchase, a package's
// refund), with the lines, fees and taxes that explain its total. Buying products is products.ts.
import Type, { type Static } from 'typebox'
import { DateTime, ErrorBody, IdParams, ItemRef, Links, Nullable, PageQuery, PagedCollection, apiKeyOrBearerSecurity, defineRoutes } from './common.js'
import { Fee } from './memberships.js'

export const OrderStatus = Type.Enum(['PENDING', 'PAID', 'FAILED', 'REQUIRES_AUTHENTICATION', 'REFUNDED'])
export type OrderStatus = Static<typeof OrderStatus>

export const OrderLine = Type.Object({
  kind: Type.String({ examples: ['base', 'initiation_fee', 'additional_member_fee', 'custom_fee', 'pause_fee', 'product', 'discount'] }),
  description: Type.String(),
  amount: Type.Number({ description: 'Negative for a discount' }),
  product: Type.Optional(ItemRef),
  quantity: Type.Optional(Type.Integer())
})

export const Order = Type.Object({
  id: Type.String(),
  kind: Type.String({ examples: ['MEMBERSHIP', 'MEMBERSHIP_RENEWAL', 'PAUSE_FEE', 'REFUND', 'PURCHASE'] }),
  status: OrderStatus,
  currency: Type.String(),
  lines: Type.Array(OrderLine),
  subtotal: Type.Number({ description: 'The sum of the lines' }),
  fees: Type.Array(Fee),
  taxes: Type.Array(Type.Object({ name: Type.String(), percentage: Type.Number(), inclusive: Type.Boolean(), amount: Type.Number() })),
  total: Type.Number({ description: 'What was charged: subtotal, fees and exclusive taxes' }),
  user: ItemRef,
  membershipSubscription: Nullable(ItemRef),
  provider: Nullable(Type.String()),
  providerReference: Nullable(Type.String()),
  failure: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
  createdDate: DateTime(),
  updatedDate: DateTime(),
  _links: Links
})
export type Order = Static<typeof Order>

export const OrderListQuery = Type.Object(
  { ...PageQuery, userId: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Staff only' })), status: Type.Optional(OrderStatus) },
  { additionalProperties: false }
)
export type OrderListQuery = Static<typeof OrderListQuery>

const signedIn = { tags: ['memberships'], security: apiKeyOrBearerSecurity }
const guarded = { 401: ErrorBody, 403: ErrorBody }

export const orderRoutes = defineRoutes({
  list: {
    method: 'GET',
    url: '/apis/v2/orders',
    schema: {
      ...signedIn,
      operationId: 'listOrders',
      summary: 'Orders: every charge and refund',
      description: "A member's own; staff see everyone's and may filter by user. Newest first.",
      querystring: OrderListQuery,
      response: { 200: PagedCollection(Order), 400: ErrorBody, ...guarded }
    }
  },
  get: {
    method: 'GET',
    url: '/apis/v2/orders/:id',
    schema: {
      ...signedIn,
      operationId: 'getOrder',
      summary: 'An order with its lines, fees, taxes and total',
      description: 'Its payer or staff; anyone else gets 404.',
      params: IdParams,
      response: { 200: Order, ...guarded, 404: ErrorBody }
    }
  }
})
