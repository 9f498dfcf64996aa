// The CHARGE membership job: renew what is due, retry what failed (GRACE every other day, HOLD
// every third), move conditions, and end cancellations and memberships whose HOLD ran out.
// A plain function of the database, the date it runs for, the clock and the payment provider.
// Each subscription is one unit of work: decided and claimed in one IMMEDIATE transaction, charged
// outside it, recorded in another. The claim is an order row, at most one live per (subscription,
// period) by a unique index, so two runs at once (the CLI and the server, two servers) charge once.
import { randomUUID } from 'node:crypto'
import { setImmediate } from 'node:timers/promises'
import type { UserMembershipSubscriptionSummary } from '@club/contract'
import { currencyExponent, fromMinor } from '../billing/money.js'
import { chargeLines, priceCharge } from '../billing/pricing.js'
import type { Clock } from '../clock.js'
import type { Db, DbOrTx } from '../db/database.js'
import { forUpdate, rowLocked } from '../db/sql.js'
import type { MembershipSubscriptionsTable, OrdersTable } from '../db/schema.js'
import { chargedMembers, endEnrollments } from '../memberships/enrollment-rows.js'
import { membershipRow, toPlan, type Plan } from '../memberships/plans.js'
import { DRAFT_LIFETIME_MS, subscriptionPath } from '../memberships/subscription-rows.js'
import { recordSubscriptionEvent } from '../memberships/subscription-view.js'
import { chargeOrder, newMembershipOrder } from '../orders/charging.js'
import { recordOrderStatusEvent } from '../orders/service.js'
import { PaymentProviderError, type ChargeResult, type PaymentProvider } from '../payments/provider.js'
import { afterCharge, decideRenewal, type RenewalStep } from './renewal-steps.js'

/** A claim (PENDING order) older than this was left by a run that stopped mid-charge: it is charged again under its own key. */
const STALE_CLAIM_MS = 15 * 60_000

export interface JobDeps {
  clock: Clock
  provider: PaymentProvider
}

export interface JobOutcome {
  id: string
  type: 'CHARGE'
  date: string
  startedDate: string
  finishedDate: string
  counts: Record<string, number>
  users: UserMembershipSubscriptionSummary[]
}

type UnitResult =
  | { outcome: 'renewed' | 'retried_paid' | 'declined' | 'grace' | 'hold'; subscriptionId: string; userId: string; amount: number; currency: string }
  | {
      outcome: 'cancelled' | 'hold_expired' | 'claimed_elsewhere' | 'unchanged' | 'provider_unreachable' | 'paid_needs_review' | 'changed_meanwhile'
      subscriptionId: string
    }

/** Runs the CHARGE job for `date`: every due subscription, once, in the order they fell due. */
export async function runChargeJob(db: Db, date: Date, deps: JobDeps): Promise<JobOutcome> {
  const id = randomUUID()
  const started = deps.clock.now().toISOString()
  const at = date.toISOString()
  await db.insertInto('membership_job_runs').values({ id, type: 'CHARGE', date: at, started_at: started, finished_at: null, counts: '{}', error: null }).execute()
  const due = await db
    .selectFrom('membership_subscriptions')
    .select('id')
    .where('status', '=', 'CONFIRMED')
    .where('charge_type', 'in', ['MONTHLY', 'SIX_MONTHS', 'YEARLY'])
    .where((eb) => eb.or([eb('end_date', 'is', null), eb('end_date', '>', at)]))
    .where((eb) =>
      eb.or([
        eb.and([eb('condition', '=', 'VALID'), eb('next_charge_date', '<=', at)]),
        eb('next_retry_date', '<=', at),
        eb('condition', '=', 'HOLD'),
        eb.and([eb('cancellation_requested_at', 'is not', null), eb('billing_cycle_end', '<=', at)])
      ])
    )
    .orderBy('next_charge_date')
    .orderBy('id')
    .execute()
  // A run that charged nothing says so (BILLING.md's jobs record what they did).
  const counts: Record<string, number> = { renewed: 0 }
  const users: UserMembershipSubscriptionSummary[] = []
  const plans = new Map<string, Plan>()
  const expired = await expireDrafts(db, date, deps.clock.now())
  if (expired > 0) counts.draft_expired = expired
  const abandoned = await expirePendingPurchases(db, date, deps.clock.now())
  if (abandoned > 0) counts.purchase_expired = abandoned
  const ended = await tellEndedCancellations(db, date)
  if (ended > 0) counts.cancellation_ended = ended
  for (const { id: subscriptionId } of due) {
    // A turn of the event loop between subscriptions: SQLite's calls block it, and with a provider that
    // answers without I/O nothing else would, so requests would wait for the whole run (1.3 s for 900).
    await setImmediate()
    const result = await renewOne(db, subscriptionId, date, deps, plans)
    counts[result.outcome] = (counts[result.outcome] ?? 0) + 1
    if ('amount' in result) {
      users.push({
        id: result.subscriptionId,
        user: { id: result.userId },
        amount: fromMinor(result.amount, currencyExponent(result.currency)),
        _links: { self: { href: subscriptionPath(result.subscriptionId) } }
      })
    }
  }
  const finished = deps.clock.now().toISOString()
  await db.updateTable('membership_job_runs').set({ finished_at: finished, counts: JSON.stringify(counts) }).where('id', '=', id).execute()
  return { id, type: 'CHARGE', date: at, startedDate: started, finishedDate: finished, counts, users }
}

