// Membership subscriptions, pauses, summaries and enrollments, as the reference's models give them.
import Type, { type Static } from 'typebox'
import {
  Category,
  Collection,
  DateTime,
  ErrorBody,
  IdParams,
  ItemRef,
  Links,
  Nullable,
  PageQuery,
  PagedCollection,
  ValidationError,
  apiKeyOrBearerSecurity,
  bearerSecurity,
  defineRoutes,
  noSecurity
} from './common.js'

export const MembershipType = Type.Enum(['GLOBAL_MEMBER', 'ANGEL_MEMBER', 'BASIC_MEMBER', 'AREA_MEMBER'])
export type MembershipType = Static<typeof MembershipType>
export const SubscriptionStatus = Type.Enum(['DRAFT', 'CHARGE_FAILED', 'REQUIRES_AUTHENTICATION', 'CONFIRMED'])
export type SubscriptionStatus = Static<typeof SubscriptionStatus>
export const SubscriptionExtendedStatus = Type.Enum([
  'ACTIVE', 'PENDING_CANCEL', 'CANCELLED', 'VALID', 'GRACE', 'HOLD', 'PAUSED', 'PENDING_PAUSE'
])
export type SubscriptionExtendedStatus = Static<typeof SubscriptionExtendedStatus>
export const SubscriptionMode = Type.Enum(['PREVIEW', 'ORDER'])
export type SubscriptionMode = Static<typeof SubscriptionMode>
export const SubscriptionCondition = Type.Enum(['VALID', 'GRACE', 'HOLD'])
export type SubscriptionCondition = Static<typeof SubscriptionCondition>
export const ChargeType = Type.Enum(['FREE', 'MONTHLY', 'SIX_MONTHS', 'YEARLY', 'NON_RECURRING'])
export type ChargeType = Static<typeof ChargeType>
export const PauseStatus = Type.Enum(['PENDING', 'ACTIVE', 'COMPLETED'])
export type PauseStatus = Static<typeof PauseStatus>

export const Tax = Type.Object({
  name: Type.String(),
  amount: Type.Number({ description: 'In currency units' }),
  percentage: Type.Number({ description: 'The rate applied to a subtotal, for display' })
})
export type Tax = Static<typeof Tax>

export const Fee = Type.Object({
  name: Type.String(),
  percentage: Type.Number({ minimum: 0, maximum: 100 }),
  amount: Type.Number()
})
export type Fee = Static<typeof Fee>

export const Message = Type.Object({ code: Type.String(), message: Type.String() })
export type Message = Static<typeof Message>

export const MembershipSubscriptionPause = Type.Object({
  id: Type.String(),
  pauseStartDate: DateTime({ description: 'When the pause started' }),
  pauseEndDate: DateTime({ description: 'When the pause is scheduled to end (or ended, when ended early or cancelled)' }),
  pauseDurationWeeks: Type.Number(),
  pauseFeePaid: Nullable(Type.Number()),
  status: PauseStatus,
  createdAt: DateTime(),
  membershipSubscription: ItemRef,
  _links: Type.Record(Type.String(), Type.Unknown())
})
export type MembershipSubscriptionPause = Static<typeof MembershipSubscriptionPause>

export const MembershipSubscriptionSummary = Type.Object({
  total: Type.Number({ description: 'Including taxes and fees' }),
  membershipPrice: Type.Number({ description: 'Base price' }),
  taxes: Type.Array(Tax),
  fees: Type.Array(Fee),
  messages: Type.Array(Message),
  billingCycleStart: Nullable(DateTime({ description: 'Recurring memberships only' })),
  endDate: Nullable(DateTime({ description: 'Non-recurring memberships only' })),
  initiationFee: Nullable(Type.Number()),
  chargeType: ChargeType
})
export type MembershipSubscriptionSummary = Static<typeof MembershipSubscriptionSummary>

