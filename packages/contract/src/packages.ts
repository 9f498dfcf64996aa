// Packages: bundles of redeemable items, with their constraints and redemptions.
import Type, { type Static } from 'typebox'
import { Collection, DateTime, ItemRef, Nullable } from './common.js'

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
