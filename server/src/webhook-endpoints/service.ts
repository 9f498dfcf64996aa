// Webhook endpoints (issue 35): an admin's endpoints, their secrets (shown at creation and rotation
// only), their deliveries and the retry of one. Sending is the delivery worker's (worker.ts).
import { randomUUID } from 'node:crypto'
import type { BlockList } from 'node:net'
import type {
  EndpointDelivery,
  EndpointDeliveryListQuery,
  EventType,
  WebhookEndpoint,
  WebhookEndpointListQuery,
  WebhookEndpointPatch,
  WebhookEndpointRequest,
  WebhookEndpointWithSecret
} from '@club/contract'
import type { Clock } from '../clock.js'
import type { Db, DbOrTx } from '../db/database.js'
import type { EndpointDeliveriesTable, EndpointDeliveryAttemptsTable, WebhookEndpointsTable } from '../db/schema.js'
import { ConflictError, NotFoundError, quote } from '../errors.js'
import { paged, pageRequest } from '../paging.js'
import { checkEndpointUrl, type Lookup } from './addresses.js'
import { ROTATION_OVERLAP_MS, secretText } from './secrets.js'

export const ENDPOINTS_PATH = '/apis/v2/admin/webhook-endpoints'

export interface EndpointDeps {
  clock: Clock
  /** The server key secrets derive from (endpointKey). */
  key: string
  /** WEBHOOK_ALLOWED_NETWORKS. */
  allowedNetworks: BlockList
  lookup: Lookup
}

export function toWebhookEndpoint(row: WebhookEndpointsTable): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    eventTypes: JSON.parse(row.event_types) as EventType[],
    description: row.description,
    enabled: row.enabled === 1,
    disabledReason: row.disabled_reason,
    failingSince: row.failing_since,
    secretRotatedDate: row.secret_created_at,
    previousSecretExpiresDate: row.previous_secret_expires_at,
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: `${ENDPOINTS_PATH}/${row.id}` } }
  }
}

function withSecret(row: WebhookEndpointsTable, key: string): WebhookEndpointWithSecret {
  return { ...toWebhookEndpoint(row), secret: secretText(key, row.id, row.secret_generation) }
}

export async function endpointRow(db: DbOrTx, id: string): Promise<WebhookEndpointsTable> {
  const row = await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw new NotFoundError(`no webhook endpoint ${quote(id)}`)
  return row
}

/** The outbox's newest seq: an endpoint is sent the events committed after it was made. */
async function newestSeq(db: DbOrTx): Promise<number> {
  const row = await db.selectFrom('outbox_events').select((eb) => eb.fn.max('seq').as('seq')).executeTakeFirst()
  return Number(row?.seq ?? 0)
}

export async function createWebhookEndpoint(db: Db, body: WebhookEndpointRequest, deps: EndpointDeps): Promise<WebhookEndpointWithSecret> {
  const url = await checkEndpointUrl('body.url', body.url, deps.allowedNetworks, deps.lookup)
  const now = deps.clock.now().toISOString()
  const row = await db.transaction().execute(async (tx) => {
    const row: WebhookEndpointsTable = {
      id: randomUUID(),
      url,
      event_types: JSON.stringify(body.eventTypes),
      description: body.description ?? null,
      enabled: body.enabled === false ? 0 : 1,
      secret_generation: 1,
      secret_created_at: now,
      previous_secret_expires_at: null,
      after_seq: await newestSeq(tx),
      failing_since: null,
      disabled_reason: null,
      created_at: now,
      updated_at: now
    }
    await tx.insertInto('webhook_endpoints').values(row).execute()
    return row
  })
  return withSecret(row, deps.key)
}

