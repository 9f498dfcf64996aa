// An endpoint's signing secret is never stored. It is derived: HMAC-SHA256 under the server's key
// (WEBHOOK_ENDPOINT_KEY, or one generated and kept in the settings table) over the endpoint id and a
// generation number, so the database holds only the generation and when it was made. Rotating raises
// the generation; the one before keeps signing until previous_secret_expires_at (24 h), and during
// that overlap every delivery carries both signatures (Standard Webhooks allows several).
import { createHmac } from 'node:crypto'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import type { Db } from '../db/database.js'
import type { WebhookEndpointsTable } from '../db/schema.js'
import { serverKey } from '../server-keys.js'

/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3600_000

export function endpointKey(db: Db, config: Pick<Config, 'WEBHOOK_ENDPOINT_KEY'>, clock: Clock): Promise<string> {
  return serverKey(db, config.WEBHOOK_ENDPOINT_KEY, 'webhook_endpoint_key', clock)
}

/** The signing key of one generation of an endpoint's secret: 32 bytes. */
export function signingKey(key: string, endpointId: string, generation: number): Buffer {
  return createHmac('sha256', key).update(`webhook-endpoint:${endpointId}:${generation}`).digest()
}

/** The secret as an integrator sets it in a Standard Webhooks library: whsec_ + base64 of the key. */
export function secretText(key: string, endpointId: string, generation: number): string {
  return `whsec_${signingKey(key, endpointId, generation).toString('base64')}`
}

/** The keys a delivery made at `now` is signed with: the current one, and the previous while it overlaps. */
export function signingKeys(key: string, row: Pick<WebhookEndpointsTable, 'id' | 'secret_generation' | 'previous_secret_expires_at'>, now: Date): Buffer[] {
  const keys = [signingKey(key, row.id, row.secret_generation)]
  if (row.previous_secret_expires_at !== null && row.previous_secret_expires_at > now.toISOString()) {
    keys.push(signingKey(key, row.id, row.secret_generation - 1))
  }
  return keys
}
