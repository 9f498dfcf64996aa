// Changing a subscription after it is bought: a cancellation (or withdrawing it) and staff corrections,
// each in one IMMEDIATE transaction with its event and its enrollments' end.
import type { EventType, MembershipSubscription, MembershipSubscriptionPatchable as MembershipSubscriptionPatch } from '@club/contract'
import { isStaff, type Actor } from '../actor.js'
import { anchorAt, isValidTimezone } from '../billing/calendar.js'
import { currencyExponent } from '../billing/money.js'
import { requestMinor } from '../billing/request-money.js'
import type { Clock } from '../clock.js'
import type { Db, DbOrTx } from '../db/database.js'
import type { MembershipSubscriptionsTable } from '../db/schema.js'
import { BadRequestError, ConflictError, ForbiddenError } from '../errors.js'
import { requestInstant } from '../instants.js'
import { endEnrollments, reopenEnrollments } from './enrollment-rows.js'
import { checkCorrectionAuthority, recordCorrections } from './corrections.js'
import { membershipRow, toPlan, type Plan } from './plans.js'
import { inForce, visibleRow } from './subscription-rows.js'
import { answer, extendedStatusOf, recordSubscriptionEvent } from './subscription-view.js'

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