export async function listWebhookEndpoints(db: Db, query: WebhookEndpointListQuery) {
  const request = pageRequest(query)
  const [rows, count] = await Promise.all([
    db.selectFrom('webhook_endpoints').selectAll().orderBy('created_at').orderBy('id').limit(request.ipp).offset(request.offset).execute(),
    db.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  return paged(rows.map(toWebhookEndpoint), Number(count.total), request, ENDPOINTS_PATH, {})
}

export async function getWebhookEndpoint(db: Db, id: string): Promise<WebhookEndpoint> {
  return toWebhookEndpoint(await endpointRow(db, id))
}

export async function updateWebhookEndpoint(db: Db, id: string, patch: WebhookEndpointPatch, deps: EndpointDeps): Promise<WebhookEndpoint> {
  const url = patch.url === undefined ? undefined : await checkEndpointUrl('body.url', patch.url, deps.allowedNetworks, deps.lookup)
  const now = deps.clock.now().toISOString()
  return db.transaction().execute(async (tx) => {
    const row = await endpointRow(tx, id)
    const changes: Partial<WebhookEndpointsTable> = {}
    if (url !== undefined) changes.url = url
    if (patch.eventTypes !== undefined) changes.event_types = JSON.stringify(patch.eventTypes)
    if (patch.description !== undefined) changes.description = patch.description
    if (patch.enabled !== undefined) {
      changes.enabled = patch.enabled ? 1 : 0
      // Enabled again (after the server gave up on it): its 3 days start afresh.
      if (patch.enabled && row.enabled === 0) Object.assign(changes, { failing_since: null, disabled_reason: null })
    }
    if (Object.keys(changes).length === 0) return toWebhookEndpoint(row)
    const updated = { ...row, ...changes, updated_at: now }
    await tx.updateTable('webhook_endpoints').set({ ...changes, updated_at: now }).where('id', '=', id).execute()
    return toWebhookEndpoint(updated)
  })
}

export async function deleteWebhookEndpoint(db: Db, id: string): Promise<void> {
  const deleted = await db.transaction().execute(async (tx) => {
    // The attempts and deliveries go with it (foreign keys cascade; said here for SQLite files made without them).
    const deliveries = tx.selectFrom('endpoint_deliveries').select('id').where('endpoint_id', '=', id)
    await tx.deleteFrom('endpoint_delivery_attempts').where('delivery_id', 'in', deliveries).execute()
    await tx.deleteFrom('endpoint_deliveries').where('endpoint_id', '=', id).execute()
    return tx.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst()
  })
  if (Number(deleted.numDeletedRows) !== 1) throw new NotFoundError(`no webhook endpoint ${quote(id)}`)
}

/** A new secret, shown in this answer only; the previous one signs too for ROTATION_OVERLAP_MS. */
export async function rotateWebhookEndpointSecret(db: Db, id: string, deps: EndpointDeps): Promise<WebhookEndpointWithSecret> {
  const now = deps.clock.now()
  const row = await db.transaction().execute(async (tx) => {
    const row = await endpointRow(tx, id)
    const changes = {
      secret_generation: row.secret_generation + 1,
      secret_created_at: now.toISOString(),
      previous_secret_expires_at: new Date(now.getTime() + ROTATION_OVERLAP_MS).toISOString(),
      updated_at: now.toISOString()
    }
    await tx.updateTable('webhook_endpoints').set(changes).where('id', '=', id).execute()
    return { ...row, ...changes }
  })
  return withSecret(row, deps.key)
}

function toEndpointDelivery(row: EndpointDeliveriesTable, attempts: EndpointDeliveryAttemptsTable[]): EndpointDelivery {
  const last = attempts.at(-1)
  return {
    id: row.id,
    endpoint: { id: row.endpoint_id },
    event: { id: row.event_id },
    type: row.event_type,
    resource: { id: row.resource_id },
    status: row.status,
    responseStatus: last?.response_status ?? null,
    durationMs: last?.duration_ms ?? null,
    nextAttemptDate: row.next_attempt_at,
    attempts: attempts.map((a) => ({ date: a.attempted_at, responseStatus: a.response_status, durationMs: a.duration_ms, error: a.error })),
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: `${ENDPOINTS_PATH}/${row.endpoint_id}/deliveries` } }
  }
}

async function attemptsOf(db: DbOrTx, deliveryIds: string[]): Promise<Map<string, EndpointDeliveryAttemptsTable[]>> {
  const byDelivery = new Map<string, EndpointDeliveryAttemptsTable[]>(deliveryIds.map((id) => [id, []]))
  if (deliveryIds.length === 0) return byDelivery
  const rows = await db.selectFrom('endpoint_delivery_attempts').selectAll().where('delivery_id', 'in', deliveryIds).orderBy('attempted_at').orderBy('id').execute()
  for (const row of rows) byDelivery.get(row.delivery_id)!.push(row)
  return byDelivery
}

/** An endpoint's deliveries, newest event first, each with all its attempts. */
export async function listEndpointDeliveries(db: Db, endpointId: string, query: EndpointDeliveryListQuery) {
  await endpointRow(db, endpointId)
  const request = pageRequest(query)
  let filtered = db.selectFrom('endpoint_deliveries').where('endpoint_id', '=', endpointId)
  if (query.status) filtered = filtered.where('status', '=', query.status)
  const [rows, count] = await Promise.all([
    filtered.selectAll().orderBy('event_seq', 'desc').limit(request.ipp).offset(request.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  const attempts = await attemptsOf(db, rows.map((r) => r.id))
  const items = rows.map((row) => toEndpointDelivery(row, attempts.get(row.id)!))
  return paged(items, Number(count.total), request, `${ENDPOINTS_PATH}/${endpointId}/deliveries`, { status: query.status })
}

/**
 * Makes a delivery due now, whatever its status, for a fresh round of attempts (the receiver lost
 * it, or the endpoint was down for longer than the retries lasted). The worker sends it with the same
 * webhook-id; a later event of the same resource waits behind it, as always.
 */
export async function retryEndpointDelivery(db: Db, endpointId: string, deliveryId: string, clock: Clock): Promise<EndpointDelivery> {
  const now = clock.now().toISOString()
  const row = await db.transaction().execute(async (tx) => {
    const endpoint = await endpointRow(tx, endpointId)
    const row = await tx.selectFrom('endpoint_deliveries').selectAll().where('id', '=', deliveryId).where('endpoint_id', '=', endpointId).executeTakeFirst()
    if (!row) throw new NotFoundError(`webhook endpoint ${quote(endpointId)} has no delivery ${quote(deliveryId)}`)
    if (endpoint.enabled === 0) throw new ConflictError(`webhook endpoint ${quote(endpointId)} is disabled: enable it (PATCH enabled=true) to send to it`)
    const kept = await tx.selectFrom('outbox_events').select('seq').where('seq', '=', row.event_seq).executeTakeFirst()
    if (!kept) throw new ConflictError(`event ${quote(row.event_id)} is older than the events kept (EVENT_RETENTION_DAYS): it cannot be sent again`)
    // A fresh round: 3 days from now, and its waits start again from 5 s (attempt_count counts the
    // round's attempts; every attempt stays in endpoint_delivery_attempts).
    const changes = { status: 'PENDING' as const, attempt_count: 0, next_attempt_at: now, due_since: now, updated_at: now }
    await tx.updateTable('endpoint_deliveries').set(changes).where('id', '=', deliveryId).execute()
    return { ...row, ...changes }
  })
  const attempts = await attemptsOf(db, [row.id])
  return toEndpointDelivery(row, attempts.get(row.id)!)
}
