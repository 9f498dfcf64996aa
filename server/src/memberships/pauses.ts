// Pausing a membership under its plan's policy (BILLING.md, "Calendars" and "States"). A pause moves
// the schedule's anchor by its weeks in local calendar days when it is requested, so the next
// charge, the cycle end and the next grant move with it; its status is derived from its dates.
import { randomUUID } from 'node:crypto'
import { DateTime } from 'luxon'
import type { MembershipPauseRequest, MembershipSubscriptionPause } from '@club/contract'
import type { Actor } from '../actor.js'
import { anchorAt, daysAfter } from '../billing/calendar.js'
import { priceCharge } from '../billing/pricing.js'
import type { Clock } from '../clock.js'
import type { Db, DbOrTx } from '../db/database.js'
import type { MembershipPausesTable, MembershipSubscriptionsTable, OrdersTable } from '../db/schema.js'
import { requestInstant } from '../instants.js'
import { BadGatewayError, BadRequestError, ConflictError, NotFoundError, PaymentRequiredError } from '../errors.js'
import { PaymentProviderError, type ChargeResult, type PaymentProvider } from '../payments/provider.js'
import { membershipRow, toPlan } from './plans.js'
import { chargeOrder, recordOrderOutcome } from '../orders/charging.js'
import { recordOrderEvent } from '../orders/service.js'
import { inForce, subscriptionPath, visibleRow } from './subscription-rows.js'
import { openPause, pauseStatusOf, toPause } from './pause-rows.js'
import { recordSubscriptionEvent } from './subscription-view.js'

const DAY_MS = 86_400_000

/**
 * The schedule moved by `days` local calendar days (negative: back): the next charge and the cycle
 * end move by exactly those days, and the schedule is re-anchored on that moved charge (cycle_index
 * -1: "the anchor is the next one due"), so later periods follow from it. Moving the old anchor
 * instead and adding months again lands a day off across months of different lengths (25 Nov + 14
 * days + 1 month = 9 Jan, where 25 Dec + 14 days = 8 Jan). The next grant moves when it falls on or
 * after `from` (the pause's start).
 */
export function shiftSchedule(row: MembershipSubscriptionsTable, days: number, from: string): Partial<MembershipSubscriptionsTable> {
  const changes: Partial<MembershipSubscriptionsTable> = {}
  const renews = row.charge_type === 'MONTHLY' || row.charge_type === 'SIX_MONTHS' || row.charge_type === 'YEARLY'
  if (renews && row.next_charge_date !== null) {
    const next = daysAfter(anchorAt(new Date(row.next_charge_date), row.timezone), days)
    changes.anchor_local = anchorAt(next, row.timezone).local
    changes.cycle_index = -1
    changes.next_charge_date = next.toISOString()
    changes.billing_cycle_end = next.toISOString()
  }
  if (row.next_grant_date !== null && row.next_grant_date >= from) {
    changes.next_grant_date = daysAfter(anchorAt(new Date(row.next_grant_date), row.timezone), days).toISOString()
  }
  return changes
}

export interface PauseDeps {
  clock: Clock
  provider: PaymentProvider
}


/**
 * Checks the plan's policy, then writes the pause, moves the schedule and claims the fee's order in
 * one IMMEDIATE transaction; charges the fee outside it; a refused fee takes the pause back (402).
 */
