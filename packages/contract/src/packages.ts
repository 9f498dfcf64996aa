// Packages: bundles of redeemable items, with their constraints and redemptions.
import Type, { type Static } from 'typebox'
import {
  Collection,
  DateTime,
  ErrorBody,
  IdParams,
  ItemRef,
  Nullable,
  PageQuery,
  PagedCollection,
  ValidationError,
  apiKeyOrBearerSecurity,
  bearerSecurity,
  defineRoutes
} from './common.js'

export const PackageStatus = Type.Enum(['ACTIVE', 'EXHAUSTED', 'EXPIRED', 'CANCELED'])
export type PackageStatus = Static<typeof PackageStatus>
export const PackageItemType = Type.Enum(['BOOKING', 'EVENT_SIGNUP', 'GUEST_SIGNUP', 'SERIES_SIGNUP', 'REPLAY'])
export type PackageItemType = Static<typeof PackageItemType>
/** Session period types named by the reference; it says "such as", so other values may exist. */
export const SessionPeriodType = Type.String({ examples: ['PEAK', 'REDUCED', 'OFF PEAK'] })

const NullableStrings = Nullable(Type.Array(Type.String()))

export const PackageItemConstraints = Type.Object({
  bookingEventSubtype: NullableStrings,
  bookingEventCustomType: Nullable(Type.String()),
  bookingEventCustomTypesMatchAny: NullableStrings,
  bookingEventTagsMatchAll: NullableStrings,
  bookingEventTagsMatchAny: NullableStrings,
  allowKids: Nullable(Type.Boolean()),
  bookingSessionPeriodTypeMatchAny: Nullable(Type.Array(SessionPeriodType)),
  bookingAreaSlugMatchAny: NullableStrings,
  bookingPodIdsMatchAny: NullableStrings
})
export type PackageItemConstraints = Static<typeof PackageItemConstraints>

export const PackageItem = Type.Object({
  id: Type.String(),
  type: PackageItemType,
  displayName: Type.String(),
  displayNamePlural: Type.String(),
  totalItems: Type.Number(),
  constraints: PackageItemConstraints,
  remainingItems: Type.Number({ description: 'Read-only' })
})
export type PackageItem = Static<typeof PackageItem>
export const PackageItemCollection = Collection(PackageItem)

export const PackageItemRedemption = Type.Object({
  id: Type.String(),
  redemptionDate: DateTime(),
  item: Type.Number({ description: 'Enumerated; the allowed values are not shown in the reference' }),
  user: ItemRef,
  order: ItemRef,
  orderItem: ItemRef,
  cancelationDate: Nullable(DateTime()),
  givenBackBy: Type.Optional(ItemRef),
  givenBackReason: Type.Optional(Type.String({ description: 'Present when staff gave the item back on purpose, past the cancellation rules: who, and why' })),
  _links: Type.Record(Type.String(), Type.Unknown())
})
export type PackageItemRedemption = Static<typeof PackageItemRedemption>
export const PackageItemRedemptionCollection = Collection(PackageItemRedemption)

export const Package = Type.Object({
  id: Type.String(),
  displayName: Type.String(),
  displayNamePlural: Type.String(),
  status: PackageStatus,
  createdDate: DateTime(),
  expirationDate: DateTime(),
  items: PackageItemCollection,
  redemptions: PackageItemRedemptionCollection,
  template: Nullable(ItemRef),
  order: Nullable(ItemRef),
  _links: Type.Record(Type.String(), Type.Unknown())
})
export type Package = Static<typeof Package>
export const PackageCollection = Collection(Package)
export type PackageCollection = Static<typeof PackageCollection>

const strict = { additionalProperties: false } as const
const Text = Type.String({ minLength: 1, maxLength: 200 })

/**
 * What the `data` of a template of type PACKAGE holds, as the server keeps it once checked (the
 * server checks it by hand, to name the path of a bad item; constraints not given are null).
 */
