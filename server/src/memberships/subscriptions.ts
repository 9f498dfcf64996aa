// Buying a membership: one computation for the preview and the order; the order's first charge
// through the payment provider, at most once per (subscription, cycle) under the order's unique key.
import { randomUUID } from 'node:crypto'
import type { MembershipSubscription, MembershipSubscriptionRequest, ValidationError } from '@club/contract'
import { isStaff, type Actor } from '../actor.js'
import { anchorAt, chargeDate, daysAfter, grantDate, isValidTimezone, type Anchor, type RenewalPeriod } from '../billing/calendar.js'
import { chargeLines, priceCharge, type PricedCharge } from '../billing/pricing.js'
import type { Clock } from '../clock.js'
import type { Db, DbOrTx } from '../db/database.js'
import type { MembershipSubscriptionsTable, OrdersTable } from '../db/schema.js'
import { BadGatewayError, BadRequestError, ConflictError, ForbiddenError, NotFoundError } from '../errors.js'
import { PaymentProviderError, type ChargeResult, type PaymentProvider } from '../payments/provider.js'
import { activeEnrollmentOfType, addOwnerEnrollment } from './enrollment-rows.js'
import { correctionsOf } from './corrections.js'
import { membershipRow, toPlan, type Plan } from './plans.js'
import { authenticationErrors, chargeOrder, confirmCharge, newMembershipOrder, recordOrderOutcome, savedMethod } from '../orders/charging.js'
import { DRAFT_LIFETIME_MS, visibleRow } from './subscription-rows.js'
import { currentCharge, recordSubscriptionEvent, storedErrors, toSubscription } from './subscription-view.js'

export interface SubscriptionDeps {
  clock: Clock
  provider: PaymentProvider
  /** CLUB_TIMEZONE: where renewal dates fall unless the request names another zone. */
  clubTimezone: string
}

/** The dates of a subscription confirmed at `start` (BILLING.md, "Calendars"). */
export function firstPeriod(plan: Plan, anchor: Anchor, start: Date) {
  if (plan.chargeType === 'NON_RECURRING') {
    const end = daysAfter(anchor, plan.durationDays!)
    return { billingCycleStart: start, billingCycleEnd: end, nextChargeDate: null, endDate: end, nextGrantDate: grantDate(anchor, 0) }
  }
  if (plan.chargeType === 'FREE') {
    return { billingCycleStart: start, billingCycleEnd: null, nextChargeDate: null, endDate: null, nextGrantDate: grantDate(anchor, 0) }
  }
  const period = plan.chargeType as RenewalPeriod
  const end = chargeDate(anchor, period, 1)
  return { billingCycleStart: start, billingCycleEnd: end, nextChargeDate: end, endDate: null, nextGrantDate: grantDate(anchor, 0) }
}

interface Priced {
  plan: Plan
  charge: PricedCharge
  anchor: Anchor
  start: Date
}

/** The member a request is for, checked against who asks and what they may buy. */
async function buyer(db: DbOrTx, request: MembershipSubscriptionRequest, actor: Actor, plan: Plan): Promise<string> {
  const memberId = request.member?.id ?? actor.id
  if (memberId !== actor.id && !isStaff(actor)) throw new ForbiddenError('only staff may buy a membership for someone else')
  if (!isStaff(actor) && !plan.selfService) throw new ForbiddenError('this membership is sold by staff; ask at the desk')
  if (plan.status !== 'ACTIVE') throw new ConflictError('this membership is no longer on sale')
  if (memberId !== actor.id && !(await db.selectFrom('users').select('id').where('id', '=', memberId).executeTakeFirst())) {
    throw new BadRequestError(`member.id: no user ${memberId.slice(0, 100)}`)
  }
  return memberId
}

