// Charging an order through the payment provider, recording its outcome and confirming it, for every
// room that sells: a membership's first charge and its renewals, a pause fee, a purchase, a package's
// refund. The order's idempotency key is what makes a retry safe (the provider acts once per key).
import { randomUUID } from 'node:crypto'
import type { ValidationError } from '@club/contract'
import type { PricedCharge } from '../billing/pricing.js'
import type { Clock } from '../clock.js'
import type { Db, DbOrTx } from '../db/database.js'
import type { OrdersTable } from '../db/schema.js'
import { BadGatewayError } from '../errors.js'
import { IdempotencyKeyReusedError, PaymentProviderError, type ChargeResult, type PaymentProvider, type SavedPaymentMethod } from '../payments/provider.js'
import { recordOrderEvent, recordOrderStatusEvent } from './service.js'

export async function savedMethod(db: DbOrTx, userId: string): Promise<SavedPaymentMethod | undefined> {
  const row = await db.selectFrom('payment_methods').selectAll().where('user_id', '=', userId).where('is_default', '=', 1).executeTakeFirst()
  if (!row) return undefined
  return {
    brand: row.brand,
    last4: row.last4,
    expMonth: row.exp_month,
    expYear: row.exp_year,
    providerCustomerRef: row.provider_customer_ref,
    providerMethodRef: row.provider_method_ref
  }
}

/**
 * The order of one attempt at a membership charge. Its key names the subscription, the period it
 * pays for and the attempt: the provider charges once per key, and the database holds at most one
 * live charge per (subscription, period) (orders_one_live_charge_per_period).
 */
export function newMembershipOrder(input: {
  userId: string
  creatorId: string
  subscriptionId: string
  kind: 'MEMBERSHIP' | 'MEMBERSHIP_RENEWAL'
  periodStart: string
  attempt: number
  priced: PricedCharge
  currency: string
  /** null: nothing to charge (a FREE plan), the order is paid as it is made. */
  provider: string | null
  now: Date
}): OrdersTable {
  return {
    id: randomUUID(),
    user_id: input.userId,
    creator_id: input.creatorId,
    kind: input.kind,
    membership_subscription_id: input.subscriptionId,
    period_start: input.periodStart,
    status: input.provider === null ? 'PAID' : 'PENDING',
    currency: input.currency,
    subtotal_minor: input.priced.subtotal,
    total_minor: input.priced.total,
    lines: JSON.stringify(input.priced.lines),
    fees: JSON.stringify(input.priced.fees),
    taxes: JSON.stringify(input.priced.taxes),
    provider: input.provider,
    provider_ref: null,
    idempotency_key: `membership:${input.subscriptionId}:period:${input.periodStart}:attempt:${input.attempt}`,
    failure_code: null,
    failure_message: null,
    created_at: input.now.toISOString(),
    updated_at: input.now.toISOString()
  }
}

/**
 * One attempt at an order's charge, off-session, to the payer's saved method: no saved method is a
 * decline (the member is told), an unreachable provider throws PaymentProviderError (nothing known
 * charged; a retry under the order's same key is safe).
 */
export async function chargeOrder(db: DbOrTx, provider: PaymentProvider, order: OrdersTable, description: string): Promise<ChargeResult> {
  const method = await savedMethod(db, order.user_id)
  if (!method) return { status: 'declined', reference: null, declineCode: 'payment_method_missing', message: 'the member has no saved payment method' }
  try {
    return await provider.charge({
      amount: order.total_minor,
      currency: order.currency,
      paymentMethod: method,
      idempotencyKey: order.idempotency_key,
      description,
      metadata: { orderId: order.id, membershipSubscriptionId: order.membership_subscription_id ?? '' }
    })
  } catch (err) {
    // The key was used with other details (the member saved another card before this attempt was
    // retried): the provider will refuse this key forever, so the attempt ends here as a refusal
    // and the next one is made under a key of its own.
    if (err instanceof IdempotencyKeyReusedError) {
      return { status: 'declined', reference: null, declineCode: 'payment_changed', message: 'the payment details changed while this charge was retried; it is made again as a new attempt' }
    }
    throw err
  }
}

