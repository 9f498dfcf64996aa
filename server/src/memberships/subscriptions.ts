// Buying a membership: one computation for the preview and the order; the order's first charge
// through the payment provider, at most once per (subscription, cycle) under the order's unique key.
import { randomUUID } from 'node:crypto'
import type {
  EventType,
  MembershipSubscription,
  MembershipSubscriptionListQuery,
  MembershipSubscriptionPatchable as MembershipSubscriptionPatch,
  MembershipSubscriptionRequest,
  SubscriptionExtendedStatus,
  ValidationError
} from '@club/contract'
import { isStaff, type Actor } from '../actor.js'
import { anchorAt, chargeDate, daysAfter, grantDate, isValidTimezone, PERIOD_MONTHS, type Anchor, type RenewalPeriod } from '../billing/calendar.js'
import { currencyExponent, toPercentage, unitsOf } from '../billing/money.js'
import { requestMinor } from '../billing/request-money.js'
import { chargeLines, priceCharge, type PricedCharge } from '../billing/pricing.js'
import type { Clock } from '../clock.js'
import type { ExpressionBuilder, SelectQueryBuilder } from 'kysely'
import { readCache, type Db, type DbOrTx } from '../db/database.js'
import type { Database, MembershipPausesTable, MembershipSubscriptionChangesTable, MembershipSubscriptionsTable, OrdersTable } from '../db/schema.js'
import { BadGatewayError, BadRequestError, ConflictError, ForbiddenError, NotFoundError } from '../errors.js'
import { requestInstant } from '../instants.js'
import { pageRequest, paged } from '../paging.js'
import { PaymentProviderError, type ChargeResult, type PaymentProvider } from '../payments/provider.js'
import { activeEnrollmentOfType, addOwnerEnrollment, chargedMembers, endEnrollments, reopenEnrollments, type ChargedMember } from './enrollment-rows.js'
import { checkCorrectionAuthority, correctionMessages, correctionsOf, recordCorrections } from './corrections.js'
import { openPause, pauseStatusOf, toPause } from './pauses.js'
import { membershipRow, toPlan, type Plan } from './plans.js'
import { recordEvent } from '../events/outbox.js'
import { authenticationErrors, chargeOrder, confirmCharge, newMembershipOrder, recordOrderOutcome, savedMethod } from '../orders/charging.js'

export interface SubscriptionDeps {
  clock: Clock
  provider: PaymentProvider
  /** CLUB_TIMEZONE: where renewal dates fall unless the request names another zone. */
  clubTimezone: string
}

export const subscriptionPath = (id: string) => `/apis/v2/membership-subscriptions/${id}`
/** A DRAFT (made, not paid) older than this is given up (BILLING.md). */
export const DRAFT_LIFETIME_MS = 23 * 3600 * 1000

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

/** What a person is shown, from status, condition, dates and the pause in force or scheduled. */
export function extendedStatusOf(
  row: Pick<MembershipSubscriptionsTable, 'status' | 'condition' | 'end_date' | 'cancellation_requested_at' | 'charge_type'>,
  now: Date,
  pause: MembershipPausesTable | null = null
): SubscriptionExtendedStatus {
  if (row.status !== 'CONFIRMED') return 'CANCELLED'
  if (row.end_date !== null && row.end_date <= now.toISOString()) return 'CANCELLED'
  if (row.cancellation_requested_at !== null) return 'PENDING_CANCEL'
  if (row.condition !== 'VALID') return row.condition
  if (pause) {
    const status = pauseStatusOf(pause, now)
    if (status === 'ACTIVE') return 'PAUSED'
    if (status === 'PENDING') return 'PENDING_PAUSE'
  }
  return row.charge_type === 'NON_RECURRING' ? 'VALID' : 'ACTIVE'
}

function describeRenewal(plan: Plan, anchor: Anchor): string {
  if (plan.chargeType === 'FREE') return 'Free: nothing is charged'
  if (plan.chargeType === 'NON_RECURRING') return `Lasts ${plan.durationDays} days and does not renew`
  const months = PERIOD_MONTHS[plan.chargeType as RenewalPeriod]
  const day = Number(anchor.local.slice(8, 10))
  const clamp = day > 28 ? ` (or the month's last day)` : ''
  return `Renews every ${months === 1 ? 'month' : `${months} months`} on day ${day}${clamp}, ${anchor.timezone} time, until cancelled`
}