/**
 * A DRAFT (made, never paid: the provider could not be reached, or the process stopped mid-charge)
 * older than 23 hours is given up (BILLING.md): its order fails as expired and the member may order
 * again. Should the provider in fact have charged it, the FAILED order with failure 'draft_expired'
 * and its idempotency key are what an operator refunds from. A first charge left waiting for the
 * customer's authentication as long is given up too (CHARGE_FAILED), or the member could never buy
 * that type again.
 */
async function expireDrafts(db: Db, date: Date, now: Date): Promise<number> {
  const before = new Date(date.getTime() - DRAFT_LIFETIME_MS).toISOString()
  const at = now.toISOString()
  const expiry = {
    DRAFT: { code: 'draft_expired', message: 'the order was not paid within 23 hours and was given up; order again' },
    REQUIRES_AUTHENTICATION: { code: 'authentication_expired', message: 'the payment was not authenticated within 23 hours and was given up; order again' }
  } as const
  return db.transaction().execute(async (tx) => {
    const stale = await tx
      .selectFrom('membership_subscriptions')
      .select(['id', 'status', 'last_order_id'])
      .where('status', 'in', ['DRAFT', 'REQUIRES_AUTHENTICATION'])
      .where('created_at', '<=', before)
      .where((eb) => eb.or([eb('errors', 'is', null), eb('status', '=', 'REQUIRES_AUTHENTICATION')]))
      .execute()
    for (const subscription of stale) {
      const { code, message } = expiry[subscription.status as keyof typeof expiry]
      if (subscription.last_order_id) {
        await tx
          .updateTable('orders')
          .set({ status: 'FAILED', failure_code: code, failure_message: message, updated_at: at })
          .where('id', '=', subscription.last_order_id)
          .where('status', 'in', ['PENDING', 'REQUIRES_AUTHENTICATION'])
          .execute()
        await recordOrderStatusEvent(tx, subscription.last_order_id, 'FAILED', now)
      }
      await tx
        .updateTable('membership_subscriptions')
        .set({
          status: subscription.status === 'DRAFT' ? 'DRAFT' : 'CHARGE_FAILED',
          errors: JSON.stringify([{ code, message, details: null }]),
          next_charge_date: null,
          next_grant_date: null,
          billing_cycle_start: null,
          billing_cycle_end: null,
          end_date: null,
          updated_at: at
        })
        .where('id', '=', subscription.id)
        .execute()
      if (subscription.status === 'REQUIRES_AUTHENTICATION') await recordSubscriptionEvent(tx, subscription.id, 'membership_subscription.charge_failed', now)
    }
    return stale.length
  })
}

/**
 * A purchase (a PACKAGE, merchandise) left PENDING for a day, its provider never reached and its
 * confirm never asked, is given up as a membership draft is: FAILED 'order_expired', so its confirm
 * link no longer charges a card the buyer has forgotten about. Nothing was issued for it (packages
 * are issued with the payment). Should the provider in fact have charged it, the FAILED order and
 * its idempotency key are what an operator refunds from.
 */
