// A subscription as the API shows it: its answer (status, charge, pause, corrections), the event
// written with each change, and the reads that answer one (kept in the read cache) or a list.
import type { EventType, MembershipSubscription, MembershipSubscriptionListQuery, SubscriptionExtendedStatus, ValidationError } from '@club/contract'
import { isStaff, type Actor } from '../actor.js'
import { PERIOD_MONTHS, type Anchor, type RenewalPeriod } from '../billing/calendar.js'
import { currencyExponent, toPercentage, unitsOf } from '../billing/money.js'
import { chargeLines, priceCharge, type PricedCharge } from '../billing/pricing.js'
import type { Clock } from '../clock.js'
import type { ExpressionBuilder, SelectQueryBuilder } from 'kysely'
import type { DbOrTx } from '../db/database.js'
import { readThrough } from '../db/read-cache.js'
import type { Database, MembershipPausesTable, MembershipSubscriptionChangesTable, MembershipSubscriptionsTable } from '../db/schema.js'
import { ForbiddenError, NotFoundError } from '../errors.js'
import { pageRequest, paged } from '../paging.js'
import { chargedMembers, type ChargedMember } from './enrollment-rows.js'
import { correctionMessages, correctionsOf } from './corrections.js'
import { membershipRow, toPlan, type Plan } from './plans.js'
import { recordEvent } from '../events/outbox.js'
import { subscriptionPath } from './subscription-rows.js'
import { openPause, pauseStatusOf, toPause } from './pause-rows.js'

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

/** The subscription as the API shows it; `priced` is the charge its answer describes. */
export function toSubscription(
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

/**
 * The charge of the current period: the first one carries the initiation fee, renewals do not and
 * carry the members enrolled when the period began, as the CHARGE job priced them.
 */
export async function currentCharge(db: DbOrTx, row: MembershipSubscriptionsTable, plan: Plan): Promise<PricedCharge> {
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

export function storedErrors(row: MembershipSubscriptionsTable): ValidationError[] | null {
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

export async function answer(db: DbOrTx, row: MembershipSubscriptionsTable, now: Date): Promise<MembershipSubscription> {
  const plan = toPlan(await membershipRow(db, row.membership_id))
  const pause = (await openPause(db, row.id, now)) ?? null
  const corrections = (await correctionsOf(db, [row.id])).get(row.id) ?? []
  return toSubscription(row, plan, await currentCharge(db, row, plan), storedOrder(row, now, pause, corrections))
}

/**
 * One subscription's answer, kept in the read cache while none of the tables it is read
 * from changes (a write here or in another process moves the stamp) and until the first instant its
 * time-derived parts change (its end, a pause's start or end): `until`. Who may see it is checked
 * on every request.
 */
interface SubscriptionAnswer {
  memberId: string
  until: string | null
  subscription: MembershipSubscription
}

const subscriptionReads = {
  name: 'membership-subscriptions',
  tables: ['membership_subscriptions', 'memberships', 'membership_pauses', 'membership_enrollments', 'membership_subscription_changes', 'users']
}

async function loadAnswer(db: DbOrTx, id: string, now: Date): Promise<SubscriptionAnswer> {
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
  return { memberId: row.member_id, until: changes[0] ?? null, subscription }
}

/**
 * One subscription for its owner or staff (see SubscriptionAnswer): the same object while it is
 * kept, so the HTTP layer serialises it once (reply.ts).
 */
export async function getKeptSubscription(db: DbOrTx, id: string, actor: Actor, clock: Clock): Promise<MembershipSubscription> {
  const now = clock.now()
  const at = now.toISOString()
  // Past its horizon the kept answer may show a status that has since changed: read it anew.
  const answer = await readThrough(db, subscriptionReads, id, () => loadAnswer(db, id, now), (kept) => kept.until === null || kept.until > at)
  if (answer.memberId !== actor.id && !isStaff(actor)) throw new NotFoundError(`membership subscription ${id.slice(0, 100)} not found`)
  return answer.subscription
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
