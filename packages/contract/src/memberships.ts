// Membership subscriptions, pauses, summaries and the jobs that renew them, as the reference's models give
// them; plans are membership-plans.ts, enrollments membership-enrollments.ts, orders orders.ts.
import Type, { type Static } from 'typebox'
import {
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
  defineRoutes
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

const planAdmin = { tags: ['memberships'], security: bearerSecurity }
const guarded = { 401: ErrorBody, 403: ErrorBody }
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
