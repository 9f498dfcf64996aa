// Webhook endpoints (issue 35): where an admin has the platform send its events, signed per Standard
// Webhooks, retried for up to 3 days, every attempt kept and retryable.
import Type, { type Static } from 'typebox'
import { AuthErrors, DateTime, ErrorBody, IdParams, ItemRef, Links, Nullable, PageQuery, PagedCollection, bearerSecurity, defineRoutes } from './common.js'
import { EventType } from './events.js'

export const WebhookEndpoint = Type.Object({
  id: Type.String(),
  url: Type.String({ description: 'Where events are POSTed: http(s), at a public address unless WEBHOOK_ALLOWED_NETWORKS lists it' }),
  eventTypes: Type.Array(EventType, { description: 'The event types sent to it' }),
  description: Nullable(Type.String()),
  enabled: Type.Boolean({ description: 'false: nothing is sent (set by an admin, or by the server after 3 days of failed attempts)' }),
  disabledReason: Nullable(Type.String({ description: 'Why the server disabled it; null when enabled or disabled by an admin' })),
  failingSince: Nullable(DateTime({ description: 'Since when every attempt failed; null after any success' })),
  secretRotatedDate: DateTime({ description: 'When the current signing secret was made' }),
  previousSecretExpiresDate: Nullable(DateTime({ description: 'Until when the previous secret signs too (24 h after a rotation)' })),
  createdDate: DateTime(),
  updatedDate: DateTime(),
  _links: Links
})
export type WebhookEndpoint = Static<typeof WebhookEndpoint>

/** What creation and rotation answer: the only times the secret is shown. */
export const WebhookEndpointWithSecret = Type.Object({
  ...WebhookEndpoint.properties,
  secret: Type.String({ description: 'whsec_ + base64 of the signing key (Standard Webhooks); shown only in this answer' })
})
export type WebhookEndpointWithSecret = Static<typeof WebhookEndpointWithSecret>

const endpointFields = {
  url: Type.String({ minLength: 1, maxLength: 2000, description: 'http:// or https:// URL at a public address (or one WEBHOOK_ALLOWED_NETWORKS lists)' }),
  eventTypes: Type.Array(EventType, { minItems: 1, maxItems: 100, uniqueItems: true, description: 'The event types wanted' }),
  description: Nullable(Type.String({ maxLength: 500 })),
  enabled: Type.Boolean()
}

export const WebhookEndpointRequest = Type.Object(
  {
    url: endpointFields.url,
    eventTypes: endpointFields.eventTypes,
    description: Type.Optional(endpointFields.description),
    enabled: Type.Optional(Type.Boolean({ default: true }))
  },
  { additionalProperties: false }
)
export type WebhookEndpointRequest = Static<typeof WebhookEndpointRequest>

export const WebhookEndpointPatch = Type.Partial(Type.Object(endpointFields), { additionalProperties: false })
export type WebhookEndpointPatch = Static<typeof WebhookEndpointPatch>

export const EndpointDeliveryStatus = Type.Union(
  [Type.Literal('PENDING'), Type.Literal('RETRYING'), Type.Literal('SUCCEEDED'), Type.Literal('FAILED')],
  { description: 'PENDING: not tried yet; RETRYING: failed, tried again at nextAttemptDate; SUCCEEDED: a 2xx came; FAILED: given up after 3 days' }
)
export type EndpointDeliveryStatus = Static<typeof EndpointDeliveryStatus>

export const EndpointDeliveryAttempt = Type.Object({
  date: DateTime(),
  responseStatus: Nullable(Type.Integer({ description: "The receiver's HTTP status; null when no answer came" })),
  durationMs: Type.Integer({ minimum: 0 }),
  error: Nullable(Type.String({ description: 'Why no answer came (refused, timeout, address not allowed)' }))
})
export type EndpointDeliveryAttempt = Static<typeof EndpointDeliveryAttempt>

export const EndpointDelivery = Type.Object({
  id: Type.String(),
  endpoint: ItemRef,
  event: ItemRef,
  type: Type.String({ description: 'The event type' }),
  resource: ItemRef,
  status: EndpointDeliveryStatus,
  responseStatus: Nullable(Type.Integer({ description: "The last attempt's HTTP status" })),
  durationMs: Nullable(Type.Integer({ description: "The last attempt's duration" })),
  nextAttemptDate: Nullable(DateTime()),
  attempts: Type.Array(EndpointDeliveryAttempt, { description: 'Every attempt, oldest first' }),
  createdDate: DateTime(),
  updatedDate: DateTime(),
  _links: Links
})
export type EndpointDelivery = Static<typeof EndpointDelivery>

export const EndpointDeliveryListQuery = Type.Object(
  { status: Type.Optional(EndpointDeliveryStatus), ...PageQuery },
  { additionalProperties: false }
)
export type EndpointDeliveryListQuery = Static<typeof EndpointDeliveryListQuery>

