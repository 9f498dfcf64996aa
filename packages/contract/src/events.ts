// Events for integrators (issue 35): what changed on the platform, as `resource.verb` events written
// in the same transaction as the change (the server's outbox) and read back from the event feed or
// delivered to webhook endpoints. Each event's `data` is the resource as its GET route answers it.
import Type, { type Static } from 'typebox'
import { Collection, DateTime, ItemRef } from './common.js'

/** Every event type the server emits, in the order the README lists them. */
export const eventTypes = [
  'membership_subscription.created',
  'membership_subscription.confirmed',
  'membership_subscription.renewed',
  'membership_subscription.charge_failed',
  'membership_subscription.condition_changed',
  'membership_subscription.paused',
  'membership_subscription.resumed',
  'membership_subscription.cancellation_requested',
  'membership_subscription.canceled',
  'membership_enrollment.created',
  'membership_enrollment.accepted',
  'membership_enrollment.removed',
  'order.paid',
  'order.refunded',
  'order.failed',
  'package.issued',
  'package.exhausted',
  'package.expired',
  'package.canceled',
  'package_redemption.created',
  'package_redemption.canceled',
  'replay.requested',
  'replay.ready',
  'replay.failed',
  'replay.expired',
  'replay_server.registered',
  'replay_server.approved',
  'replay_server.offline',
  'replay_server.online',
  'replay_server.update_failed',
  'replay_server.rolled_back',
  'user.created',
  'user.deleted',
  'template.created',
  'template.updated',
  'template.deleted'
] as const

export const EventType = Type.Enum(eventTypes, { description: 'What happened, as `resource.verb`' })
export type EventType = Static<typeof EventType>

/** One event of the feed; a webhook delivery's body is the same object without `id` and `resource` (Standard Webhooks' {type, timestamp, data}). */
export const PlatformEvent = Type.Object({
  id: Type.String({ description: 'evt_…: unique; a webhook delivery carries it as its webhook-id, the same on every retry' }),
  type: EventType,
  timestamp: DateTime({ description: 'When the change was made (its transaction)' }),
  resource: ItemRef,
  data: Type.Unknown({ description: "The resource as its GET route answered it right after the change (see the OpenAPI document's webhooks for each type's schema)" })
})
export type PlatformEvent = Static<typeof PlatformEvent>

/**
 * The event feed's page, oldest first. `_links.next` is always there: it carries the cursor after the
 * last event of the page (or the request's own cursor when nothing newer exists), which an integrator
 * keeps and reads from next time. `_total` counts the events of this page.
 */
export const EventFeedPage = Collection(PlatformEvent)
export type EventFeedPage = Static<typeof EventFeedPage>