export async function createPause(db: Db, subscriptionId: string, request: MembershipPauseRequest, actor: Actor, deps: PauseDeps): Promise<MembershipSubscriptionPause> {
  const now = deps.clock.now()
  const at = now.toISOString()
  const claimed = await db.transaction().execute(async (tx) => {
    const row = await visibleRow(tx, subscriptionId, actor)
    const plan = toPlan(await membershipRow(tx, row.membership_id))
    const policy = plan.pausePolicy
    if (!policy) throw new ConflictError('this membership cannot be paused (its plan has no pause policy)')
    if (!inForce(row, now)) throw new ConflictError('the membership is not in force')
    if (!['MONTHLY', 'SIX_MONTHS', 'YEARLY'].includes(row.charge_type)) throw new ConflictError(`a ${row.charge_type} membership cannot be paused`)
    if (row.condition !== 'VALID') throw new ConflictError(`a membership in ${row.condition} cannot be paused; its renewal must be paid first`)
    if (row.cancellation_requested_at !== null) throw new ConflictError('a membership with a cancellation requested cannot be paused in its last cycle')
    const weeks = request.pauseDurationWeeks
    if (weeks < policy.minimumWeeks || weeks > policy.maximumWeeks) {
      throw new BadRequestError(`pauseDurationWeeks: this plan allows pauses of ${policy.minimumWeeks} to ${policy.maximumWeeks} weeks`)
    }
    const start = request.pauseStartDate === undefined ? now : requestInstant(request.pauseStartDate, 'pauseStartDate')
    if (start.getTime() < now.getTime() - 60_000) throw new BadRequestError('pauseStartDate: a pause cannot start in the past')
    if (row.next_charge_date !== null && start.toISOString() > row.next_charge_date) {
      throw new BadRequestError(`pauseStartDate: a pause must start by the next charge (${row.next_charge_date})`)
    }
    const open = await openPause(tx, subscriptionId, now)
    if (open?.fee_order_id) {
      // A pause whose fee's answer was lost (the provider could not be reached): asking again settles
      // that same fee under its own key, so it cannot be charged twice.
      const pending = await tx.selectFrom('orders').selectAll().where('id', '=', open.fee_order_id).where('status', '=', 'PENDING').executeTakeFirst()
      if (pending && open.weeks === request.pauseDurationWeeks) return { row, pause: open, order: pending as OrdersTable | null, displayName: plan.displayName }
    }
    if (open) throw new ConflictError('the membership already has a pause in force or scheduled')
    const yearBefore = new Date(start.getTime() - 365 * DAY_MS).toISOString()
    const recent = await tx
      .selectFrom('membership_pauses')
      .select('id')
      .where('subscription_id', '=', subscriptionId)
      .where('cancelled_at', 'is', null)
      .where('start_date', '>', yearBefore)
      .execute()
    if (recent.length >= policy.pausesPerYear) {
      throw new ConflictError(`this plan allows ${policy.pausesPerYear} pause(s) in any 12 months, and ${recent.length} already began in the 12 months before this one`)
    }
    const pause: MembershipPausesTable = {
      id: randomUUID(),
      subscription_id: subscriptionId,
      start_date: start.toISOString(),
      end_date: daysAfter(anchorAt(start, row.timezone), 7 * weeks).toISOString(),
      weeks,
      fee_minor: policy.pauseFeeMinor,
      fee_order_id: null,
      ended_early_at: null,
      cancelled_at: null,
      created_at: at
    }
    let order: OrdersTable | null = null
    if (policy.pauseFeeMinor > 0) {
      const priced = priceCharge([{ kind: 'pause_fee', description: `Pause of ${weeks} week(s)`, amount: policy.pauseFeeMinor }], plan.fees, plan.taxes)
      order = {
        id: randomUUID(),
        user_id: row.member_id,
        creator_id: actor.id,
        kind: 'PAUSE_FEE',
        membership_subscription_id: subscriptionId,
        period_start: null,
        status: 'PENDING',
        currency: row.currency,
        subtotal_minor: priced.subtotal,
        total_minor: priced.total,
        lines: JSON.stringify(priced.lines),
        fees: JSON.stringify(priced.fees),
        taxes: JSON.stringify(priced.taxes),
        provider: deps.provider.name,
        provider_ref: null,
        idempotency_key: `pause:${pause.id}`,
        failure_code: null,
        failure_message: null,
        created_at: at,
        updated_at: at
      }
      await tx.insertInto('orders').values(order).execute()
      pause.fee_order_id = order.id
    }
    await tx.insertInto('membership_pauses').values(pause).execute()
    await tx.updateTable('membership_subscriptions').set({ ...shiftSchedule(row, 7 * weeks, pause.start_date), updated_at: at }).where('id', '=', subscriptionId).execute()
    // A pause with a fee is told once its fee is paid (below); one refused is taken back whole.
    if (order === null) await recordSubscriptionEvent(tx, subscriptionId, 'membership_subscription.paused', now)
    return { row, pause, order, displayName: plan.displayName }
  })

  const { row, pause, order } = claimed
  if (order) {
    let outcome: ChargeResult
    try {
      outcome = await chargeOrder(db, deps.provider, order, `${claimed.displayName}: pause fee`)
    } catch (err) {
      if (!(err instanceof PaymentProviderError)) throw err
      // Nothing is known about the fee: it may have been charged. The pause and its PENDING order
      // are kept, and the same request again charges that order under the same key.
      throw new BadGatewayError('the payment provider could not be reached; the pause is held, and asking for it again settles its fee')
    }
    if (outcome.status !== 'succeeded') {
      await undoPause(db, row.id, pause, order, outcome, deps.clock)
      const reason = outcome.status === 'declined' ? outcome.message : 'the bank asks for an authentication the member is not here to give'
      throw new PaymentRequiredError(`the pause fee could not be charged: ${reason}`)
    }
    const paidAt = deps.clock.now()
    await db.transaction().execute(async (tx) => {
      await recordOrderOutcome(tx, order.id, outcome, paidAt.toISOString())
      await recordSubscriptionEvent(tx, row.id, 'membership_subscription.paused', paidAt)
    })
  }
  return toPause(pause, row.currency, now)
}