async function expirePendingPurchases(db: Db, date: Date, now: Date): Promise<number> {
  const before = new Date(date.getTime() - DRAFT_LIFETIME_MS).toISOString()
  // Each order given up is told to integrators (order.failed) in the transaction that gives it up.
  return db.transaction().execute(async (tx) => {
    const given = await tx
      .updateTable('orders')
      .set({ status: 'FAILED', failure_code: 'order_expired', failure_message: 'the order was not paid within 23 hours and was given up; order again', updated_at: now.toISOString() })
      .where('kind', '=', 'PURCHASE')
      .where('status', '=', 'PENDING')
      .where('membership_subscription_id', 'is', null)
      .where('created_at', '<=', before)
      .returning('id')
      .execute()
    for (const { id } of given) await recordOrderStatusEvent(tx, id, 'FAILED', now)
    return given.length
  })
}

async function planOf(db: DbOrTx, membershipId: string, plans: Map<string, Plan>): Promise<Plan> {
  let plan = plans.get(membershipId)
  if (!plan) plans.set(membershipId, (plan = toPlan(await membershipRow(db, membershipId))))
  return plan
}

/**
 * The cancellations asked for at a cycle's end whose end date has passed: their end date was set when
 * asked, so nothing else changes when it comes; integrators are told `membership_subscription.canceled`
 * here, once (claimed by a conditional update, so two runs never both tell one).
 */
async function tellEndedCancellations(db: Db, date: Date): Promise<number> {
  const ended = await db
    .selectFrom('membership_subscriptions')
    .select('id')
    .where('cancellation_requested_at', 'is not', null)
    .where('end_date', '<=', date.toISOString())
    .where('cancellation_told', 'is', null)
    .orderBy('end_date')
    .execute()
  let told = 0
  for (const { id } of ended) {
    await db.transaction().execute(async (tx) => {
      const claimed = await tx.updateTable('membership_subscriptions').set({ cancellation_told: 1 }).where('id', '=', id).where('cancellation_told', 'is', null).executeTakeFirst()
      if (Number(claimed.numUpdatedRows) !== 1) return
      await recordSubscriptionEvent(tx, id, 'membership_subscription.canceled', date)
      told++
    })
  }
  return told
}

async function renewOne(db: Db, subscriptionId: string, date: Date, deps: JobDeps, plans: Map<string, Plan>): Promise<UnitResult> {
  const at = date.toISOString()
  const now = deps.clock.now()
  // Decide and claim in one transaction holding the subscription's row (issue 37: its lock keeps
  // "one charge per cycle"): a parallel run waits, then sees this one's claim.
  const claim = await rowLocked(db, async (tx) => {
    const row = await forUpdate(tx, tx.selectFrom('membership_subscriptions').selectAll().where('id', '=', subscriptionId)).executeTakeFirstOrThrow()
    const plan = await planOf(tx, row.membership_id, plans)
    const step = decideRenewal(row, plan, date)
    if (step.kind === 'none') return { kind: 'done' as const, result: { outcome: 'unchanged' as const, subscriptionId } }
    if (step.kind === 'end') {
      await tx.updateTable('membership_subscriptions').set({ end_date: step.at, updated_at: at }).where('id', '=', subscriptionId).execute()
      await endEnrollments(tx, subscriptionId, step.at)
      await recordSubscriptionEvent(tx, subscriptionId, 'membership_subscription.canceled', date)
      return { kind: 'done' as const, result: { outcome: step.reason, subscriptionId } }
    }
    const orders = await tx
      .selectFrom('orders')
      .selectAll()
      .where('membership_subscription_id', '=', subscriptionId)
      .where('period_start', '=', step.periodStart)
      .execute()
    const live = orders.find((o) => o.status === 'PENDING' || o.status === 'PAID' || o.status === 'REQUIRES_AUTHENTICATION')
    if (live) {
      // Charging now elsewhere, or paid and recorded by a run this one waited for; a claim left by a
      // run that stopped mid-charge is charged again under its own key (the provider charges once).
      const stale = live.status === 'PENDING' && now.getTime() - Date.parse(live.updated_at) > STALE_CLAIM_MS
      if (!stale) return { kind: 'done' as const, result: { outcome: 'claimed_elsewhere' as const, subscriptionId } }
      return { kind: 'charge' as const, row, plan, step, order: live }
    }
    // The members enrolled when the period begins are in its price; one added later is charged from the next.
    const members = await chargedMembers(tx, subscriptionId, step.periodStart)
    const amounts = { priceMinor: row.price_minor, initiationFeeMinor: row.initiation_fee_minor, additionalMemberFeeMinor: row.additional_member_fee_minor }
    const priced = priceCharge(chargeLines(plan, amounts, { first: false, members }), plan.fees, plan.taxes)
    const order = newMembershipOrder({
      userId: row.member_id,
      creatorId: row.member_id,
      subscriptionId,
      kind: 'MEMBERSHIP_RENEWAL',
      periodStart: step.periodStart,
      attempt: orders.length + 1,
      priced,
      currency: row.currency,
      provider: deps.provider.name,
      now
    })
    await tx.insertInto('orders').values(order).execute()
    return { kind: 'charge' as const, row, plan, step, order }
  })
  if (claim.kind === 'done') return claim.result

  const { row, plan, step, order } = claim
  let outcome: ChargeResult
  try {
    outcome = await chargeOrder(db, deps.provider, order, `${plan.displayName} membership renewal`)
  } catch (err) {
    // Nothing is known to be charged: the claim stays PENDING and a later run charges it again
    // under the same key once it is stale.
    if (err instanceof PaymentProviderError) return { outcome: 'provider_unreachable', subscriptionId }
    throw err
  }
  return record(db, row, plan, step, order, outcome, date)
}

