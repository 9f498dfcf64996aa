// What the CHARGE job does to one subscription, as pure functions of the row, its plan and the date:
// which step is due (decideRenewal) and the row once a charge came back (afterCharge). Unit-tested
// rule by rule in membership-charge.test.ts; membership-charge.ts does the database and provider work.
import { anchorAt, chargeDate, daysAfter, type Anchor, type RenewalPeriod } from '../billing/calendar.js'
import type { MembershipSubscriptionsTable } from '../db/schema.js'
import { DAY_MS } from '../instants.js'
import type { Plan } from '../memberships/plans.js'
import type { ChargeResult } from '../payments/provider.js'

/** Retries: every other day in GRACE, every third in HOLD (BILLING.md). */
const GRACE_RETRY_DAYS = 2
const HOLD_RETRY_DAYS = 3

export type RenewalStep =
  | { kind: 'none' }
  /** A requested cancellation takes effect at the end of the cycle; a HOLD that ran out cancels. */
  | { kind: 'end'; at: string; reason: 'cancelled' | 'hold_expired' }
  /** Charge the period starting at periodStart (the anniversary; in HOLD, the day of the payment). */
  | { kind: 'charge'; periodStart: string; periodEnd: string; retry: boolean }

const anchorOf = (row: MembershipSubscriptionsTable): Anchor => ({ local: row.anchor_local, timezone: row.timezone })

/** What the job does to one subscription on `date`: pure, so every rule has a unit test. */
export function decideRenewal(row: MembershipSubscriptionsTable, plan: Pick<Plan, 'holdDays'>, date: Date): RenewalStep {
  const at = date.toISOString()
  if (row.status !== 'CONFIRMED') return { kind: 'none' }
  if (row.end_date !== null && row.end_date <= at) return { kind: 'none' }
  if (row.charge_type === 'FREE' || row.charge_type === 'NON_RECURRING') return { kind: 'none' }
  const period = row.charge_type as RenewalPeriod
  if (row.cancellation_requested_at !== null && row.billing_cycle_end !== null && row.billing_cycle_end <= at) {
    return { kind: 'end', at: row.billing_cycle_end, reason: 'cancelled' }
  }
  if (row.condition === 'VALID') {
    if (row.next_charge_date === null || row.next_charge_date > at) return { kind: 'none' }
    return { kind: 'charge', periodStart: row.next_charge_date, periodEnd: chargeDate(anchorOf(row), period, row.cycle_index + 2).toISOString(), retry: false }
  }
  if (row.condition === 'HOLD') {
    // A HOLD ends when its days are over, whether or not a retry falls on that day.
    const holdEnds = new Date(Date.parse(row.condition_updated_at) + plan.holdDays * DAY_MS).toISOString()
    if (at >= holdEnds) return { kind: 'end', at: holdEnds, reason: 'hold_expired' }
  }
  if (row.next_retry_date === null || row.next_retry_date > at) return { kind: 'none' }
  if (row.condition === 'HOLD') {
    // Paying in HOLD re-anchors the membership to the payment date (afterCharge), but the claim is
    // keyed on the unpaid period, which every run sees alike: two runs at once, or a run after one
    // that could not reach the provider, find the same claim instead of charging again.
    const anchor = anchorAt(date, row.timezone)
    return { kind: 'charge', periodStart: row.next_charge_date!, periodEnd: chargeDate(anchor, period, 1).toISOString(), retry: true }
  }
  // GRACE keeps the anniversary: the unpaid period is the one being retried.
  return { kind: 'charge', periodStart: row.next_charge_date!, periodEnd: chargeDate(anchorOf(row), period, row.cycle_index + 2).toISOString(), retry: true }
}

/** The subscription after a charge for `step` came back: paid, or one step further along GRACE and HOLD. */
export function afterCharge(
  row: MembershipSubscriptionsTable,
  plan: Pick<Plan, 'graceDays'>,
  step: Extract<RenewalStep, { kind: 'charge' }>,
  outcome: ChargeResult,
  date: Date,
  orderId: string
): MembershipSubscriptionsTable {
  const at = date.toISOString()
  const base = { ...row, last_order_id: orderId, updated_at: at }
  if (outcome.status === 'succeeded') {
    const reanchored = row.condition === 'HOLD'
    const anchor = anchorAt(date, row.timezone)
    const periodEnd = reanchored ? chargeDate(anchor, row.charge_type as RenewalPeriod, 1).toISOString() : step.periodEnd
    return {
      ...base,
      anchor_local: reanchored ? anchor.local : row.anchor_local,
      cycle_index: reanchored ? 0 : row.cycle_index + 1,
      billing_cycle_start: reanchored ? at : step.periodStart,
      billing_cycle_end: periodEnd,
      next_charge_date: periodEnd,
      last_charge_date: at,
      next_retry_date: null,
      condition: 'VALID',
      condition_updated_at: row.condition === 'VALID' ? row.condition_updated_at : at,
      errors: null
    }
  }
  // A renewal is off-session: a bank asking the customer to authenticate is a failed renewal too,
  // and the member is told so in `errors`.
  const error =
    outcome.status === 'declined'
      ? { code: outcome.declineCode, message: outcome.message, details: null }
      : { code: 'requires_authentication', message: "the member's bank asks them to authenticate the renewal", details: null }
  const retryIn = (days: number) => daysAfter(anchorAt(date, row.timezone), days).toISOString()
  if (row.condition === 'VALID') {
    return { ...base, condition: 'GRACE', condition_updated_at: at, next_retry_date: retryIn(GRACE_RETRY_DAYS), errors: JSON.stringify([error]) }
  }
  if (row.condition === 'GRACE') {
    const graceEnds = new Date(Date.parse(row.condition_updated_at) + plan.graceDays * DAY_MS).toISOString()
    if (at >= graceEnds) return { ...base, condition: 'HOLD', condition_updated_at: at, next_retry_date: retryIn(HOLD_RETRY_DAYS), errors: JSON.stringify([error]) }
    return { ...base, next_retry_date: retryIn(GRACE_RETRY_DAYS), errors: JSON.stringify([error]) }
  }
  return { ...base, next_retry_date: retryIn(HOLD_RETRY_DAYS), errors: JSON.stringify([error]) }
}