interface Priced {
  plan: Plan
  charge: PricedCharge
  anchor: Anchor
  start: Date
}

/** The subscription as the API shows it; `priced` is the charge its answer describes. */
function toSubscription(
  row: MembershipSubscriptionsTable,
  plan: Plan,
  priced: PricedCharge,
  options: {
    mode: 'PREVIEW' | 'ORDER'
    id: string | null
    now: Date
    summary: boolean
    errors: ValidationError[] | null
    pause?: MembershipPausesTable | null
    /** Staff and admin corrections, shown to the member as messages (ORDER answers). */
    corrections?: MembershipSubscriptionChangesTable[]
  }
): MembershipSubscription {
  const pause = options.pause ?? null
  const exponent = currencyExponent(row.currency)
  const units = unitsOf(row.currency)
  const taxes = priced.taxes.map((t) => ({ name: t.name, percentage: toPercentage(t.rate), amount: units(t.amount) }))
  const fees = priced.fees.map((f) => ({ name: f.name, percentage: toPercentage(f.rate), amount: units(f.amount) }))
  const anchor: Anchor = { local: row.anchor_local, timezone: row.timezone }
  return {
    id: options.id,
    displayName: plan.displayName,
    type: plan.type,
    status: row.status,
    extendedStatus: extendedStatusOf(row, options.now, pause),
    mode: options.mode,
    condition: row.condition,
    conditionUpdatedDate: row.condition_updated_at,
    createdDate: row.created_at,
    startDate: row.start_date,
    endDate: row.end_date,
    cancellationRequestDate: row.cancellation_requested_at,
    lastChargeDate: row.last_charge_date,
    nextChargeDate: row.next_charge_date,
    nextGrantDate: row.next_grant_date,
    billingCycleStart: row.billing_cycle_start,
    billingCycleEnd: row.billing_cycle_end,
    lastGrantDate: row.last_grant_date,
    activePause: pause === null ? null : toPause(pause, row.currency, options.now),
    timezone: row.timezone,
    price: units(row.price_minor),
    initiationFee: units(row.initiation_fee_minor),
    durationDays: row.duration_days,
    oneTimeOption: null,
    total: units(priced.total),
    taxes,
    fees,
    additionalMemberFee: units(row.additional_member_fee_minor),
    chargeType: row.charge_type,
    member: { id: row.member_id },
    membership: { id: row.membership_id },
    errors: options.errors,
    order: row.last_order_id === null ? null : { id: row.last_order_id },
    ...(options.corrections === undefined ? {} : { messages: correctionMessages(options.corrections, row.currency) }),
    summary: options.summary
      ? {
          total: units(priced.total),
          membershipPrice: units(row.price_minor),
          taxes,
          fees,
          messages: [
            { code: 'RENEWAL', message: describeRenewal(plan, anchor) },
            ...(row.initiation_fee_minor > 0 && plan.chargeType !== 'FREE'
              ? [{ code: 'INITIATION_FEE', message: `The first charge includes the initiation fee of ${units(row.initiation_fee_minor).toFixed(exponent)} ${row.currency}` }]
              : [])
          ],
          billingCycleStart: plan.chargeType === 'NON_RECURRING' ? null : row.billing_cycle_start,
          endDate: plan.chargeType === 'NON_RECURRING' ? row.end_date : null,
          initiationFee: plan.chargeType === 'FREE' ? null : units(row.initiation_fee_minor),
          chargeType: row.charge_type
        }
      : null,
    _links: options.id === null ? { self: { href: '/apis/v2/membership-subscriptions' } } : subscriptionLinks(options.id, row.status)
  }
}

function subscriptionLinks(id: string, status: MembershipSubscriptionsTable['status']) {
  return {
    self: { href: subscriptionPath(id) },
    ...(status === 'REQUIRES_AUTHENTICATION' ? { confirm: { href: `${subscriptionPath(id)}/confirm` } } : {})
  }
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

/** A subscription its owner or staff may see; anyone else is told it does not exist. */
export async function visibleRow(db: DbOrTx, id: string, actor: Actor): Promise<MembershipSubscriptionsTable> {
  const row = await db.selectFrom('membership_subscriptions').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row || (row.member_id !== actor.id && !isStaff(actor))) throw new NotFoundError(`membership subscription ${id.slice(0, 100)} not found`)
  return row
}

