// Membership plans: what staff sell (prices, fees, taxes, pause policy, perks) and members buy.
import Type, { type Static } from 'typebox'
import { Category, DateTime, ErrorBody, IdParams, ItemRef, Links, Nullable, PageQuery, PagedCollection, apiKeyOrBearerSecurity, bearerSecurity, defineRoutes } from './common.js'
import { MembershipType, ChargeType } from './memberships.js'

// The membership plan ("membership" in the reference's ItemRefs; its record is "not shown" there).

/** An amount in currency units, as the API shows money: at most the currency's decimals. */
const Amount = (description: string) => Type.Number({ minimum: 0, maximum: 1_000_000, description })
/** A percentage; at most two decimals (kept as basis points; more is a 400 from the service). */
const Percentage = Type.Number({ minimum: 0, maximum: 100 })
/** No control characters: a name is shown to members and printed on receipts. */
const PlanName = Type.String({ minLength: 1, maxLength: 100, pattern: '^[^\\u0000-\\u001f\\u007f]+$' })

export const MembershipTaxRate = Type.Object(
  {
    name: PlanName,
    percentage: Percentage,
    inclusive: Type.Boolean({ default: false, description: 'Already inside the price (the total does not change) rather than added on top' })
  },
  { additionalProperties: false }
)
export type MembershipTaxRate = Static<typeof MembershipTaxRate>

export const MembershipFeeRate = Type.Object({ name: PlanName, percentage: Percentage }, { additionalProperties: false })
export type MembershipFeeRate = Static<typeof MembershipFeeRate>

export const MembershipPausePolicy = Type.Object(
  {
    minimumWeeks: Type.Integer({ minimum: 1, maximum: 52 }),
    maximumWeeks: Type.Integer({ minimum: 1, maximum: 52 }),
    pausesPerYear: Type.Integer({ minimum: 1, maximum: 12, description: 'Pauses a subscription may start in any 12 months' }),
    pauseFee: Amount('Charged when a pause is requested; 0 for none')
  },
  { additionalProperties: false }
)
export type MembershipPausePolicy = Static<typeof MembershipPausePolicy>

export const MembershipProductDiscount = Type.Object(
  {
    categories: Type.Array(Category, { minItems: 1, maxItems: 20, uniqueItems: true }),
    percentage: Type.Number({ minimum: 0.01, maximum: 100, description: 'At most two decimals' }),
    description: PlanName
  },
  { additionalProperties: false }
)
export type MembershipProductDiscount = Static<typeof MembershipProductDiscount>

export const MembershipPlanStatus = Type.Enum(['ACTIVE', 'ARCHIVED'])
export type MembershipPlanStatus = Static<typeof MembershipPlanStatus>

export const Membership = Type.Object({
  id: Type.String(),
  displayName: Type.String(),
  description: Nullable(Type.String()),
  type: MembershipType,
  chargeType: ChargeType,
  currency: Type.String({ description: 'ISO 4217; every amount of the plan is in it' }),
  price: Type.Number({ description: 'Per period (the whole duration for NON_RECURRING); 0 when FREE' }),
  initiationFee: Type.Number({ description: 'Added to the first charge only' }),
  additionalMemberFee: Type.Number({ description: 'Added to each charge per enrolled member besides the owner' }),
  maxEnrollments: Nullable(Type.Integer({ description: 'How many members a subscription covers at most, the owner included (pending invitations count); null: no cap' })),
  durationDays: Nullable(Type.Integer({ description: 'NON_RECURRING only' })),
  taxes: Type.Array(MembershipTaxRate),
  fees: Type.Array(MembershipFeeRate),
  area: Nullable(ItemRef),
  pausePolicy: Nullable(MembershipPausePolicy),
  graceDays: Type.Integer({ description: 'After a failed renewal: perks kept, retried every other day' }),
  holdDays: Type.Integer({ description: 'After grace: perks suspended, retried every 3 days, then cancelled' }),
  selfService: Type.Boolean({ description: 'Members may buy it themselves (else staff sell it)' }),
  perks: Type.Object({ packageTemplate: Nullable(ItemRef) }, { description: 'Granted every month of a valid subscription' }),
  productDiscounts: Type.Array(MembershipProductDiscount, {
    description: "Percentages off products of these categories for the plan's members while it is in force; the best one applies"
  }),
  status: MembershipPlanStatus,
  createdDate: DateTime(),
  updatedDate: DateTime(),
  _links: Links
})
export type Membership = Static<typeof Membership>