export const MembershipSubscription = Type.Object({
  id: Nullable(Type.String({ description: 'null in a PREVIEW, which stores nothing' })),
  displayName: Type.String(),
  type: MembershipType,
  status: SubscriptionStatus,
  // What a person is shown. One never confirmed (DRAFT, CHARGE_FAILED, REQUIRES_AUTHENTICATION) is
  // not in force: CANCELLED, with `status` saying why.
  extendedStatus: SubscriptionExtendedStatus,
  mode: SubscriptionMode,
  condition: SubscriptionCondition,
  conditionUpdatedDate: DateTime(),
  createdDate: DateTime(),
  startDate: DateTime(),
  // The reference marks the dates below as always present; a date that does not apply (no end to a
  // renewing membership, no cancellation requested, no charge of a FREE one) is null here.
  endDate: Nullable(DateTime({ description: 'NON_RECURRING: when it ends; otherwise when a cancellation takes effect' })),
  cancellationRequestDate: Nullable(DateTime()),
  lastChargeDate: Nullable(DateTime()),
  nextChargeDate: Nullable(DateTime()),
  nextGrantDate: Nullable(DateTime()),
  billingCycleStart: Nullable(DateTime()),
  billingCycleEnd: Nullable(DateTime()),
  lastGrantDate: Nullable(DateTime({ description: 'Last time the membership perks were granted to the user' })),
  activePause: Nullable(MembershipSubscriptionPause),
  timezone: Type.String({ description: 'Used to display and calculate charge and grant dates' }),
  price: Nullable(Type.Number()),
  initiationFee: Nullable(Type.Number()),
  durationDays: Nullable(Type.Number({ description: 'Days the membership is active when chargeType is NON_RECURRING' })),
  oneTimeOption: Nullable(ItemRef),
  total: Nullable(Type.Number({ description: 'What the current period costs, taxes and fees included' })),
  taxes: Type.Array(Tax),
  fees: Type.Array(Fee),
  additionalMemberFee: Nullable(Type.Number()),
  chargeType: ChargeType,
  member: ItemRef,
  membership: ItemRef,
  errors: Nullable(Type.Array(ValidationError)),
  order: Nullable(ItemRef),
  messages: Type.Optional(
    Type.Array(Message, {
      description:
        'Not in the reference. ORDER answers: each correction staff or an admin made (price, charge and grant dates, timezone), oldest first: what, from, to, when and by whom'
    })
  ),
  // PREVIEW only: an ORDER answer has none (the reference's note).
  summary: Nullable(MembershipSubscriptionSummary),
  _links: Links
})
export type MembershipSubscription = Static<typeof MembershipSubscription>

export const MembershipSubscriptionCollection = Collection(MembershipSubscription)
export type MembershipSubscriptionCollection = Static<typeof MembershipSubscriptionCollection>

export const MembershipSubscriptionPatchable = Type.Object(
  {
    lastChargeDate: Type.Optional(DateTime({ description: 'Not in the future' })),
    nextChargeDate: Type.Optional(DateTime({ description: 'Not in the past; later renewals follow from it' })),
    nextGrantDate: Type.Optional(DateTime({ description: 'Not in the past' })),
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'IANA name; the renewal day and time are kept in it from now on' })),
    price: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1_000_000, description: "From the next charge; null: the plan's price" })))
  },
  { additionalProperties: false }
)
export type MembershipSubscriptionPatchable = Static<typeof MembershipSubscriptionPatchable>

export const UserMembershipSubscriptionSummary = Type.Object({
  id: Type.String(),
  user: Type.Record(Type.String(), Type.Unknown()),
  amount: Type.Number(),
  _links: Type.Record(Type.String(), Type.Unknown())
})
export type UserMembershipSubscriptionSummary = Static<typeof UserMembershipSubscriptionSummary>

export const MembershipJobCapture = Type.Object({
  type: Type.String({ description: 'Write-only' }),
  job: Type.Record(Type.String(), Type.Unknown(), { description: 'Read-only' }),
  users: Collection(UserMembershipSubscriptionSummary),
  date: Type.Optional(DateTime()),
  _links: Type.Record(Type.String(), Type.Unknown())
})
export type MembershipJobCapture = Static<typeof MembershipJobCapture>