/**
 * The charge of the current period: the first one carries the initiation fee, renewals do not and
 * carry the members enrolled when the period began, as the CHARGE job priced them.
 */
async function currentCharge(db: DbOrTx, row: MembershipSubscriptionsTable, plan: Plan): Promise<PricedCharge> {
  return priceCurrent(row, plan, await currentMembers(db, row))
}

/** The members the current period was charged for (none in the first period). */
async function currentMembers(db: DbOrTx, row: MembershipSubscriptionsTable): Promise<ChargedMember[]> {
  const first = row.billing_cycle_start === row.start_date
  return first || row.billing_cycle_start === null ? [] : chargedMembers(db, row.id, row.billing_cycle_start)
}

function priceCurrent(row: MembershipSubscriptionsTable, plan: Plan, members: ChargedMember[]): PricedCharge {
  const first = row.billing_cycle_start === row.start_date
  const amounts = { priceMinor: row.price_minor, initiationFeeMinor: row.initiation_fee_minor, additionalMemberFeeMinor: row.additional_member_fee_minor }
  return priceCharge(chargeLines(plan, amounts, { first, members }), plan.fees, plan.taxes)
}

function storedErrors(row: MembershipSubscriptionsTable): ValidationError[] | null {
  return row.errors === null ? null : (JSON.parse(row.errors) as ValidationError[])
}

/** How a stored subscription's ORDER answer is drawn: its stored errors, its pause and the corrections made to it. */
function storedOrder(row: MembershipSubscriptionsTable, now: Date, pause: MembershipPausesTable | null, corrections: MembershipSubscriptionChangesTable[]) {
  return { mode: 'ORDER' as const, id: row.id, now, summary: false, errors: storedErrors(row), pause, corrections }
}

/** A subscription event with the subscription as GET answers it, written in the change's transaction. */
export async function recordSubscriptionEvent(tx: DbOrTx, id: string, type: Extract<EventType, `membership_subscription.${string}`>, now: Date): Promise<void> {
  // Told once: the CHARGE job tells the cancellations that ended by time alone, and no other.
  if (type === 'membership_subscription.canceled') await tx.updateTable('membership_subscriptions').set({ cancellation_told: 1 }).where('id', '=', id).execute()
  const row = await tx.selectFrom('membership_subscriptions').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  await recordEvent(tx, { type, resourceId: id, data: await answer(tx, row, now) }, now)
}

async function answer(db: DbOrTx, row: MembershipSubscriptionsTable, now: Date): Promise<MembershipSubscription> {
  const plan = toPlan(await membershipRow(db, row.membership_id))
  const pause = (await openPause(db, row.id, now)) ?? null
  const corrections = (await correctionsOf(db, [row.id])).get(row.id) ?? []
  return toSubscription(row, plan, await currentCharge(db, row, plan), storedOrder(row, now, pause, corrections))
}

/**
 * One subscription's answer as JSON text, kept in the read cache while none of the tables it is read
 * from changes (a write here or in another process moves the stamp) and until the first instant its
 * time-derived parts change (its end, a pause's start or end): `until`. Who may see it is checked
 * on every request.
 */
interface SubscriptionAnswer {
  memberId: string
  until: string | null
  json: string
}

const subscriptionReads = {
  name: 'membership-subscriptions',
  tables: ['membership_subscriptions', 'memberships', 'membership_pauses', 'membership_enrollments', 'membership_subscription_changes', 'users']
}

