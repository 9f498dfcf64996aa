// What the scheduled-job tests share: a webhook secret, a signed delivery to a receiver, the runs
// recorded, and rows of other areas' tables written directly where no route makes them yet.
import { randomBytes, randomUUID } from 'node:crypto'
import type { JobName } from '@club/contract'
import { webhookSecrets } from '../config.js'
import type { OrderKind, OrderStatus } from '../db/schema.js'
import type { TestApp } from '../test-support/app.js'
import { signDelivery } from '../webhooks/signature.js'

export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`
export const SECRET = newSecret()

export interface Delivery {
  id?: string
  body?: string
  /** Unix seconds; the app clock's now by default. */
  timestamp?: number
  /** Sign with these secrets instead of SECRET. */
  secrets?: string[]
  headers?: Record<string, string>
}

/** POSTs a delivery signed as a Standard Webhooks sender would. */
export async function deliver(ctx: TestApp, path: string, delivery: Delivery = {}) {
  const body = delivery.body ?? ''
  const keys = (delivery.secrets ?? [SECRET]).flatMap((s) => webhookSecrets(s))
  const timestamp = delivery.timestamp ?? Math.floor(ctx.clock.now().getTime() / 1000)
  const headers = { ...signDelivery(keys, delivery.id ?? `msg_${randomUUID()}`, timestamp, body), ...delivery.headers }
  return ctx.app.inject({
    method: 'POST',
    url: path,
    headers: { ...headers, ...(body !== '' ? { 'content-type': 'application/json' } : {}) },
    ...(body !== '' ? { payload: body } : {})
  })
}

export const runsOf = (ctx: TestApp, job: JobName) =>
  ctx.app.db.selectFrom('job_runs').selectAll().where('job', '=', job).orderBy('started_at').orderBy('id').execute()

/** An order as the billing code would leave it (the tests need its amount, not how it was paid). */
export async function insertOrder(ctx: TestApp, userId: string, kind: OrderKind, status: OrderStatus, totalMinor: number, createdAt: string) {
  const id = randomUUID()
  await ctx.app.db
    .insertInto('orders')
    .values({
      id,
      user_id: userId,
      creator_id: userId,
      kind,
      membership_subscription_id: null,
      period_start: null,
      status,
      currency: ctx.config.CURRENCY,
      subtotal_minor: totalMinor,
      total_minor: totalMinor,
      lines: '[]',
      fees: '[]',
      taxes: '[]',
      provider: null,
      provider_ref: null,
      idempotency_key: id,
      failure_code: null,
      failure_message: null,
      created_at: createdAt,
      updated_at: createdAt
    })
    .execute()
  return id
}

/** A package with one item line, as the packages issue issues them (migration 0013's tables). */
export async function insertPackage(
  ctx: TestApp,
  userId: string,
  fields: { status?: 'ACTIVE' | 'EXHAUSTED' | 'EXPIRED' | 'CANCELED'; expiration: string; remaining: number; total?: number; source?: 'STAFF' | 'PURCHASE' | 'MEMBERSHIP'; createdAt?: string }
) {
  const id = randomUUID()
  const at = fields.createdAt ?? ctx.clock.now().toISOString()
  await ctx.app.db
    .insertInto('packages')
    .values({
      id,
      user_id: userId,
      template_id: null,
      template_version: null,
      display_name: '10-class pass',
      display_name_plural: '10-class passes',
      status: fields.status ?? 'ACTIVE',
      expiration_date: fields.expiration,
      source: fields.source ?? 'STAFF',
      order_id: null,
      paid_minor: 0,
      currency: null,
      grant_id: null,
      creator_id: null,
      canceled_at: null,
      refund_order_id: null,
      created_at: at,
      updated_at: at
    })
    .execute()
  const itemId = randomUUID()
  await ctx.app.db
    .insertInto('package_items')
    .values({ id: itemId, package_id: id, item: 1, type: 'EVENT_SIGNUP', display_name: 'class', display_name_plural: 'classes', total_items: fields.total ?? 10, remaining_items: fields.remaining, constraints: '{}' })
    .execute()
  return { id, itemId }
}