export const MembershipEnrollment = Type.Object({
  id: Type.String(),
  displayName: Type.String(),
  type: MembershipType,
  user: ItemRef,
  creatorUser: ItemRef,
  membership: ItemRef,
  membershipSubscription: ItemRef,
  isOwner: Nullable(Type.Boolean()),
  invitationStatus: Type.Optional(
    Type.Enum(['INVITED', 'ACCEPTED', 'DECLINED', 'WITHDRAWN'], {
      description:
        'Not in the reference. An enrollment the owner asks for is an invitation until the invited user accepts it; staff enrol directly (ACCEPTED). ' +
        'An invitation removed before it was answered is WITHDRAWN'
    })
  ),
  errors: Nullable(Type.Array(ValidationError)),
  customFee: Type.Number({ default: 0 }),
  createdDate: Type.Optional(DateTime()),
  startDate: Type.Optional(DateTime()),
  endDate: Type.Optional(DateTime()),
  _links: Type.Record(Type.String(), Type.Unknown())
})
export type MembershipEnrollment = Static<typeof MembershipEnrollment>

export const MembershipEnrollmentCollection = Collection(MembershipEnrollment)
export type MembershipEnrollmentCollection = Static<typeof MembershipEnrollmentCollection>

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

// Buying a membership: the same request previewed and ordered (one computation for both).

export const MembershipSubscriptionRequest = Type.Object(
  {
    mode: SubscriptionMode,
    membership: ItemRef,
    member: Type.Optional(ItemRef),
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'IANA name; default CLUB_TIMEZONE' }))
  },
  { additionalProperties: false }
)
export type MembershipSubscriptionRequest = Static<typeof MembershipSubscriptionRequest>

export const MembershipSubscriptionListQuery = Type.Object(
  {
    ...PageQuery,
    memberId: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Staff only' })),
    membershipId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    status: Type.Optional(SubscriptionStatus),
    extendedStatus: Type.Optional(SubscriptionExtendedStatus),
    condition: Type.Optional(SubscriptionCondition)
  },
  { additionalProperties: false }
)
export type MembershipSubscriptionListQuery = Static<typeof MembershipSubscriptionListQuery>

const signedIn = { tags: ['memberships'], security: apiKeyOrBearerSecurity }

export const membershipSubscriptionRoutes = defineRoutes({
  create: {
    method: 'POST',
    url: '/apis/v2/membership-subscriptions',
    schema: {
      ...signedIn,
      operationId: 'createMembershipSubscription',
      summary: 'Preview or buy a membership',
      description:
        'PREVIEW answers the subscription as it would be, with its `summary`, and stores nothing (200). ORDER creates it and ' +
        'charges the first amount (price, initiation fee, fees and taxes) to the member\'s saved payment method (201): ' +
        'status CONFIRMED, CHARGE_FAILED (with `errors`) or REQUIRES_AUTHENTICATION (`errors` carry what the customer ' +
        'needs; then POST its `confirm` link). A member buys a self-service plan for themself; staff may buy any active ' +
        'plan for any member. The same request previewed and then ordered gives the same numbers.',
      body: MembershipSubscriptionRequest,
      response: { 200: MembershipSubscription, 201: MembershipSubscription, 400: ErrorBody, ...guarded, 404: ErrorBody, 409: ErrorBody, 502: ErrorBody }
    }
  },
  list: {
    method: 'GET',
    url: '/apis/v2/membership-subscriptions',
    schema: {
      ...signedIn,
      operationId: 'listMembershipSubscriptions',
      summary: 'Membership subscriptions',
      description: "A member's own; staff see everyone's and may filter by member. Newest first.",
      querystring: MembershipSubscriptionListQuery,
      response: { 200: PagedCollection(MembershipSubscription), 400: ErrorBody, ...guarded }
    }
  },
  get: {
    method: 'GET',
    url: '/apis/v2/membership-subscriptions/:id',
    schema: {
      ...signedIn,
      operationId: 'getMembershipSubscription',
      summary: 'A membership subscription',
      description: 'Its owner or staff; anyone else gets 404.',
      params: IdParams,
      response: { 200: MembershipSubscription, ...guarded, 404: ErrorBody }
    }
  },
  confirm: {
    method: 'POST',
    url: '/apis/v2/membership-subscriptions/:id/confirm',
    schema: {
      ...signedIn,
      operationId: 'confirmMembershipSubscription',
      summary: 'Confirm a subscription after the customer completed the bank\'s authentication',
      description:
        'For status REQUIRES_AUTHENTICATION: asks the payment provider how the charge stands and answers the subscription ' +
        '(CONFIRMED once paid, unchanged while the bank still waits, CHARGE_FAILED when refused). Any other status is a 409.',
      params: IdParams,
      response: { 200: MembershipSubscription, ...guarded, 404: ErrorBody, 409: ErrorBody, 502: ErrorBody }
    }
  }
})

