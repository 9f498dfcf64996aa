// Staff and admin corrections of a subscription (PATCH): who may move money which way, and the
// history every correction leaves, shown to the member in their subscription's messages. Staff
// may lower a price or move the next charge later (a goodwill gesture at the desk); raising it or
// bringing the charge earlier bills the member's saved card sooner or for more, so only an admin may.
import { randomUUID } from 'node:crypto'
import type { Message } from '@club/contract'
import type { Actor } from '../actor.js'
import { currencyExponent, fromMinor } from '../billing/money.js'
import type { DbOrTx } from '../db/database.js'
import type { MembershipSubscriptionChangesTable, MembershipSubscriptionsTable } from '../db/schema.js'
import { ForbiddenError } from '../errors.js'

/** The corrected fields kept in the history, by their API names. */
const TRACKED = {
  price: 'price_minor',
  nextChargeDate: 'next_charge_date',
  nextGrantDate: 'next_grant_date',
  lastChargeDate: 'last_charge_date',
  timezone: 'timezone'
} as const satisfies Record<string, keyof MembershipSubscriptionsTable>

type Field = keyof typeof TRACKED

const CODES: Record<Field, string> = {
  price: 'PRICE_CHANGED',
  nextChargeDate: 'NEXT_CHARGE_DATE_CHANGED',
  nextGrantDate: 'NEXT_GRANT_DATE_CHANGED',
  lastChargeDate: 'LAST_CHARGE_DATE_CHANGED',
  timezone: 'TIMEZONE_CHANGED'
}

const LABELS: Record<Field, string> = {
  price: 'price',
  nextChargeDate: 'next charge date',
  nextGrantDate: 'next grant date',
  lastChargeDate: 'last charge date',
  timezone: 'timezone'
}

/** Refuses what only an admin may do: a higher price, an earlier next charge (403 naming it). */
export function checkCorrectionAuthority(current: MembershipSubscriptionsTable, changes: Partial<MembershipSubscriptionsTable>, actor: Actor): void {
  if (actor.role === 'admin') return
  const exponent = currencyExponent(current.currency)
  if (changes.price_minor !== undefined && changes.price_minor > current.price_minor) {
    throw new ForbiddenError(
      `price: only an admin may raise a subscription's price (from ${fromMinor(current.price_minor, exponent)} to ${fromMinor(changes.price_minor, exponent)}); staff may lower it`
    )
  }
  const next = changes.next_charge_date
  if (next !== undefined && next !== null && current.next_charge_date !== null && next < current.next_charge_date) {
    throw new ForbiddenError(`nextChargeDate: only an admin may bring the next charge earlier (from ${current.next_charge_date} to ${next}); staff may move it later`)
  }
}

function apiValue(field: Field, row: Pick<MembershipSubscriptionsTable, 'price_minor' | 'currency'> & Partial<MembershipSubscriptionsTable>): unknown {
  if (field === 'price') return fromMinor(row.price_minor, currencyExponent(row.currency))
  return row[TRACKED[field]] ?? null
}

/** Writes one history entry per tracked field the correction changed. */
export async function recordCorrections(
  tx: DbOrTx,
  current: MembershipSubscriptionsTable,
  changes: Partial<MembershipSubscriptionsTable>,
  actor: Actor,
  at: string
): Promise<void> {
  const after = { ...current, ...changes }
  const entries: MembershipSubscriptionChangesTable[] = []
  for (const field of Object.keys(TRACKED) as Field[]) {
    const from = apiValue(field, current)
    const to = apiValue(field, after)
    if (from === to) continue
    entries.push({
      id: randomUUID(),
      subscription_id: current.id,
      field,
      from_value: JSON.stringify(from),
      to_value: JSON.stringify(to),
      changed_by: actor.id,
      changed_by_role: actor.role,
      changed_at: at
    })
  }
  if (entries.length > 0) await tx.insertInto('membership_subscription_changes').values(entries).execute()
}

/** Each correction as the member reads it, oldest first: what, from, to, when and by whom. */
export function correctionMessages(rows: MembershipSubscriptionChangesTable[], currency: string): Message[] {
  return rows.map((row) => {
    const field = row.field as Field
    const show = (json: string) => {
      const value = JSON.parse(json) as unknown
      if (value === null) return 'none'
      return field === 'price' ? `${(value as number).toFixed(currencyExponent(currency))} ${currency}` : String(value)
    }
    const who = row.changed_by_role === 'admin' ? 'an admin' : 'staff'
    return {
      code: CODES[field] ?? 'CHANGED',
      message: `The ${LABELS[field] ?? row.field} was changed from ${show(row.from_value)} to ${show(row.to_value)} on ${row.changed_at} by ${who} (user ${row.changed_by})`
    }
  })
}

/** The corrections of some subscriptions, oldest first, by subscription id. */
export async function correctionsOf(db: DbOrTx, subscriptionIds: string[]): Promise<Map<string, MembershipSubscriptionChangesTable[]>> {
  const byId = new Map<string, MembershipSubscriptionChangesTable[]>()
  if (subscriptionIds.length === 0) return byId
  const rows = await db
    .selectFrom('membership_subscription_changes')
    .selectAll()
    .where('subscription_id', 'in', subscriptionIds)
    .orderBy('changed_at')
    .orderBy('id')
    .execute()
  for (const row of rows) byId.set(row.subscription_id, [...(byId.get(row.subscription_id) ?? []), row])
  return byId
}