/** The priced first charge and schedule of a request: the one computation PREVIEW and ORDER share. */
function price(plan: Plan, timezone: string, start: Date): Priced & { row: Omit<MembershipSubscriptionsTable, 'id' | 'member_id' | 'creator_id'> } {
  const anchor = anchorAt(start, timezone)
  const amounts = { priceMinor: plan.priceMinor, initiationFeeMinor: plan.initiationFeeMinor, additionalMemberFeeMinor: plan.additionalMemberFeeMinor }
  const charge = priceCharge(chargeLines(plan, amounts, { first: true }), plan.fees, plan.taxes)
  const period = firstPeriod(plan, anchor, start)
  const iso = (d: Date | null) => (d === null ? null : d.toISOString())
  const now = start.toISOString()
  return {
    plan,
    charge,
    anchor,
    start,
    row: {
      membership_id: plan.id,
      status: 'DRAFT',
      condition: 'VALID',
      condition_updated_at: now,
      timezone,
      anchor_local: anchor.local,
      charge_type: plan.chargeType,
      currency: plan.currency,
      price_minor: plan.priceMinor,
      initiation_fee_minor: plan.initiationFeeMinor,
      additional_member_fee_minor: plan.additionalMemberFeeMinor,
      duration_days: plan.durationDays,
      start_date: now,
      end_date: iso(period.endDate),
      cancellation_requested_at: null,
      cycle_index: 0,
      billing_cycle_start: iso(period.billingCycleStart),
      billing_cycle_end: iso(period.billingCycleEnd),
      last_charge_date: null,
      next_charge_date: iso(period.nextChargeDate),
      next_retry_date: null,
      next_grant_date: iso(period.nextGrantDate),
      last_grant_date: null,
      last_order_id: null,
      errors: null,
      created_at: now,
      updated_at: now
    }
  }
}

function timezoneOf(request: MembershipSubscriptionRequest, deps: SubscriptionDeps): string {
  const timezone = request.timezone ?? deps.clubTimezone
  if (!isValidTimezone(timezone)) throw new BadRequestError(`timezone: ${JSON.stringify(timezone.slice(0, 40))} is not an IANA timezone`)
  return timezone
}

/** The member's open subscriptions of a type, newest first; a DRAFT older than its lifetime no longer counts. */
async function openOfType(tx: DbOrTx, memberId: string, type: Plan['type'], now: Date): Promise<MembershipSubscriptionsTable[]> {
  const open = await tx
    .selectFrom('membership_subscriptions as s')
    .innerJoin('memberships as m', 'm.id', 's.membership_id')
    .selectAll('s')
    .where('s.member_id', '=', memberId)
    .where('m.type', '=', type)
    .where('s.status', 'in', ['DRAFT', 'REQUIRES_AUTHENTICATION', 'CONFIRMED'])
    .where((eb) => eb.or([eb('s.end_date', 'is', null), eb('s.end_date', '>', now.toISOString())]))
    .orderBy('s.created_at', 'desc')
    .execute()
  return open.filter((row) => !(row.status === 'DRAFT' && now.getTime() - Date.parse(row.created_at) > DRAFT_LIFETIME_MS))
}

/**
 * Enrolled in someone else's membership of this type counts as holding one (their own enrollment as
 * an owner goes with an open subscription).
 */
async function refuseEnrolledElsewhere(tx: DbOrTx, memberId: string, type: Plan['type'], now: Date): Promise<void> {
  const enrolled = await activeEnrollmentOfType(tx, memberId, type, now.toISOString())
  if (enrolled && enrolled.is_owner === 0) {
    throw new ConflictError(`the member is enrolled in a ${type} membership (enrollment ${enrolled.id} in subscription ${enrolled.subscription_id})`)
  }
}

/**
 * A subscription whose first period a product purchase pays (products/purchases.ts): written DRAFT in
 * the transaction that writes the purchase's order, under the same rule as an ORDER here (one open
 * subscription per type), and settled by settleFirstCharge in the transaction that records the charge.
 */
export async function draftPurchasedSubscription(
  tx: DbOrTx,
  input: { id: string; plan: Plan; memberId: string; creatorId: string; orderId: string; timezone: string; now: Date }
): Promise<MembershipSubscriptionsTable> {
  const { plan, memberId, now } = input
  if (plan.status !== 'ACTIVE') throw new ConflictError(`the membership ${plan.id} is no longer on sale`)
  const open = (await openOfType(tx, memberId, plan.type, now))[0]
  if (open) throw new ConflictError(`the member already holds a ${plan.type} membership (subscription ${open.id}, ${open.status})`)
  await refuseEnrolledElsewhere(tx, memberId, plan.type, now)
  const row: MembershipSubscriptionsTable = {
    ...price(plan, input.timezone, now).row,
    id: input.id,
    member_id: memberId,
    creator_id: input.creatorId,
    last_order_id: input.orderId
  }
  await tx.insertInto('membership_subscriptions').values(row).execute()
  await recordSubscriptionEvent(tx, row.id, 'membership_subscription.created', now)
  return row
}