export const MembershipCancellationRequest = Type.Object(
  { immediate: Type.Optional(Type.Boolean({ default: false, description: 'Staff only: end it now rather than at billingCycleEnd' })) },
  { additionalProperties: false }
)
export type MembershipCancellationRequest = Static<typeof MembershipCancellationRequest>

export const membershipSubscriptionChangeRoutes = defineRoutes({
  patch: {
    method: 'PATCH',
    url: '/apis/v2/membership-subscriptions/:id',
    schema: {
      ...signedIn,
      operationId: 'updateMembershipSubscription',
      summary: "Correct a subscription's dates, timezone or price",
      description:
        'Staff only. A charge or grant date in the past, a last charge in the future or an unknown timezone is a 400. ' +
        'A new nextChargeDate (or timezone) moves the anchor: later renewals fall on whole periods from it. Staff may ' +
        'lower the price or move the next charge later; raising the price or bringing the charge earlier is for admins ' +
        '(403 naming the field). Every change is kept (who, when, from, to) and shown in the answer\'s `messages`.',
      params: IdParams,
      body: MembershipSubscriptionPatchable,
      response: { 200: MembershipSubscription, 400: ErrorBody, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  },
  cancel: {
    method: 'POST',
    url: '/apis/v2/membership-subscriptions/:id/cancellation',
    schema: {
      ...signedIn,
      operationId: 'cancelMembershipSubscription',
      summary: 'Request a cancellation',
      description:
        'The member or staff. It takes effect at billingCycleEnd (PENDING_CANCEL until then, CANCELLED after; no renewal ' +
        'is charged). Staff may end it at once with `immediate`. A cancellation already requested, or a subscription not ' +
        'in force, is a 409.',
      params: IdParams,
      body: MembershipCancellationRequest,
      response: { 200: MembershipSubscription, 400: ErrorBody, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  },
  withdrawCancellation: {
    method: 'DELETE',
    url: '/apis/v2/membership-subscriptions/:id/cancellation',
    schema: {
      ...signedIn,
      operationId: 'withdrawMembershipSubscriptionCancellation',
      summary: 'Withdraw a pending cancellation',
      description: 'The member or staff, before it takes effect; the membership renews as before. Nothing pending is a 409.',
      params: IdParams,
      response: { 200: MembershipSubscription, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  }
})

export const MembershipPauseRequest = Type.Object(
  {
    pauseDurationWeeks: Type.Integer({ minimum: 1, maximum: 52 }),
    pauseStartDate: Type.Optional(DateTime({ description: 'Default now; not in the past, not after the next charge' }))
  },
  { additionalProperties: false }
)
export type MembershipPauseRequest = Static<typeof MembershipPauseRequest>

const PauseParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }), pauseId: Type.String({ minLength: 1, maxLength: 100 }) })

export const membershipPauseRoutes = defineRoutes({
  create: {
    method: 'POST',
    url: '/apis/v2/membership-subscriptions/:id/pauses',
    schema: {
      ...signedIn,
      operationId: 'createMembershipSubscriptionPause',
      summary: 'Pause a membership',
      description:
        "The member or staff, under the plan's pause policy (minimum and maximum weeks, pauses in any 12 months, the " +
        'pause fee, charged now: a refused fee is a 402). The next charge, the cycle end and the next grant move by the ' +
        "pause's weeks in local calendar days; nothing is granted while paused. Refused while the membership is in GRACE " +
        'or HOLD, before a requested cancellation, beside another pause, or for a plan without pauses (409).',
      params: IdParams,
      body: MembershipPauseRequest,
      response: { 201: MembershipSubscriptionPause, 400: ErrorBody, ...guarded, 402: ErrorBody, 404: ErrorBody, 409: ErrorBody, 502: ErrorBody }
    }
  },
  list: {
    method: 'GET',
    url: '/apis/v2/membership-subscriptions/:id/pauses',
    schema: {
      ...signedIn,
      operationId: 'listMembershipSubscriptionPauses',
      summary: "A membership's pauses, newest first",
      description: 'The member or staff.',
      params: IdParams,
      response: { 200: Collection(MembershipSubscriptionPause), ...guarded, 404: ErrorBody }
    }
  },
  get: {
    method: 'GET',
    url: '/apis/v2/membership-subscriptions/:id/pauses/:pauseId',
    schema: {
      ...signedIn,
      operationId: 'getMembershipSubscriptionPause',
      summary: 'A pause',
      description: "The member or staff; a pause's `_links.self` names it.",
      params: PauseParams,
      response: { 200: MembershipSubscriptionPause, ...guarded, 404: ErrorBody }
    }
  },
  end: {
    method: 'POST',
    url: '/apis/v2/membership-subscriptions/:id/pauses/:pauseId/end',
    schema: {
      ...signedIn,
      operationId: 'endMembershipSubscriptionPause',
      summary: 'End a pause early, or call off one not started',
      description:
        'The member or staff. An active pause ends now and the dates move back by its unused days; a pending one is called ' +
        'off and they move back whole. The pause fee is not refunded. A pause already over is a 409.',
      params: PauseParams,
      response: { 200: MembershipSubscriptionPause, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  }
})

export const MembershipJobType = Type.Enum(['CHARGE', 'GRANT'], {
  description:
    'CHARGE renews what is due, retries GRACE and HOLD, and ends cancellations and HOLDs run out; GRANT grants the monthly ' +
    'perks due (none while paused or in HOLD). Pauses need no job: they move the dates when requested, and their status ' +
    'follows from their dates.'
})
export type MembershipJobType = Static<typeof MembershipJobType>

export const MembershipJobRequest = Type.Object(
  { type: MembershipJobType, date: Type.Optional(DateTime({ description: 'Run as of this time (default now)' })) },
  { additionalProperties: false }
)
export type MembershipJobRequest = Static<typeof MembershipJobRequest>

export const membershipJobRoutes = defineRoutes({
  run: {
    method: 'POST',
    url: '/apis/v2/admin/membership-jobs',
    schema: {
      ...planAdmin,
      operationId: 'runMembershipJob',
      summary: 'Run a membership job now',
      description:
        'Admins only. Each (subscription, period) is charged at most once, whoever runs the job and however often ' +
        '(also `club memberships run-job`). `job` holds the run: id, type, date, startedDate, finishedDate and counts by ' +
        'outcome; `users` the subscriptions charged or tried, with the amount.',
      body: MembershipJobRequest,
      response: { 201: MembershipJobCapture, 400: ErrorBody, ...guarded }
    }
  }
})

// Enrollments: the members a subscription covers (its owner, and those the owner or staff add).

export const MembershipEnrollmentRequest = Type.Object(
  {
    user: Type.Optional(ItemRef),
    email: Type.Optional(Type.String({ minLength: 3, maxLength: 320, description: 'The user to invite, by their e-mail, instead of user.id' })),
    customFee: Type.Optional(Amount('Staff only: added to each renewal besides the plan\'s additional member fee; default 0'))
  },
  { additionalProperties: false }
)
export type MembershipEnrollmentRequest = Static<typeof MembershipEnrollmentRequest>

export const MembershipEnrollmentParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100, description: 'The membership subscription' }),
  enrollmentId: Type.String({ minLength: 1, maxLength: 100 })
})
export type MembershipEnrollmentParams = Static<typeof MembershipEnrollmentParams>

