// Events for integrators (issue 35): what changed on the platform, as `resource.verb` events written
// in the same transaction as the change (the server's outbox) and read back from the event feed or
// delivered to webhook endpoints. Each event's `data` is the resource as its GET route answers it.
import Type, { type Static, type TSchema } from 'typebox'
import { AuthErrors, Collection, DateTime, ErrorBody, ItemRef, apiKeyOrBearerSecurity, defineRoutes } from './common.js'
import { AgentRollout } from './agent-rollouts.js'
import { MembershipEnrollment } from './membership-enrollments.js'
import { MembershipSubscription } from './memberships.js'
import { Order } from './orders.js'
import { Package, PackageItemRedemption } from './packages.js'
import { ReplayServer } from './replay-servers.js'
import { CameraHealth } from './replay-server-health.js'
import { Replay } from './replays.js'
import { Template } from './templates.js'
import { User } from './users.js'

/** Every event type the server emits, in the order docs/integrating.md lists them. */
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
  'replay_server.camera_failed',
  'replay_server.camera_recovered',
  'replay_server.disk_low',
  'replay_server.clock_skewed',
  'agent_rollout.started',
  'agent_rollout.group_completed',
  'agent_rollout.halted',
  'agent_rollout.completed',
  'agent_rollout.cancelled',
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

/** The schema of each event type's `data`: the resource as its GET route answers it. */
const payloadOf = {
  membership_subscription: MembershipSubscription,
  membership_enrollment: MembershipEnrollment,
  order: Order,
  package: Package,
  package_redemption: PackageItemRedemption,
  replay: Replay,
  replay_server: ReplayServer,
  agent_rollout: AgentRollout,
  user: User,
  template: Template
} as const satisfies Record<string, TSchema>

/**
 * A box's health told (issue 48): the box as its GET answers it (its `health` names the problems),
 * and the camera told of (camera_failed, camera_recovered; null for disk_low and clock_skewed).
 */
const ReplayServerHealthEvent = Type.Object({
  ...ReplayServer.properties,
  camera: Type.Union([CameraHealth, Type.Null()], { description: 'The camera told of, as the health shows it; null: the disk or the clock' })
})
const healthEvents = {
  'replay_server.camera_failed': ReplayServerHealthEvent,
  'replay_server.camera_recovered': ReplayServerHealthEvent,
  'replay_server.disk_low': ReplayServerHealthEvent,
  'replay_server.clock_skewed': ReplayServerHealthEvent
} as const satisfies Partial<Record<EventType, TSchema>>

export const eventPayloads = Object.fromEntries(
  eventTypes.map((type) => [type, (healthEvents as Partial<Record<EventType, TSchema>>)[type] ?? payloadOf[type.slice(0, type.indexOf('.')) as keyof typeof payloadOf]])
) as unknown as Record<EventType, TSchema>

export const EventFeedQuery = Type.Object(
  {
    after: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'The cursor of a `_links.next` this feed gave; none: from the oldest event kept' })),
    types: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description: 'Comma-separated event types; none: every type' })),
    ipp: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Events per page, at most 100' }))
  },
  { additionalProperties: false }
)
export type EventFeedQuery = Static<typeof EventFeedQuery>

export const eventFeedRoutes = defineRoutes({
  feed: {
    method: 'GET',
    url: '/apis/v2/events',
    schema: {
      operationId: 'listEventFeed',
      summary: 'The event feed: what changed, oldest first, from a cursor',
      description:
        'Admins, by Bearer token or by the API key of an admin. Each event is a change the platform made (its type names the ' +
        'resource and the verb), with the resource as its GET route answered right after. Follow `_links.next` until a page ' +
        'holds fewer than `ipp` events, and keep its cursor: reading from it later answers exactly the events committed since, ' +
        'nothing missed and nothing twice. Events are kept EVENT_RETENTION_DAYS. The payload schema of each type is in this ' +
        "document's `x-webhooks`. Not in the reference (its Events section leaves them out).",
      tags: ['events'],
      security: apiKeyOrBearerSecurity,
      querystring: EventFeedQuery,
      response: { 200: EventFeedPage, 400: ErrorBody, ...AuthErrors }
    }
  }
})