export const PackageTemplateItem = Type.Object({
  type: PackageItemType,
  displayName: Type.String(),
  displayNamePlural: Type.String(),
  totalItems: Type.Integer({ minimum: 1, maximum: 10_000 }),
  constraints: PackageItemConstraints
})
export type PackageTemplateItem = Static<typeof PackageTemplateItem>
export const PackageTemplateData = Type.Object({
  displayName: Nullable(Type.String({ description: "The package's name; null: the template's name" })),
  displayNamePlural: Nullable(Type.String()),
  items: Type.Array(PackageTemplateItem, { minItems: 1, maxItems: 50 }),
  validityDays: Type.Integer({ minimum: 1, maximum: 3650, description: 'Days from issue to expirationDate' })
})
export type PackageTemplateData = Static<typeof PackageTemplateData>

/** Staff issue a package from a PACKAGE template; its validity counts from now unless a date is given. */
export const PackageIssue = Type.Object(
  { template: ItemRef, user: ItemRef, expirationDate: Type.Optional(DateTime({ description: "Overrides the template's validityDays" })) },
  strict
)
export type PackageIssue = Static<typeof PackageIssue>

export const PackagePatch = Type.Object(
  { displayName: Type.Optional(Text), displayNamePlural: Type.Optional(Text), expirationDate: Type.Optional(DateTime()) },
  { ...strict, minProperties: 1 }
)
export type PackagePatch = Static<typeof PackagePatch>

export const PackageListQuery = Type.Object(
  {
    ...PageQuery,
    userId: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Staff only' })),
    status: Type.Optional(PackageStatus),
    itemType: Type.Optional(PackageItemType)
  },
  strict
)
export type PackageListQuery = Static<typeof PackageListQuery>

const Instant = DateTime()
/** What a redemption pays for. Which parts are needed depends on the item type (see the operation). */
export const RedemptionTarget = Type.Object(
  {
    event: Type.Optional(ItemRef),
    booking: Type.Optional(
      Type.Object(
        {
          court: Type.Optional(ItemRef),
          pod: Type.Optional(ItemRef),
          startDate: Instant,
          endDate: Instant
        },
        strict
      )
    ),
    guest: Type.Optional(Type.Object({ name: Text, kid: Type.Optional(Type.Boolean({ default: false })) }, strict)),
    series: Type.Optional(ItemRef),
    replay: Type.Optional(ItemRef),
    match: Type.Optional(ItemRef)
  },
  { ...strict, minProperties: 1 }
)
export type RedemptionTarget = Static<typeof RedemptionTarget>

export const RedemptionRequest = Type.Object(
  {
    type: PackageItemType,
    target: RedemptionTarget,
    user: Type.Optional(Nullable(ItemRef))
  },
  strict
)
export type RedemptionRequest = Static<typeof RedemptionRequest>

export const RedemptionParams = Type.Object({ id: IdParams.properties.id, redemptionId: IdParams.properties.id })
export type RedemptionParams = Static<typeof RedemptionParams>

/** Staff giving an item back on purpose, past the cancellation rules. */
export const RedemptionGiveBack = Type.Object({ reason: Type.String({ minLength: 1, maxLength: 500 }) }, { additionalProperties: false })
export type RedemptionGiveBack = Static<typeof RedemptionGiveBack>

/** A refused redemption: the error shape, with one entry per constraint that did not match. */
export const RedemptionRefused = Type.Object({ ...ErrorBody.properties, errors: Type.Optional(Type.Array(ValidationError)) })

const tags = ['packages']
const signedIn = { tags, security: apiKeyOrBearerSecurity }
const staff = { tags, security: bearerSecurity }
const guarded = { 401: ErrorBody, 403: ErrorBody }
const redemptionRules =
  'The target needs, by item type: EVENT_SIGNUP an `event`; BOOKING a `booking` (a court or a pod, its start and end; ' +
  "its session period types come from the area's peak hours); GUEST_SIGNUP a `guest` and an `event` or a `booking`; " +
  'SERIES_SIGNUP a `series`; REPLAY a `replay` (or a `match`, redeemed by opening it under MATCH_REQUIRES_PACKAGE). `user` is who uses it (default: the package holder; a member may name ' +
  'themself or someone on a membership they own; staff anyone). The same target twice is one redemption (200 the ' +
  'second time); the last item is taken by exactly one of several requests racing for it. A refused redemption is a ' +
  '409 whose `errors` name each constraint that did not match.'