export const MembershipEnrollmentAcceptance = Type.Object(
  { accept: Type.Boolean({ description: 'true accepts the invitation, false declines it' }) },
  { additionalProperties: false }
)
export type MembershipEnrollmentAcceptance = Static<typeof MembershipEnrollmentAcceptance>

export const MembershipEnrollmentListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false })
export type MembershipEnrollmentListQuery = Static<typeof MembershipEnrollmentListQuery>

export const MembershipEnrollmentsOfUserQuery = Type.Object(
  { ...PageQuery, userId: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Staff only; default: the caller' })) },
  { additionalProperties: false }
)
export type MembershipEnrollmentsOfUserQuery = Static<typeof MembershipEnrollmentsOfUserQuery>

export const membershipEnrollmentRoutes = defineRoutes({
  list: {
    method: 'GET',
    url: '/apis/v2/membership-subscriptions/:id/enrollments',
    schema: {
      ...signedIn,
      operationId: 'listMembershipSubscriptionEnrollments',
      summary: 'The members a subscription covers',
      description:
        "The subscription's owner or staff; anyone else gets 404. The owner's enrollment (isOwner true) and every member " +
        'added, ended ones too (with endDate). Newest first.',
      params: IdParams,
      querystring: MembershipEnrollmentListQuery,
      response: { 200: PagedCollection(MembershipEnrollment), 400: ErrorBody, ...guarded, 404: ErrorBody }
    }
  },
  create: {
    method: 'POST',
    url: '/apis/v2/membership-subscriptions/:id/enrollments',
    schema: {
      ...signedIn,
      operationId: 'createMembershipEnrollment',
      summary: 'Add a member of the club to a membership',
      description:
        "The subscription's owner or staff, while it is in force; the user by `user.id` or by `email`. The owner invites: " +
        'the enrollment is INVITED, the user is told by mail, and nothing changes for them (no fee on the order, no ' +
        'discount, no refusal of their own purchase) until they accept it (…/acceptance). Staff enrol directly. The ' +
        "plan's additionalMemberFee (and the customFee, which only staff may set) is charged from the next renewal on, one " +
        'order line each. A user holds at most one active enrollment per membership type: a second is a 409 naming the ' +
        "first; past the plan's maxEnrollments (invitations not yet answered included) a 409 too.",
      params: IdParams,
      body: MembershipEnrollmentRequest,
      response: { 201: MembershipEnrollment, 400: ErrorBody, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  },
  answer: {
    method: 'POST',
    url: '/apis/v2/membership-subscriptions/:id/enrollments/:enrollmentId/acceptance',
    schema: {
      ...signedIn,
      operationId: 'createMembershipEnrollmentAcceptance',
      summary: 'Accept or decline an invitation',
      description:
        'The invited user only (staff 403, anyone else 404). Accepting starts the enrollment now, under the same rules as ' +
        "staff's direct enrolment: 409 when the user holds an active enrollment of the plan's type or is buying one, or " +
        "when the plan's maxEnrollments is reached. An invitation already answered or withdrawn is a 409. The invitation " +
        "mail's link answers the same way without signing in (createMembershipEnrollmentInvitationAnswer).",
      params: MembershipEnrollmentParams,
      body: MembershipEnrollmentAcceptance,
      response: { 200: MembershipEnrollment, 400: ErrorBody, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  },
  get: {
    method: 'GET',
    url: '/apis/v2/membership-subscriptions/:id/enrollments/:enrollmentId',
    schema: {
      ...signedIn,
      operationId: 'getMembershipEnrollment',
      summary: 'An enrollment',
      description: "The enrolled member, the subscription's owner or staff; anyone else gets 404.",
      params: MembershipEnrollmentParams,
      response: { 200: MembershipEnrollment, ...guarded, 404: ErrorBody }
    }
  },
  delete: {
    method: 'DELETE',
    url: '/apis/v2/membership-subscriptions/:id/enrollments/:enrollmentId',
    schema: {
      ...signedIn,
      operationId: 'deleteMembershipEnrollment',
      summary: 'Remove a member from a membership',
      description:
        "The subscription's owner or staff. The enrollment is ended now (its endDate set; it stays in the history) and " +
        "adds no fee to later renewals; one already ended is answered as it is. The owner's own enrollment cannot be " +
        'removed (409): cancel the subscription instead. An invitation not yet answered is withdrawn instead ' +
        '(invitationStatus WITHDRAWN; declined when the invited user removes it), and can no longer be accepted.',
      params: MembershipEnrollmentParams,
      response: { 200: MembershipEnrollment, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  },
  listOfUser: {
    method: 'GET',
    url: '/apis/v2/membership-enrollments',
    schema: {
      ...signedIn,
      operationId: 'listMembershipEnrollments',
      summary: 'The memberships a member belongs to',
      description: "A member's own enrollments, as owner or added member; staff see everyone's and may filter by userId. Newest first.",
      querystring: MembershipEnrollmentsOfUserQuery,
      response: { 200: PagedCollection(MembershipEnrollment), 400: ErrorBody, ...guarded }
    }
  }
})

// The invitation mail's link: the page it opens reads and answers the invitation with the mail's
// token as its only credential (no account needed to be signed in on that device).

const InvitationToken = Type.String({ minLength: 1, maxLength: 200, writeOnly: true, description: "The token of the invitation mail's link" })

export const EnrollmentInvitationLookup = Type.Object({ token: InvitationToken }, { additionalProperties: false })
export type EnrollmentInvitationLookup = Static<typeof EnrollmentInvitationLookup>

export const EnrollmentInvitationAnswer = Type.Object(
  { token: InvitationToken, accept: Type.Boolean({ description: 'true accepts the invitation, false declines it' }) },
  { additionalProperties: false }
)
export type EnrollmentInvitationAnswer = Static<typeof EnrollmentInvitationAnswer>

/** Only what the invited user needs to decide: who invites them, to which membership, and where it stands. */
export const EnrollmentInvitation = Type.Object({
  inviter: Type.Object({ name: Type.String({ description: "The inviting member's name, else their e-mail" }) }),
  membership: Type.Object({ displayName: Type.String({ description: "The plan's name" }) }),
  invitationStatus: Type.Enum(['INVITED', 'ACCEPTED', 'DECLINED'])
})
export type EnrollmentInvitation = Static<typeof EnrollmentInvitation>

const byLink = { tags: ['memberships'], security: noSecurity }
const linkErrors =
  'An unknown token is a 400; an invitation already answered, withdrawn, or whose subscription is no longer in force ' +
  '(the invitation expired with it) is a 409 saying which. Limited per client IP (429).'

export const enrollmentInvitationRoutes = defineRoutes({
  read: {
    method: 'POST',
    url: '/apis/v2/membership-enrollment-invitations/lookup',
    schema: {
      ...byLink,
      operationId: 'getMembershipEnrollmentInvitationByToken',
      summary: "An invitation, by its mail's token",
      description:
        'Not in the reference. What the page behind the invitation mail shows: who invites, to which membership. The token ' +
        `travels in the body, never in an address. ${linkErrors}`,
      body: EnrollmentInvitationLookup,
      response: { 200: EnrollmentInvitation, 400: ErrorBody, 409: ErrorBody, 429: ErrorBody }
    }
  },
  answer: {
    method: 'POST',
    url: '/apis/v2/membership-enrollment-invitations/answer',
    schema: {
      ...byLink,
      operationId: 'createMembershipEnrollmentInvitationAnswer',
      summary: "Accept or decline an invitation with its mail's token",
      description:
        'Not in the reference. The same as the invited user\'s …/acceptance: accepting re-checks the one active enrollment ' +
        "per type, a purchase of their own under way and the plan's maxEnrollments (409 naming the rule), and an " +
        `invitation is answered once. Credentials sent along change nothing: the token alone says whose invitation it is. ${linkErrors}`,
      body: EnrollmentInvitationAnswer,
      response: { 200: EnrollmentInvitation, 400: ErrorBody, 409: ErrorBody, 429: ErrorBody }
    }
  }
})