async function loadAnswer(db: DbOrTx, id: string, now: Date, serialize: (s: MembershipSubscription) => string): Promise<SubscriptionAnswer> {
  const at = now.toISOString()
  const row = await db.selectFrom('membership_subscriptions').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw new NotFoundError(`membership subscription ${id.slice(0, 100)} not found`)
  const plan = toPlan(await membershipRow(db, row.membership_id))
  const pauses = await db
    .selectFrom('membership_pauses')
    .selectAll()
    .where('subscription_id', '=', id)
    .where('cancelled_at', 'is', null)
    .where('end_date', '>', at)
    .orderBy('start_date')
    .execute()
  const pause = pauses[0] ?? null
  const corrections = (await correctionsOf(db, [row.id])).get(row.id) ?? []
  const subscription = toSubscription(row, plan, priceCurrent(row, plan, await currentMembers(db, row)), storedOrder(row, now, pause, corrections))
  const changes = [row.end_date, ...pauses.flatMap((p) => [p.start_date, p.end_date])].filter((d): d is string => d !== null && d > at).sort()
  return { memberId: row.member_id, until: changes[0] ?? null, json: serialize(subscription) }
}

/** One subscription for its owner or staff, as JSON text (see SubscriptionAnswer). */
export async function getSubscriptionJson(db: DbOrTx, id: string, actor: Actor, clock: Clock, serialize: (s: MembershipSubscription) => string): Promise<string> {
  const now = clock.now()
  const at = now.toISOString()
  const cache = readCache<SubscriptionAnswer>(db, subscriptionReads)
  let answer = cache ? await cache.get(id, () => loadAnswer(db, id, now, serialize)) : await loadAnswer(db, id, now, serialize)
  // Past its horizon the kept answer may show a status that has since changed: read it anew.
  if (answer.until !== null && answer.until <= at) answer = await loadAnswer(db, id, now, serialize)
  if (answer.memberId !== actor.id && !isStaff(actor)) throw new NotFoundError(`membership subscription ${id.slice(0, 100)} not found`)
  return answer.json
}

type SubscriptionQuery = SelectQueryBuilder<Database, 'membership_subscriptions', object>

/**
 * extendedStatusOf as SQL, for filtering a list: the same precedence (ended, cancellation pending,
 * GRACE or HOLD, paused, pause pending, in force), so a listed subscription shows what it was found by.
 */
function whereExtendedStatus(base: SubscriptionQuery, wanted: SubscriptionExtendedStatus, now: Date): SubscriptionQuery {
  const at = now.toISOString()
  const pauses = (active: boolean) => (eb: ExpressionBuilder<Database, 'membership_subscriptions'>) =>
    eb.exists(
      eb
        .selectFrom('membership_pauses as p')
        .select('p.id')
        .whereRef('p.subscription_id', '=', 'membership_subscriptions.id')
        .where('p.cancelled_at', 'is', null)
        .where('p.end_date', '>', at)
        .where('p.start_date', active ? '<=' : '>', at)
    )
  if (wanted === 'CANCELLED') return base.where((eb) => eb.or([eb('status', '!=', 'CONFIRMED'), eb('end_date', '<=', at)]))
  const inForce = base.where('status', '=', 'CONFIRMED').where((eb) => eb.or([eb('end_date', 'is', null), eb('end_date', '>', at)]))
  if (wanted === 'PENDING_CANCEL') return inForce.where('cancellation_requested_at', 'is not', null)
  const standing = inForce.where('cancellation_requested_at', 'is', null)
  if (wanted === 'GRACE' || wanted === 'HOLD') return standing.where('condition', '=', wanted)
  const valid = standing.where('condition', '=', 'VALID')
  if (wanted === 'PAUSED') return valid.where(pauses(true))
  const unpaused = valid.where((eb) => eb.not(pauses(true)(eb)))
  if (wanted === 'PENDING_PAUSE') return unpaused.where(pauses(false))
  const plain = unpaused.where((eb) => eb.not(pauses(false)(eb)))
  return wanted === 'VALID' ? plain.where('charge_type', '=', 'NON_RECURRING') : plain.where('charge_type', '!=', 'NON_RECURRING')
}