export const packageRoutes = defineRoutes({
  create: {
    method: 'POST',
    url: '/apis/v2/packages',
    schema: {
      ...staff,
      operationId: 'createPackage',
      summary: 'Issue a package',
      description: "Staff and admins. Copies the PACKAGE template's items as they are now; later edits of the template change no package already held.",
      body: PackageIssue,
      response: { 201: Package, 400: ErrorBody, ...guarded }
    }
  },
  list: {
    method: 'GET',
    url: '/apis/v2/packages',
    schema: {
      ...signedIn,
      operationId: 'listPackages',
      summary: 'Packages',
      description: "A member's own; staff see everyone's and may filter by user. Filters combine. Newest first.",
      querystring: PackageListQuery,
      response: { 200: PagedCollection(Package), 400: ErrorBody, ...guarded }
    }
  },
  get: {
    method: 'GET',
    url: '/apis/v2/packages/:id',
    schema: {
      ...signedIn,
      operationId: 'getPackage',
      summary: 'A package',
      description: 'Its holder or staff; anyone else gets 404. `status` EXPIRED is derived from `expirationDate` when read.',
      params: IdParams,
      response: { 200: Package, ...guarded, 404: ErrorBody }
    }
  },
  patch: {
    method: 'PATCH',
    url: '/apis/v2/packages/:id',
    schema: {
      ...staff,
      operationId: 'updatePackage',
      summary: "Change a package's names or expiration date",
      description: 'Staff and admins. A cancelled package is final (409).',
      params: IdParams,
      body: PackagePatch,
      response: { 200: Package, 400: ErrorBody, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  },
  cancel: {
    method: 'POST',
    url: '/apis/v2/packages/:id/cancel',
    schema: {
      ...staff,
      operationId: 'cancelPackage',
      summary: 'Cancel a package',
      description:
        "Staff and admins. Final. A bought package's unused share is refunded through the payment provider, pro rata by " +
        'unused items (`_links.refund` names the refund order); calling it again refunds nothing more.',
      params: IdParams,
      response: { 200: Package, ...guarded, 404: ErrorBody, 409: ErrorBody, 502: ErrorBody }
    }
  },
  redeem: {
    method: 'POST',
    url: '/apis/v2/packages/:id/redemptions',
    schema: {
      ...signedIn,
      operationId: 'createPackageRedemption',
      summary: 'Redeem an item of a package',
      description: `Takes one item of the given type whose constraints match, atomically. ${redemptionRules}`,
      params: IdParams,
      body: RedemptionRequest,
      response: { 200: PackageItemRedemption, 201: PackageItemRedemption, 400: ErrorBody, ...guarded, 404: ErrorBody, 409: RedemptionRefused }
    }
  },
  redeemAny: {
    method: 'POST',
    url: '/apis/v2/users/current/redemptions',
    schema: {
      ...signedIn,
      operationId: 'createCurrentUserRedemption',
      summary: "Redeem from whichever of the signed-in user's packages expires first",
      description: `Chooses the matching item of the usable package that expires first (\_links.package names it). ${redemptionRules}`,
      body: RedemptionRequest,
      response: { 200: PackageItemRedemption, 201: PackageItemRedemption, 400: ErrorBody, ...guarded, 409: RedemptionRefused }
    }
  },
  listRedemptions: {
    method: 'GET',
    url: '/apis/v2/packages/:id/redemptions',
    schema: {
      ...signedIn,
      operationId: 'listPackageRedemptions',
      summary: "A package's redemptions",
      description: 'Its holder or staff; anyone else gets 404. Oldest first, cancelled ones included.',
      params: IdParams,
      response: { 200: PackageItemRedemptionCollection, ...guarded, 404: ErrorBody }
    }
  },
  getRedemption: {
    method: 'GET',
    url: '/apis/v2/packages/:id/redemptions/:redemptionId',
    schema: {
      ...signedIn,
      operationId: 'getPackageRedemption',
      summary: 'A redemption',
      description: 'Its holder or staff; anyone else gets 404.',
      params: RedemptionParams,
      response: { 200: PackageItemRedemption, ...guarded, 404: ErrorBody }
    }
  },
  cancelRedemption: {
    method: 'DELETE',
    url: '/apis/v2/packages/:id/redemptions/:redemptionId',
    schema: {
      ...signedIn,
      operationId: 'cancelPackageRedemption',
      summary: 'Cancel a redemption',
      description:
        'The holder or staff. Spent is spent: sets `cancelationDate` and gives the item back only while what it paid for ' +
        "has not been delivered: an event or a booking until the club's late-cancel window before it begins " +
        '(PACKAGE_LATE_CANCEL_HOURS, 0 by default: until it begins); a replay while it is still being made (the replay is ' +
        'then given up, FAILED with reason `redemption_cancelled`). Later, 409 naming the rule, and the item stays used. ' +
        'A package that has expired or was cancelled takes the cancellation and gives nothing back. Cancelling again ' +
        'answers the redemption as it is.',
      params: RedemptionParams,
      response: { 200: PackageItemRedemption, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  },
  giveBackRedemption: {
    method: 'POST',
    url: '/apis/v2/packages/:id/redemptions/:redemptionId/give-back',
    schema: {
      ...staff,
      operationId: 'createPackageRedemptionGiveBack',
      summary: 'Give an item back on purpose',
      description:
        'Staff and admins, past the cancellation rules (a class the club called off, a replay that came out unusable): ' +
        'the redemption is cancelled and its item returned, recorded with who (`givenBackBy`) and why (`givenBackReason`). ' +
        'Not once the package expired or was cancelled (409). Such an item does not count as unused in a refund.',
      params: RedemptionParams,
      body: RedemptionGiveBack,
      response: { 200: PackageItemRedemption, 400: ErrorBody, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  }
})

/** PEAK or REDUCED hours of an area on some weekdays; every hour none covers is OFF PEAK. */
export const SessionPeriod = Type.Object(
  {
    type: Type.Enum(['PEAK', 'REDUCED']),
    days: Type.Array(Type.Integer({ minimum: 1, maximum: 7 }), { minItems: 1, maxItems: 7, description: 'ISO weekdays: 1 is Monday, 7 Sunday' }),
    start: Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description: 'Local time HH:mm' }),
    end: Type.String({ pattern: '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$', description: 'Local time HH:mm, after start; 24:00 is midnight' })
  },
  strict
)
export type SessionPeriod = Static<typeof SessionPeriod>
export const AreaSessionPeriodsInput = Type.Object(
  {
    timezone: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100, description: "IANA zone of the area's clock; null: the club's (CLUB_TIMEZONE)" }))),
    periods: Type.Array(SessionPeriod, { maxItems: 100 })
  },
  strict
)
export type AreaSessionPeriodsInput = Static<typeof AreaSessionPeriodsInput>
export const AreaSessionPeriods = Type.Object({
  area: ItemRef,
  timezone: Nullable(Type.String()),
  effectiveTimezone: Type.String(),
  periods: Type.Array(SessionPeriod),
  _links: Type.Record(Type.String(), Type.Unknown())
})
export type AreaSessionPeriods = Static<typeof AreaSessionPeriods>

export const areaSessionPeriodRoutes = defineRoutes({
  get: {
    method: 'GET',
    url: '/apis/v2/admin/areas/:id/session-periods',
    schema: {
      tags: ['admin'],
      security: bearerSecurity,
      operationId: 'getAreaSessionPeriods',
      summary: "An area's peak and reduced hours",
      description: 'Admins only.',
      params: IdParams,
      response: { 200: AreaSessionPeriods, ...guarded, 404: ErrorBody }
    }
  },
  set: {
    method: 'PUT',
    url: '/apis/v2/admin/areas/:id/session-periods',
    schema: {
      tags: ['admin'],
      security: bearerSecurity,
      operationId: 'setAreaSessionPeriods',
      summary: "Replace an area's peak and reduced hours",
      description:
        "Admins only. A booking's or event's session period types (PEAK, REDUCED, OFF PEAK), which package items may be " +
        'constrained to, are those of these hours it overlaps, in the area\'s timezone. A period past midnight is two periods.',
      params: IdParams,
      body: AreaSessionPeriodsInput,
      response: { 200: AreaSessionPeriods, 400: ErrorBody, ...guarded, 404: ErrorBody }
    }
  }
})
