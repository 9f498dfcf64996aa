// The enrollment rows a subscription's life writes and its charges read: the owner's enrollment on
// confirmation, ending (and reopening) enrollments with their subscription, and the members a renewal
// is priced with. Kept apart from enrollments.ts (the routes' service) so that subscriptions.ts and the
// CHARGE job can use them without importing the service that imports them.
import { randomUUID } from 'node:crypto'
import type { MembershipType } from '@club/contract'
import type { DbOrTx } from '../db/database.js'
import type { MembershipEnrollmentsTable, MembershipSubscriptionsTable } from '../db/schema.js'

/**
 * The owner's enrollment, written in the transaction that confirms the subscription. It ends when the
 * subscription does (a NON_RECURRING one has its end from the start).
 */
export async function addOwnerEnrollment(tx: DbOrTx, subscription: MembershipSubscriptionsTable, type: MembershipType, at: string): Promise<void> {
  await tx
    .insertInto('membership_enrollments')
    .values({
      id: randomUUID(),
      subscription_id: subscription.id,
      membership_id: subscription.membership_id,
      membership_type: type,
      user_id: subscription.member_id,
      creator_id: subscription.creator_id,
      is_owner: 1,
      custom_fee_minor: 0,
      start_date: subscription.start_date,
      end_date: subscription.end_date,
      invitation_status: 'ACCEPTED',
      created_at: at
    })
    // The rules of ordering and enrolling (both checked in IMMEDIATE transactions) keep the owner from
    // holding another active enrollment of this type. Should one exist all the same, the payment is
    // already taken and must be recorded: the owner's row is left out rather than the charge lost.
    .onConflict((oc) => oc.doNothing())
    .execute()
}

/** The subscription ends at `endDate` (now, or the end of its cycle): so does every enrollment still running then. */
export async function endEnrollments(tx: DbOrTx, subscriptionId: string, endDate: string): Promise<void> {
  await tx
    .updateTable('membership_enrollments')
    .set({ end_date: endDate })
    .where('subscription_id', '=', subscriptionId)
    .where((eb) => eb.or([eb('end_date', 'is', null), eb('end_date', '>', endDate)]))
    .execute()
}

/**
 * A withdrawn cancellation: the enrollments that were to end with the subscription run on. Those
 * removed on their own (an earlier end date) stay ended.
 */
export async function reopenEnrollments(tx: DbOrTx, subscriptionId: string, endDate: string): Promise<void> {
  await tx
    .updateTable('membership_enrollments')
    .set({ end_date: null })
    .where('subscription_id', '=', subscriptionId)
    .where('end_date', '=', endDate)
    .where('invitation_status', '=', 'ACCEPTED')
    .execute()
}

/** An added member as a charge names them: their name, else their e-mail. */
export interface ChargedMember {
  name: string
  customFeeMinor: number
}

/**
 * The added members (not the owner) a charge for the period starting at `periodStart` is priced with:
 * those active at its start. Every attempt at one period prices the same members, and the current
 * period's total can be shown as it was charged.
 */
export async function chargedMembers(db: DbOrTx, subscriptionId: string, periodStart: string): Promise<ChargedMember[]> {
  const rows = await db
    .selectFrom('membership_enrollments as e')
    .innerJoin('users as u', 'u.id', 'e.user_id')
    .select(['e.custom_fee_minor', 'e.start_date', 'e.end_date', 'u.first_name', 'u.last_name', 'u.email'])
    .where('e.subscription_id', '=', subscriptionId)
    .where('e.is_owner', '=', 0)
    .where('e.start_date', '<=', periodStart)
    .where((eb) => eb.or([eb('e.end_date', 'is', null), eb('e.end_date', '>', periodStart)]))
    .orderBy('e.created_at')
    .orderBy('e.id')
    .execute()
  return rows.map((r) => ({ name: memberName(r), customFeeMinor: r.custom_fee_minor }))
}

export function memberName(user: { first_name: string | null; last_name: string | null; email: string }): string {
  const name = [user.first_name, user.last_name].filter((part) => part !== null && part.trim() !== '').join(' ').trim()
  return name === '' ? user.email : name
}

/** The user's active enrollment of this type, if any (owner or added). */
export async function activeEnrollmentOfType(db: DbOrTx, userId: string, type: MembershipType, at: string): Promise<MembershipEnrollmentsTable | undefined> {
  return db
    .selectFrom('membership_enrollments')
    .selectAll()
    .where('user_id', '=', userId)
    .where('membership_type', '=', type)
    .where((eb) => eb.or([eb('end_date', 'is', null), eb('end_date', '>', at)]))
    .orderBy('created_at', 'desc')
    .executeTakeFirst()
}
