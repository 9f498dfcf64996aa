// A subscription's address, who may see it and whether it is in force: what every membership module
// needs and that needs nothing of theirs (so pauses and subscriptions import it without a circle).
import { isStaff, type Actor } from '../actor.js'
import type { DbOrTx } from '../db/database.js'
import type { MembershipSubscriptionsTable } from '../db/schema.js'
import { NotFoundError } from '../errors.js'

export const subscriptionPath = (id: string) => `/apis/v2/membership-subscriptions/${id}`
/** A DRAFT (made, not paid) older than this is given up (BILLING.md). */
export const DRAFT_LIFETIME_MS = 23 * 3600 * 1000

/** A subscription its owner or staff may see; anyone else is told it does not exist. */
export async function visibleRow(db: DbOrTx, id: string, actor: Actor): Promise<MembershipSubscriptionsTable> {
  const row = await db.selectFrom('membership_subscriptions').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row || (row.member_id !== actor.id && !isStaff(actor))) throw new NotFoundError(`membership subscription ${id.slice(0, 100)} not found`)
  return row
}

export function inForce(row: MembershipSubscriptionsTable, now: Date): boolean {
  return row.status === 'CONFIRMED' && (row.end_date === null || row.end_date > now.toISOString())
}