/** A pause whose fee was refused is taken back whole: the pause row, and the schedule moved back. */
async function undoPause(db: Db, subscriptionId: string, pause: MembershipPausesTable, order: OrdersTable, outcome: ChargeResult, clock: Clock): Promise<void> {
  const at = clock.now().toISOString()
  await db.transaction().execute(async (tx) => {
    const failure = outcome.status === 'declined' ? { code: outcome.declineCode, message: outcome.message } : { code: 'requires_authentication', message: 'authentication required' }
    await tx
      .updateTable('orders')
      .set({ status: 'FAILED', provider_ref: outcome.reference, failure_code: failure.code, failure_message: failure.message, updated_at: at })
      .where('id', '=', order.id)
      .execute()
    await recordOrderEvent(tx, order.id, 'order.failed', new Date(at))
    const deleted = await tx.deleteFrom('membership_pauses').where('id', '=', pause.id).executeTakeFirst()
    if (Number(deleted.numDeletedRows) === 0) return
    const row = await tx.selectFrom('membership_subscriptions').selectAll().where('id', '=', subscriptionId).executeTakeFirstOrThrow()
    await tx.updateTable('membership_subscriptions').set({ ...shiftSchedule(row, -7 * pause.weeks, pause.start_date), updated_at: at }).where('id', '=', subscriptionId).execute()
  })
}

export async function listPauses(db: DbOrTx, subscriptionId: string, actor: Actor, clock: Clock) {
  const row = await visibleRow(db, subscriptionId, actor)
  const pauses = await db.selectFrom('membership_pauses').selectAll().where('subscription_id', '=', subscriptionId).orderBy('start_date', 'desc').execute()
  const now = clock.now()
  return {
    items: pauses.map((p) => toPause(p, row.currency, now)),
    _total: pauses.length,
    _links: { self: { href: `${subscriptionPath(subscriptionId)}/pauses` } }
  }
}

/** One pause of a subscription the actor may see. */
async function visiblePause(db: DbOrTx, subscriptionId: string, pauseId: string, actor: Actor) {
  const row = await visibleRow(db, subscriptionId, actor)
  const pause = await db.selectFrom('membership_pauses').selectAll().where('id', '=', pauseId).where('subscription_id', '=', subscriptionId).executeTakeFirst()
  if (!pause) throw new NotFoundError(`pause ${pauseId.slice(0, 100)} not found`)
  return { row, pause }
}

export async function getPause(db: DbOrTx, subscriptionId: string, pauseId: string, actor: Actor, clock: Clock): Promise<MembershipSubscriptionPause> {
  const { row, pause } = await visiblePause(db, subscriptionId, pauseId, actor)
  return toPause(pause, row.currency, clock.now())
}

/** Whole local calendar days from `now` until `end` in `timezone` (what an early resume gives back). */
export function unusedDays(now: Date, end: Date, timezone: string): number {
  const today = DateTime.fromJSDate(now, { zone: timezone }).startOf('day')
  const last = DateTime.fromJSDate(end, { zone: timezone }).startOf('day')
  return Math.max(0, Math.round(last.diff(today, 'days').days))
}

/** Ends an active pause now (the dates move back by its unused days) or calls off a pending one (back whole). */
export async function endPause(db: Db, subscriptionId: string, pauseId: string, actor: Actor, clock: Clock): Promise<MembershipSubscriptionPause> {
  const now = clock.now()
  const at = now.toISOString()
  return db.transaction().execute(async (tx) => {
    const { row, pause } = await visiblePause(tx, subscriptionId, pauseId, actor)
    const status = pauseStatusOf(pause, now)
    if (status === 'COMPLETED') throw new ConflictError('the pause is already over')
    const back = status === 'PENDING' ? 7 * pause.weeks : unusedDays(now, new Date(pause.end_date), row.timezone)
    const ended: MembershipPausesTable =
      status === 'PENDING' ? { ...pause, cancelled_at: at, end_date: pause.start_date } : { ...pause, ended_early_at: at, end_date: at }
    await tx.updateTable('membership_pauses').set({ cancelled_at: ended.cancelled_at, ended_early_at: ended.ended_early_at, end_date: ended.end_date }).where('id', '=', pauseId).execute()
    if (back > 0) {
      await tx.updateTable('membership_subscriptions').set({ ...shiftSchedule(row, -back, pause.start_date), updated_at: at }).where('id', '=', subscriptionId).execute()
    }
    await recordSubscriptionEvent(tx, subscriptionId, 'membership_subscription.resumed', now)
    return toPause(ended, row.currency, now)
  })
}