/**
 * What the customer is told when their bank asks them to authenticate a charge made while they are
 * here (a first charge, a purchase): the secret their browser completes it with, handed out once.
 */
export function authenticationErrors(outcome: Extract<ChargeResult, { status: 'requires_authentication' }>): ValidationError[] {
  return [
    {
      code: 'requires_authentication',
      message: "the customer's bank asks them to authenticate this payment; complete it, then POST the confirm link",
      details: { clientSecret: outcome.clientSecret, nextActionUrl: outcome.nextActionUrl }
    }
  ]
}

/** What a charge's outcome makes of its order: its status, and why it failed. */
function orderOutcomeOf(outcome: ChargeResult): { orderStatus: OrdersTable['status']; failure: { code: string; message: string } | null } {
  if (outcome.status === 'succeeded') return { orderStatus: 'PAID', failure: null }
  if (outcome.status === 'declined') return { orderStatus: 'FAILED', failure: { code: outcome.declineCode, message: outcome.message } }
  return { orderStatus: 'REQUIRES_AUTHENTICATION', failure: null }
}

/** Writes a charge's outcome to its order (status, the provider's reference, why it failed). */
export async function recordOrderOutcome(tx: DbOrTx, orderId: string, outcome: ChargeResult, at: string): Promise<OrdersTable['status']> {
  const { orderStatus, failure } = orderOutcomeOf(outcome)
  await tx
    .updateTable('orders')
    .set({
      status: orderStatus,
      provider_ref: outcome.reference === '' ? null : outcome.reference,
      failure_code: failure?.code ?? null,
      failure_message: failure?.message ?? null,
      updated_at: at
    })
    .where('id', '=', orderId)
    .execute()
  await recordOrderStatusEvent(tx, orderId, orderStatus, new Date(at))
  return orderStatus
}

/**
 * A charge's state after the customer's authentication, as a confirm route asks it: a provider that
 * cannot be reached is a 502 (try again), never a 500, and changes nothing.
 */
export async function confirmCharge(provider: PaymentProvider, order: OrdersTable): Promise<ChargeResult> {
  try {
    return await provider.retrieve(order.provider_ref!)
  } catch (err) {
    if (err instanceof PaymentProviderError) throw new BadGatewayError(`the payment provider could not be reached; try again (${err.message})`)
    throw err
  }
}

/**
 * Pays out a PENDING refund order against the charge it gives back (`chargedReference`), under the
 * refund's own key, and records the outcome once: a second call finds it settled and changes nothing.
 * An unreachable provider throws PaymentProviderError with the refund still PENDING, for the caller to
 * say how it is retried.
 */
export async function refundOrder(db: Db, provider: PaymentProvider, refund: OrdersTable, chargedReference: string, clock: Clock): Promise<void> {
  const result = await provider.refund({ reference: chargedReference, amount: refund.total_minor, currency: refund.currency, idempotencyKey: refund.idempotency_key })
  const update =
    result.status === 'succeeded'
      ? { status: 'PAID' as const, provider_ref: result.reference, failure_code: null, failure_message: null }
      : { status: 'FAILED' as const, failure_code: 'refund_failed', failure_message: result.message.slice(0, 500) }
  const now = clock.now()
  await db.transaction().execute(async (tx) => {
    const done = await tx.updateTable('orders').set({ ...update, updated_at: now.toISOString() }).where('id', '=', refund.id).where('status', '=', 'PENDING').executeTakeFirst()
    // The refund order paid out is the refund integrators hear of; a second call finds it settled.
    if (Number(done.numUpdatedRows) === 1) await recordOrderEvent(tx, refund.id, update.status === 'PAID' ? 'order.refunded' : 'order.failed', now)
  })
}