export interface CreatedSubscription {
  created: boolean
  subscription: MembershipSubscription
}

/**
 * PREVIEW answers what ORDER would do and writes nothing. ORDER writes the subscription (DRAFT) and
 * its order (PENDING) in one transaction, charges outside it, then records the outcome. A member
 * holds one open subscription per membership type: a second ORDER is a 409, except that an ORDER
 * for the plan of an unpaid DRAFT (the provider could not be reached) retries that DRAFT's charge
 * under the same order, so a retried request cannot charge twice.
 */
export async function createSubscription(db: Db, request: MembershipSubscriptionRequest, actor: Actor, deps: SubscriptionDeps): Promise<CreatedSubscription> {
  const plan = toPlan(await membershipRow(db, request.membership.id).catch((err) => {
    if (err instanceof NotFoundError) throw new BadRequestError(`membership.id: no membership ${request.membership.id.slice(0, 100)}`)
    throw err
  }))
  const memberId = await buyer(db, request, actor, plan)
  const timezone = timezoneOf(request, deps)
  const now = deps.clock.now()
  const priced = price(plan, timezone, now)
  const preview = { ...priced.row, id: '', member_id: memberId, creator_id: actor.id }
  if (request.mode === 'PREVIEW') {
    return { created: false, subscription: toSubscription(preview, plan, priced.charge, { mode: 'PREVIEW', id: null, now, summary: true, errors: null }) }
  }

  const method = plan.chargeType === 'FREE' ? undefined : await savedMethod(db, memberId)
  if (plan.chargeType !== 'FREE' && !method) {
    throw new BadRequestError(memberId === actor.id ? 'add a payment method first (users/current/payment-method)' : 'the member has no saved payment method')
  }

  // Who holds what is decided inside one IMMEDIATE transaction, so two orders (or two processes) queue.
  const { row, order } = await db.transaction().execute(async (tx) => {
    for (const existing of await openOfType(tx, memberId, plan.type, now)) {
      if (existing.status === 'DRAFT' && existing.membership_id === plan.id && existing.last_order_id) {
        const pending = await tx.selectFrom('orders').selectAll().where('id', '=', existing.last_order_id).executeTakeFirstOrThrow()
        return { row: existing, order: pending }
      }
      throw new ConflictError(`the member already holds a ${plan.type} membership (subscription ${existing.id}, ${existing.status})`)
    }
    await refuseEnrolledElsewhere(tx, memberId, plan.type, now)
    const id = randomUUID()
    const provider = plan.chargeType === 'FREE' ? null : deps.provider.name
    const orderRow = newMembershipOrder({
      userId: memberId,
      creatorId: actor.id,
      subscriptionId: id,
      kind: 'MEMBERSHIP',
      periodStart: priced.row.start_date,
      attempt: 1,
      priced: priced.charge,
      currency: plan.currency,
      provider,
      now
    })
    const subscription: MembershipSubscriptionsTable = { ...priced.row, id, member_id: memberId, creator_id: actor.id, last_order_id: orderRow.id }
    await tx.insertInto('orders').values(orderRow).execute()
    await tx.insertInto('membership_subscriptions').values(subscription).execute()
    await recordSubscriptionEvent(tx, id, 'membership_subscription.created', now)
    return { row: subscription, order: orderRow }
  })

  const outcome = plan.chargeType === 'FREE' ? ({ status: 'succeeded', reference: '' } as const) : await firstCharge(db, deps.provider, order, plan)
  const recorded = await recordFirstCharge(db, row, order, outcome, plan, deps.clock.now())
  return { created: true, subscription: toSubscription(recorded.row, plan, priced.charge, { mode: 'ORDER', id: row.id, now, summary: false, errors: recorded.errors, corrections: [] }) }
}

/** The first charge; the provider's unreachability is a 502 that leaves the order PENDING for a retry. */
async function firstCharge(db: Db, provider: PaymentProvider, order: OrdersTable, plan: Plan): Promise<ChargeResult> {
  try {
    return await chargeOrder(db, provider, order, `${plan.displayName} membership`)
  } catch (err) {
    if (err instanceof PaymentProviderError) {
      throw new BadGatewayError(`the payment provider could not be reached; nothing is known to be charged, and ordering again retries this same charge (${err.message})`)
    }
    throw err
  }
}

interface Recorded {
  row: MembershipSubscriptionsTable
  errors: ValidationError[] | null
}