const PlanFields = {
  displayName: PlanName,
  description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  price: Type.Optional(Amount('Per period; required unless FREE')),
  initiationFee: Type.Optional(Amount('Added to the first charge only; default 0')),
  additionalMemberFee: Type.Optional(Amount('Per enrolled member besides the owner; default 0')),
  maxEnrollments: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100, description: 'Members a subscription covers at most, the owner included; default null (no cap)' }))),
  durationDays: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 3650, description: 'Required for NON_RECURRING, refused otherwise' }))),
  taxes: Type.Optional(Type.Array(MembershipTaxRate, { maxItems: 10 })),
  fees: Type.Optional(Type.Array(MembershipFeeRate, { maxItems: 10 })),
  area: Type.Optional(Nullable(ItemRef)),
  pausePolicy: Type.Optional(Nullable(MembershipPausePolicy)),
  graceDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 90, default: 15 })),
  holdDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 180, default: 30 })),
  selfService: Type.Optional(Type.Boolean({ default: true })),
  perks: Type.Optional(Type.Object({ packageTemplate: Nullable(ItemRef) }, { additionalProperties: false })),
  productDiscounts: Type.Optional(Type.Array(MembershipProductDiscount, { maxItems: 20 }))
}

export const MembershipCreate = Type.Object({ ...PlanFields, type: MembershipType, chargeType: ChargeType }, { additionalProperties: false })
export type MembershipCreate = Static<typeof MembershipCreate>

export const MembershipPatch = Type.Object(
  {
    ...PlanFields,
    displayName: Type.Optional(PlanName),
    type: Type.Optional(MembershipType),
    chargeType: Type.Optional(ChargeType),
    status: Type.Optional(MembershipPlanStatus)
  },
  { additionalProperties: false }
)
export type MembershipPatch = Static<typeof MembershipPatch>

export const MembershipListQuery = Type.Object(
  { ...PageQuery, status: Type.Optional(MembershipPlanStatus), type: Type.Optional(MembershipType) },
  { additionalProperties: false }
)
export type MembershipListQuery = Static<typeof MembershipListQuery>

export const MembershipsOnSaleQuery = Type.Object({ ...PageQuery, type: Type.Optional(MembershipType) }, { additionalProperties: false })
export type MembershipsOnSaleQuery = Static<typeof MembershipsOnSaleQuery>

const planAdmin = { tags: ['memberships'], security: bearerSecurity }
const guarded = { 401: ErrorBody, 403: ErrorBody }

export const membershipPlanRoutes = defineRoutes({
  create: {
    method: 'POST',
    url: '/apis/v2/admin/memberships',
    schema: {
      ...planAdmin,
      operationId: 'createMembership',
      summary: 'Create a membership plan',
      description:
        'Admins only. Amounts are in the club\'s currency (CURRENCY) with at most its decimals. FREE plans cost 0; ' +
        'NON_RECURRING ones need durationDays; AREA_MEMBER ones need an area.',
      body: MembershipCreate,
      response: { 201: Membership, 400: ErrorBody, ...guarded }
    }
  },
  list: {
    method: 'GET',
    url: '/apis/v2/admin/memberships',
    schema: {
      ...planAdmin,
      operationId: 'listMemberships',
      summary: 'List membership plans',
      description: 'Staff and admins. Archived plans too, unless filtered by status. Newest first.',
      querystring: MembershipListQuery,
      response: { 200: PagedCollection(Membership), 400: ErrorBody, ...guarded }
    }
  },
  get: {
    method: 'GET',
    url: '/apis/v2/admin/memberships/:id',
    schema: {
      ...planAdmin,
      operationId: 'getMembership',
      summary: 'A membership plan',
      description: 'Staff and admins.',
      params: IdParams,
      response: { 200: Membership, ...guarded, 404: ErrorBody }
    }
  },
  patch: {
    method: 'PATCH',
    url: '/apis/v2/admin/memberships/:id',
    schema: {
      ...planAdmin,
      operationId: 'updateMembership',
      summary: 'Change a membership plan',
      description:
        'Admins only. Prices, taxes and fees apply from the next charge of each subscription. A plan with subscriptions ' +
        'keeps its type and chargeType (409); setting status ARCHIVED takes it off sale.',
      params: IdParams,
      body: MembershipPatch,
      response: { 200: Membership, 400: ErrorBody, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  },
  delete: {
    method: 'DELETE',
    url: '/apis/v2/admin/memberships/:id',
    schema: {
      ...planAdmin,
      operationId: 'deleteMembership',
      summary: 'Delete a membership plan, or archive one that has subscriptions',
      description:
        'Admins only. A plan no one ever subscribed to and no product sells is deleted (204). A plan with subscriptions, ' +
        'or named by a MEMBERSHIP product, is archived instead: it is taken off sale (so is buying it through the product), ' +
        'its subscriptions go on, and the answer is the archived plan (200).',
      params: IdParams,
      response: { 200: Membership, 204: Type.Null({ description: 'Deleted' }), ...guarded, 404: ErrorBody }
    }
  },
  onSale: {
    method: 'GET',
    url: '/apis/v2/memberships',
    schema: {
      tags: ['memberships'],
      security: apiKeyOrBearerSecurity,
      operationId: 'listMembershipsOnSale',
      summary: 'Membership plans a member can buy',
      description: 'Any signed-in user: active plans members may buy themselves, newest first.',
      querystring: MembershipsOnSaleQuery,
      response: { 200: PagedCollection(Membership), 400: ErrorBody, ...guarded }
    }
  }
})