async function record(
  db: Db,
  row: MembershipSubscriptionsTable,
  plan: Plan,
  step: Extract<RenewalStep, { kind: 'charge' }>,
  order: OrdersTable,
  outcome: ChargeResult,
  date: Date
): Promise<UnitResult> {
  const at = date.toISOString()
  const next = afterCharge(row, plan, step, outcome, date, order.id)
  // The subscription's row lock again (issue 37), as the claim took it.
  const applied = await rowLocked(db, async (tx) => {
    const paid = outcome.status === 'succeeded'
    // The subscription may have changed while the provider answered (a cancellation, a staff
    // correction): the charge is applied only to the state it was decided on, and only the fields a
    // charge moves are written, so nothing else done meanwhile is undone.
    const current = await forUpdate(tx, tx.selectFrom('membership_subscriptions').selectAll().where('id', '=', row.id)).executeTakeFirstOrThrow()
    const unchanged = (['condition', 'cycle_index', 'next_charge_date', 'end_date', 'cancellation_requested_at', 'anchor_local'] as const).every(
      (field) => current[field] === row[field]
    )
    await tx
      .updateTable('orders')
      .set({
        status: paid ? 'PAID' : 'FAILED',
        provider_ref: outcome.reference,
        failure_code: paid ? (unchanged ? null : 'needs_review') : outcome.status === 'declined' ? outcome.declineCode : 'requires_authentication',
        failure_message: paid
          ? unchanged
            ? null
            : 'paid while the subscription was changed (cancelled or corrected); not applied to it: review for a refund'
          : outcome.status === 'declined'
            ? outcome.message
            : "the member's bank asks them to authenticate the renewal",
        updated_at: at
      })
      .where('id', '=', order.id)
      .execute()
    await recordOrderStatusEvent(tx, order.id, paid ? 'PAID' : 'FAILED', date)
    if (!unchanged) return false
    await tx
      .updateTable('membership_subscriptions')
      .set({
        anchor_local: next.anchor_local,
        cycle_index: next.cycle_index,
        billing_cycle_start: next.billing_cycle_start,
        billing_cycle_end: next.billing_cycle_end,
        next_charge_date: next.next_charge_date,
        last_charge_date: next.last_charge_date,
        next_retry_date: next.next_retry_date,
        condition: next.condition,
        condition_updated_at: next.condition_updated_at,
        errors: next.errors,
        last_order_id: next.last_order_id,
        updated_at: at
      })
      .where('id', '=', row.id)
      .execute()
    await recordSubscriptionEvent(tx, row.id, paid ? 'membership_subscription.renewed' : 'membership_subscription.charge_failed', date)
    if (next.condition !== current.condition) await recordSubscriptionEvent(tx, row.id, 'membership_subscription.condition_changed', date)
    return true
  })
  if (!applied) return { outcome: outcome.status === 'succeeded' ? 'paid_needs_review' : 'changed_meanwhile', subscriptionId: row.id }
  const charged = { subscriptionId: row.id, userId: row.member_id, amount: order.total_minor, currency: order.currency }
  if (outcome.status === 'succeeded') return { outcome: step.retry ? 'retried_paid' : 'renewed', ...charged }
  if (next.condition === 'HOLD' && row.condition !== 'HOLD') return { outcome: 'hold', ...charged }
  if (next.condition === 'GRACE' && row.condition === 'VALID') return { outcome: 'grace', ...charged }
  return { outcome: 'declined', ...charged }
}