/** What a charge's outcome makes of a first charge: the subscription's status, and what the member is told. */
function firstChargeOutcome(outcome: ChargeResult): { status: MembershipSubscriptionsTable['status']; errors: ValidationError[] | null } {
  if (outcome.status === 'succeeded') return { status: 'CONFIRMED', errors: null }
  if (outcome.status === 'declined') return { status: 'CHARGE_FAILED', errors: [{ code: outcome.declineCode, message: outcome.message, details: null }] }
  return { status: 'REQUIRES_AUTHENTICATION', errors: authenticationErrors(outcome) }
}

/**
 * Writes a first charge's outcome to the subscription (and the owner's enrollment once CONFIRMED),
 * inside the caller's transaction; the order is the caller's to record. A subscription already
 * settled (a parallel confirm) is left as it is, and `settled` says so: its order was recorded then.
 */
export async function settleFirstCharge(tx: DbOrTx, id: string, outcome: ChargeResult, plan: Plan, at: string): Promise<Recorded & { settled: boolean }> {
  const { status, errors } = firstChargeOutcome(outcome)
  const current = await tx.selectFrom('membership_subscriptions').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  if (current.status === 'CONFIRMED' || current.status === 'CHARGE_FAILED') return { settled: true, row: current, errors: storedErrors(current) }
  const failed = status === 'CHARGE_FAILED'
  const next: MembershipSubscriptionsTable = {
    ...current,
    status,
    // Stored errors carry no client secret: it is handed to the customer once, in this answer.
    errors: errors === null ? null : JSON.stringify(errors.map((e) => ({ ...e, details: null }))),
    last_charge_date: status === 'CONFIRMED' && plan.chargeType !== 'FREE' ? at : current.last_charge_date,
    // A refused first charge leaves nothing in force: no cycle, no renewal, no grant.
    billing_cycle_start: failed ? null : current.billing_cycle_start,
    billing_cycle_end: failed ? null : current.billing_cycle_end,
    next_charge_date: failed ? null : current.next_charge_date,
    next_grant_date: failed ? null : current.next_grant_date,
    end_date: failed ? null : current.end_date,
    updated_at: at
  }
  const { id: _id, ...changes } = next
  await tx.updateTable('membership_subscriptions').set(changes).where('id', '=', id).execute()
  if (status === 'CONFIRMED') await addOwnerEnrollment(tx, next, plan.type, at)
  if (status === 'CONFIRMED' || failed) await recordSubscriptionEvent(tx, id, failed ? 'membership_subscription.charge_failed' : 'membership_subscription.confirmed', new Date(at))
  return { settled: false, row: next, errors }
}

/** Writes a charge's outcome to the order and the subscription, once: a later outcome for a settled order changes nothing. */
async function recordFirstCharge(db: Db, row: MembershipSubscriptionsTable, order: OrdersTable, outcome: ChargeResult, plan: Plan, now: Date): Promise<Recorded> {
  const at = now.toISOString()
  return db.transaction().execute(async (tx) => {
    const { settled: alreadySettled, row: settled, errors } = await settleFirstCharge(tx, row.id, outcome, plan, at)
    if (!alreadySettled) await recordOrderOutcome(tx, order.id, outcome, at)
    return { row: settled, errors }
  })
}

/** After the customer authenticated with their bank: how the first charge stands now. */
export async function confirmSubscription(db: Db, id: string, actor: Actor, deps: SubscriptionDeps): Promise<MembershipSubscription> {
  const row = await visibleRow(db, id, actor)
  if (row.status !== 'REQUIRES_AUTHENTICATION') throw new ConflictError(`the subscription is ${row.status}; only one waiting for authentication can be confirmed`)
  const order = await db.selectFrom('orders').selectAll().where('id', '=', row.last_order_id!).executeTakeFirstOrThrow()
  const plan = toPlan(await membershipRow(db, row.membership_id))
  const outcome = await confirmCharge(deps.provider, order)
  const recorded = await recordFirstCharge(db, row, order, outcome, plan, deps.clock.now())
  return toSubscription(recorded.row, plan, await currentCharge(db, recorded.row, plan), {
    mode: 'ORDER',
    id: row.id,
    now: deps.clock.now(),
    summary: false,
    corrections: (await correctionsOf(db, [row.id])).get(row.id) ?? [],
    errors: recorded.errors
  })
}
