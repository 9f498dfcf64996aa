// Membership subscriptions, pauses, summaries and enrollments, as the reference's models give them.
import Type, { type Static } from 'typebox'
import { Collection, DateTime, ItemRef, Nullable, ValidationError } from './common.js'

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
  pauseEndDate: DateTime({ description: 'When the pause is scheduled to end' }),
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
  id: Type.String(),
  displayName: Type.String(),
  type: MembershipType,
  status: SubscriptionStatus,
  extendedStatus: SubscriptionExtendedStatus,
  mode: SubscriptionMode,
  condition: SubscriptionCondition,
  conditionUpdatedDate: DateTime(),
  createdDate: DateTime(),
  startDate: DateTime(),
  endDate: DateTime(),
  cancellationRequestDate: DateTime(),
  lastChargeDate: DateTime(),
  nextChargeDate: DateTime(),
  nextGrantDate: DateTime(),
  billingCycleStart: DateTime(),
  billingCycleEnd: DateTime(),
  lastGrantDate: Nullable(DateTime({ description: 'Last time the membership perks were granted to the user' })),
  activePause: Nullable(MembershipSubscriptionPause),
  timezone: Type.String({ description: 'Used to display and calculate charge and grant dates' }),
  price: Nullable(Type.Number()),
  initiationFee: Nullable(Type.Number()),
  durationDays: Nullable(Type.Number({ description: 'Days the membership is active when chargeType is NON_RECURRING' })),
  oneTimeOption: Nullable(ItemRef),
  total: Nullable(Type.Number()),
  taxes: Type.Array(Tax),
  fees: Type.Array(Fee),
  additionalMemberFee: Nullable(Type.Number()),
  chargeType: ChargeType,
  member: ItemRef,
  membership: ItemRef,
  errors: Nullable(Type.Array(ValidationError)),
  order: ItemRef,
  summary: Nullable(MembershipSubscriptionSummary),
  _links: Type.Record(Type.String(), Type.Unknown())
})
export type MembershipSubscription = Static<typeof MembershipSubscription>

export const MembershipSubscriptionCollection = Collection(MembershipSubscription)
export type MembershipSubscriptionCollection = Static<typeof MembershipSubscriptionCollection>

export const MembershipSubscriptionPatchable = Type.Object({
  lastChargeDate: DateTime(),
  nextChargeDate: DateTime(),
  nextGrantDate: DateTime(),
  timezone: Type.String(),
  price: Nullable(Type.Number())
})
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