/** A member's own subscriptions; staff see everyone's and may filter by member. Newest first. */
export async function listSubscriptions(db: DbOrTx, query: MembershipSubscriptionListQuery, actor: Actor, clock: Clock, path: string) {
  if (query.memberId !== undefined && query.memberId !== actor.id && !isStaff(actor)) {
    throw new ForbiddenError("only staff may list another member's subscriptions")
  }
  const request = pageRequest(query)
  let base = db.selectFrom('membership_subscriptions')
  const memberId = isStaff(actor) ? query.memberId : actor.id
  if (memberId !== undefined) base = base.where('member_id', '=', memberId)
  if (query.membershipId !== undefined) base = base.where('membership_id', '=', query.membershipId)
  if (query.status !== undefined) base = base.where('status', '=', query.status)
  if (query.condition !== undefined) base = base.where('condition', '=', query.condition)
  if (query.extendedStatus !== undefined) base = whereExtendedStatus(base, query.extendedStatus, clock.now())
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(request.ipp).offset(request.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  ])
  const now = clock.now()
  const plans = new Map<string, Plan>()
  const items: MembershipSubscription[] = []
  const corrections = await correctionsOf(db, rows.map((r) => r.id))
  for (const row of rows) {
    let plan = plans.get(row.membership_id)
    if (!plan) plans.set(row.membership_id, (plan = toPlan(await membershipRow(db, row.membership_id))))
    const pause = (await openPause(db, row.id, now)) ?? null
    items.push(toSubscription(row, plan, await currentCharge(db, row, plan), storedOrder(row, now, pause, corrections.get(row.id) ?? [])))
  }
  return paged(items, Number(count.n), request, path, query)
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

/** A subscription change, in one IMMEDIATE transaction over the row as it is now. */
async function change(
  db: Db,
  id: string,
  actor: Actor,
  clock: Clock,
  apply: (row: MembershipSubscriptionsTable, plan: Plan, now: Date) => Partial<MembershipSubscriptionsTable>,
  /** Written in the same transaction, with the row as it was and the changes (a correction's history). */
  alsoWrite?: (tx: DbOrTx, current: MembershipSubscriptionsTable, changes: Partial<MembershipSubscriptionsTable>) => Promise<void>,
  /** The event integrators are told of, with the subscription after the change (chosen from the row as it was and the changes). */
  event?: (current: MembershipSubscriptionsTable, changes: Partial<MembershipSubscriptionsTable>) => Extract<EventType, `membership_subscription.${string}`>
): Promise<MembershipSubscription> {
  const now = clock.now()
  const row = await db.transaction().execute(async (tx) => {
    const current = await visibleRow(tx, id, actor)
    const plan = toPlan(await membershipRow(tx, current.membership_id))
    const changes = { ...apply(current, plan, now), updated_at: now.toISOString() }
    await tx.updateTable('membership_subscriptions').set(changes).where('id', '=', id).execute()
    if (alsoWrite) await alsoWrite(tx, current, changes)
    // Enrollments end with their subscription, in the same transaction: a cancellation sets theirs,
    // withdrawing it clears them again.
    if (changes.end_date !== undefined && changes.end_date !== current.end_date) {
      if (changes.end_date !== null) await endEnrollments(tx, id, changes.end_date)
      else if (current.end_date !== null) await reopenEnrollments(tx, id, current.end_date)
    }
    if (event) await recordSubscriptionEvent(tx, id, event(current, changes), now)
    return { ...current, ...changes }
  })
  return answer(db, row, now)
}

export function inForce(row: MembershipSubscriptionsTable, now: Date): boolean {
  return row.status === 'CONFIRMED' && (row.end_date === null || row.end_date > now.toISOString())
}

/**
 * A cancellation takes effect at the end of the cycle already paid for (its end date is set now, so
 * no renewal falls due); staff may end a membership at once.
 */
export async function cancelSubscription(db: Db, id: string, immediate: boolean, actor: Actor, clock: Clock): Promise<MembershipSubscription> {
  if (immediate && !isStaff(actor)) throw new ForbiddenError('only staff may end a membership at once; a member cancels at the end of the cycle')
  return change(db, id, actor, clock, (row, _plan, now) => {
    if (!inForce(row, now)) throw new ConflictError(`the subscription is not in force (${extendedStatusOf(row, now)})`)
    if (row.cancellation_requested_at !== null) throw new ConflictError(`a cancellation was already requested on ${row.cancellation_requested_at}`)
    if (!immediate && row.charge_type === 'NON_RECURRING') throw new ConflictError(`a NON_RECURRING membership ends by itself on ${row.end_date}`)
    const effective = immediate || row.billing_cycle_end === null ? now.toISOString() : row.billing_cycle_end
    return { cancellation_requested_at: now.toISOString(), end_date: effective }
  }, undefined, (_row, changes) => (changes.end_date === changes.cancellation_requested_at ? 'membership_subscription.canceled' : 'membership_subscription.cancellation_requested'))
}

