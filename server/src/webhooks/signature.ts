// Standard Webhooks (standardwebhooks.com): a delivery carries webhook-id, webhook-timestamp (Unix
// seconds) and webhook-signature, a space-separated list of `v1,<base64 HMAC-SHA256>` over
// "<id>.<timestamp>.<body>" under the shared key. Written here rather than with the
// `standardwebhooks` package because that reads the real clock; the tests check both agree.
import { createHmac, timingSafeEqual } from 'node:crypto'
import { UnauthorizedError } from '../errors.js'

/** Deliveries more than this far from the server clock, either way, are refused (replays). */
export const TOLERANCE_SECONDS = 5 * 60

const CHALLENGE = 'StandardWebhooks'

function hmac(key: Buffer, id: string, timestamp: string, body: string): Buffer {
  return createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest()
}

/** The headers of a delivery of `body` signed with every key (several while keys rotate). */
export function signDelivery(keys: Buffer[], id: string, timestamp: number, body: string): Record<string, string> {
  const ts = String(timestamp)
  return {
    'webhook-id': id,
    'webhook-timestamp': ts,
    'webhook-signature': keys.map((key) => `v1,${hmac(key, id, ts, body).toString('base64')}`).join(' ')
  }
}

const header = (headers: Record<string, string | string[] | undefined>, name: string) => {
  const value = headers[name]
  return Array.isArray(value) ? undefined : value
}

/**
 * Checks a delivery against every configured key; answers its webhook-id. Any failure is a 401
 * saying which check failed, never what the right signature would be.
 */
export function verifyDelivery(keys: Buffer[], headers: Record<string, string | string[] | undefined>, body: string, now: Date): string {
  const id = header(headers, 'webhook-id')
  const timestamp = header(headers, 'webhook-timestamp')
  const signatures = header(headers, 'webhook-signature')
  if (!id || !timestamp || !signatures) {
    throw new UnauthorizedError('a webhook delivery needs the webhook-id, webhook-timestamp and webhook-signature headers (Standard Webhooks)', CHALLENGE)
  }
  if (!/^\d{1,12}$/.test(timestamp)) throw new UnauthorizedError('webhook-timestamp must be Unix seconds', CHALLENGE)
  const skew = Math.floor(now.getTime() / 1000) - Number(timestamp)
  if (skew > TOLERANCE_SECONDS) throw new UnauthorizedError('webhook-timestamp is more than 5 minutes old', CHALLENGE)
  if (-skew > TOLERANCE_SECONDS) throw new UnauthorizedError('webhook-timestamp is more than 5 minutes ahead of the server clock', CHALLENGE)
  const expected = keys.map((key) => hmac(key, id, timestamp, body))
  for (const signature of signatures.split(' ')) {
    const [version, value] = signature.split(',', 2)
    if (version !== 'v1' || !value) continue
    const given = Buffer.from(value, 'base64')
    // timingSafeEqual needs equal lengths; a wrong length tells nothing about the key.
    if (expected.some((mac) => mac.length === given.length && timingSafeEqual(mac, given))) return id
  }
  throw new UnauthorizedError('webhook-signature matches none of the keys in WEBHOOK_SECRET for this id, timestamp and body', CHALLENGE)
}
