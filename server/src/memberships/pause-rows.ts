// A pause as the API shows it, and its status from its dates: read by the subscription's answer and
// by pauses.ts, which changes pauses.
import type { MembershipSubscriptionPause } from '@club/contract'
import { currencyExponent, fromMinor } from '../billing/money.js'
import type { DbOrTx } from '../db/database.js'
import type { MembershipPausesTable } from '../db/schema.js'
import { subscriptionPath } from './subscription-rows.js'

export type PauseStatus = MembershipSubscriptionPause['status']

/** PENDING before its start, ACTIVE inside, COMPLETED after (or once called off): never stored. */
export function pauseStatusOf(pause: Pick<MembershipPausesTable, 'start_date' | 'end_date' | 'cancelled_at'>, now: Date): PauseStatus {
  const at = now.toISOString()
  if (pause.cancelled_at !== null) return 'COMPLETED'
  if (at < pause.start_date) return 'PENDING'
  return at < pause.end_date ? 'ACTIVE' : 'COMPLETED'
}

export function toPause(row: MembershipPausesTable, currency: string, now: Date): MembershipSubscriptionPause {
  return {
    id: row.id,
    pauseStartDate: row.start_date,
    pauseEndDate: row.end_date,
    pauseDurationWeeks: row.weeks,
    pauseFeePaid: row.fee_minor > 0 ? fromMinor(row.fee_minor, currencyExponent(currency)) : null,
    status: pauseStatusOf(row, now),
    createdAt: row.created_at,
    membershipSubscription: { id: row.subscription_id },
    _links: { self: { href: `${subscriptionPath(row.subscription_id)}/pauses/${row.id}` }, membershipSubscription: { href: subscriptionPath(row.subscription_id) } }
  }
}

/** The pause in force or scheduled next for a subscription, if any. */
export async function openPause(db: DbOrTx, subscriptionId: string, now: Date): Promise<MembershipPausesTable | undefined> {
  return db
    .selectFrom('membership_pauses')
    .selectAll()
    .where('subscription_id', '=', subscriptionId)
    .where('cancelled_at', 'is', null)
    .where('end_date', '>', now.toISOString())
    .orderBy('start_date')
    .executeTakeFirst()
}