export async function withdrawCancellation(db: Db, id: string, actor: Actor, clock: Clock): Promise<MembershipSubscription> {
  return change(db, id, actor, clock, (row, _plan, now) => {
    if (row.cancellation_requested_at === null) throw new ConflictError('no cancellation is pending')
    if (!inForce(row, now)) throw new ConflictError('the cancellation has already taken effect')
    return { cancellation_requested_at: null, end_date: null }
  })
}

/** Staff corrections (the reference's Patchable), each checked; a new next charge moves the anchor. */
export async function patchSubscription(db: Db, id: string, patch: MembershipSubscriptionPatch, actor: Actor, clock: Clock): Promise<MembershipSubscription> {
  if (!isStaff(actor)) throw new ForbiddenError('only staff may change a subscription')
  return change(db, id, actor, clock, (row, plan, now) => {
    const at = now.toISOString()
    const changes: Partial<MembershipSubscriptionsTable> = {}
    if (patch.timezone !== undefined && !isValidTimezone(patch.timezone)) {
      throw new BadRequestError(`timezone: ${JSON.stringify(patch.timezone.slice(0, 40))} is not an IANA timezone`)
    }
    const dates = {
      nextChargeDate: patch.nextChargeDate === undefined ? undefined : requestInstant(patch.nextChargeDate, 'nextChargeDate'),
      nextGrantDate: patch.nextGrantDate === undefined ? undefined : requestInstant(patch.nextGrantDate, 'nextGrantDate'),
      lastChargeDate: patch.lastChargeDate === undefined ? undefined : requestInstant(patch.lastChargeDate, 'lastChargeDate')
    }
    for (const field of ['nextChargeDate', 'nextGrantDate'] as const) {
      const value = dates[field]
      if (value !== undefined && value.toISOString() < at) throw new BadRequestError(`${field}: ${patch[field]!.slice(0, 40)} is in the past`)
    }
    if (dates.lastChargeDate !== undefined && dates.lastChargeDate.toISOString() > at) {
      throw new BadRequestError(`lastChargeDate: ${patch.lastChargeDate!.slice(0, 40)} is in the future`)
    }
    const renews = row.charge_type === 'MONTHLY' || row.charge_type === 'SIX_MONTHS' || row.charge_type === 'YEARLY'
    if (dates.nextChargeDate !== undefined && !renews) throw new BadRequestError(`nextChargeDate: a ${row.charge_type} membership is not renewed`)
    const timezone = patch.timezone ?? row.timezone
    const nextCharge = dates.nextChargeDate ?? (row.next_charge_date === null ? null : new Date(row.next_charge_date))
    if ((dates.nextChargeDate !== undefined || patch.timezone !== undefined) && nextCharge !== null && renews) {
      // The anchor becomes the next charge itself: cycle_index counts the periods paid since the
      // anchor, so -1 says "the anchor is the next one due" and later dates follow from it.
      changes.anchor_local = anchorAt(nextCharge, timezone).local
      changes.cycle_index = -1
      changes.next_charge_date = nextCharge.toISOString()
      changes.billing_cycle_end = nextCharge.toISOString()
    }
    if (patch.timezone !== undefined) changes.timezone = patch.timezone
    if (dates.nextGrantDate !== undefined) changes.next_grant_date = dates.nextGrantDate.toISOString()
    if (dates.lastChargeDate !== undefined) changes.last_charge_date = dates.lastChargeDate.toISOString()
    if (patch.price !== undefined) {
      changes.price_minor = patch.price === null ? plan.priceMinor : requestMinor(patch.price, 'price', currencyExponent(row.currency))
    }
    checkCorrectionAuthority(row, changes, actor)
    return changes
  }, (tx, current, changes) => recordCorrections(tx, current, changes, actor, clock.now().toISOString()))
}
