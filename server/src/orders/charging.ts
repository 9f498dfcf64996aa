// Charging an order through the payment provider and recording its outcome, for every room that
// sells: a membership's first charge and its renewals, a pause fee, a purchase. The order's
// idempotency key is what makes a retried charge safe (the provider charges once per key).
import { randomUUID } from 'node:crypto'
import type { ValidationError } from '@club/contract'
import type { PricedCharge } from '../billing/pricing.js'
import type { DbOrTx } from '../db/database.js'
import type { MembershipSubscriptionsTable, OrdersTable } from '../db/schema.js'
import { IdempotencyKeyReusedError, type ChargeResult, type PaymentProvider, type SavedPaymentMethod } from '../payments/provider.js'
import { recordOrderStatusEvent } from './service.js'

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

/** What a charge's outcome makes of a first charge: the subscription's status, the order's, and what the member is told. */
export function firstChargeOutcome(outcome: ChargeResult) {
  let errors: ValidationError[] | null = null
  let status: MembershipSubscriptionsTable['status']
  let orderStatus: OrdersTable['status']
  let failure: { code: string; message: string } | null = null
  if (outcome.status === 'succeeded') {
    status = 'CONFIRMED'
    orderStatus = 'PAID'
  } else if (outcome.status === 'declined') {
    status = 'CHARGE_FAILED'
    orderStatus = 'FAILED'
    failure = { code: outcome.declineCode, message: outcome.message }
    errors = [{ code: outcome.declineCode, message: outcome.message, details: null }]
  } else {
    status = 'REQUIRES_AUTHENTICATION'
    orderStatus = 'REQUIRES_AUTHENTICATION'
    errors = [
      {
        code: 'requires_authentication',
        message: "the customer's bank asks them to authenticate this payment; complete it, then POST the confirm link",
        details: { clientSecret: outcome.clientSecret, nextActionUrl: outcome.nextActionUrl }
      }
    ]
  }
  return { status, orderStatus, failure, errors }
}

/** Writes a charge's outcome to its order (status, the provider's reference, why it failed). */
export async function recordOrderOutcome(tx: DbOrTx, orderId: string, outcome: ChargeResult, at: string): Promise<OrdersTable['status']> {
  const { orderStatus, failure } = firstChargeOutcome(outcome)
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