export const WebhookEndpointListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false })
export type WebhookEndpointListQuery = Static<typeof WebhookEndpointListQuery>

export const EndpointDeliveryParams = Type.Object({
  id: IdParams.properties.id,
  deliveryId: Type.String({ minLength: 1, maxLength: 100 })
})
export type EndpointDeliveryParams = Static<typeof EndpointDeliveryParams>

const common = { tags: ['webhook-endpoints (admin)'], security: bearerSecurity }
const PATH = '/apis/v2/admin/webhook-endpoints'
const fieldErrors = 'a URL that is not http(s) or is at a private, loopback or link-local address (or resolves to one), an unknown event type'

export const webhookEndpointRoutes = defineRoutes({
  list: {
    method: 'GET',
    url: PATH,
    schema: {
      operationId: 'listWebhookEndpoints',
      ...common,
      summary: 'The webhook endpoints, oldest first',
      description: 'Admins. Never their secrets.',
      querystring: WebhookEndpointListQuery,
      response: { 200: PagedCollection(WebhookEndpoint), 400: ErrorBody, ...AuthErrors }
    }
  },
  create: {
    method: 'POST',
    url: PATH,
    schema: {
      operationId: 'createWebhookEndpoint',
      ...common,
      summary: 'Add a webhook endpoint; its signing secret is in this answer only',
      description:
        'Admins. Events committed from now on, of the types named, are POSTed to the URL per Standard Webhooks ' +
        '(webhook-id, webhook-timestamp, webhook-signature v1) with the body `{type, timestamp, data}`. ' +
        `400 naming the field: ${fieldErrors}.`,
      body: WebhookEndpointRequest,
      response: { 201: WebhookEndpointWithSecret, 400: ErrorBody, ...AuthErrors }
    }
  },
  get: {
    method: 'GET',
    url: `${PATH}/:id`,
    schema: { operationId: 'getWebhookEndpoint', ...common, summary: 'One webhook endpoint', description: 'Admins.', params: IdParams, response: { 200: WebhookEndpoint, 400: ErrorBody, ...AuthErrors, 404: ErrorBody } }
  },
  update: {
    method: 'PATCH',
    url: `${PATH}/:id`,
    schema: {
      operationId: 'updateWebhookEndpoint',
      ...common,
      summary: 'Change a webhook endpoint',
      description:
        'Admins. Any of url, eventTypes, description, enabled. Enabling an endpoint the server disabled starts its attempts afresh; ' +
        `events committed while it was disabled are sent then. 400 naming the field: ${fieldErrors}.`,
      params: IdParams,
      body: WebhookEndpointPatch,
      response: { 200: WebhookEndpoint, 400: ErrorBody, ...AuthErrors, 404: ErrorBody }
    }
  },
  delete: {
    method: 'DELETE',
    url: `${PATH}/:id`,
    schema: {
      operationId: 'deleteWebhookEndpoint',
      ...common,
      summary: 'Remove a webhook endpoint and its deliveries',
      description: 'Admins. Nothing more is sent to it.',
      params: IdParams,
      response: { 204: Type.Null(), 400: ErrorBody, ...AuthErrors, 404: ErrorBody }
    }
  },
  rotateSecret: {
    method: 'POST',
    url: `${PATH}/:id/secret`,
    schema: {
      operationId: 'rotateWebhookEndpointSecret',
      ...common,
      summary: "Make a new signing secret; the old one keeps signing for 24 h",
      description:
        'Admins. The new secret is in this answer only. For 24 h every delivery carries two v1 signatures, one per secret, ' +
        'so the receiver can switch at its own pace; then only the new one. Rotating again within the 24 h ends the oldest at once.',
      params: IdParams,
      response: { 200: WebhookEndpointWithSecret, 400: ErrorBody, ...AuthErrors, 404: ErrorBody }
    }
  },
  listDeliveries: {
    method: 'GET',
    url: `${PATH}/:id/deliveries`,
    schema: {
      operationId: 'listEndpointDeliveries',
      ...common,
      summary: "An endpoint's deliveries, newest first, each with every attempt",
      description: 'Admins. 404: no such endpoint.',
      params: IdParams,
      querystring: EndpointDeliveryListQuery,
      response: { 200: PagedCollection(EndpointDelivery), 400: ErrorBody, ...AuthErrors, 404: ErrorBody }
    }
  },
  retryDelivery: {
    method: 'POST',
    url: `${PATH}/:id/deliveries/:deliveryId/retry`,
    schema: {
      operationId: 'retryEndpointDelivery',
      ...common,
      summary: 'Send a delivery again now',
      description:
        'Admins. Whatever its status (a receiver that lost one asks for it again): it is due at once, with the same webhook-id. ' +
        '404: no such endpoint or delivery of it; 409: the endpoint is disabled, or the event is older than the feed keeps.',
      params: EndpointDeliveryParams,
      response: { 202: EndpointDelivery, 400: ErrorBody, ...AuthErrors, 404: ErrorBody, 409: ErrorBody }
    }
  }
})
