// Memberships in the benchmark: subscriptions to read over HTTP, and a CHARGE job over 10,000 due
// subscriptions with the `test` provider, timed as renewals per second. The subscriptions are
// inserted straight into the tables as the ORDER path leaves them (one plan, one confirmed
// subscription and its paid first order each), since ordering is not what is measured.
import { randomUUID } from 'node:crypto'
import { anchorAt, chargeDate } from '@club/server/billing/calendar'
import type { Db } from '@club/server/db/database'
import { runChargeJob } from '@club/server/jobs/membership-charge'
import { createMembership } from '@club/server/memberships/plans'
import { TestPaymentProvider } from '@club/server/payments'
import { load } from './harness.js'
import { insertChunked } from './seed.js'
import type { Scenario } from './scenarios.js'

// Started a fortnight ago, so their first renewal and grant are a fortnight ahead: the servers the
// benchmark starts find nothing due. (Started on a fixed date in January, every subscription owed
// months of grants and charges, and both servers' schedulers spent the first measured minutes
// catching up, under the routes measured then and before the CHARGE job below, which found nothing
// left to renew.) The CHARGE job is run for the renewal date itself.
const START = new Date(Math.floor((Date.now() - 14 * 86_400_000) / 60_000) * 60_000)
const clock = { now: () => new Date() }

export interface SeededMemberships {
  /** Per subscription: its id and its member's access token (who may read it). */
  readable: Array<{ id: string; token: string }>
  /** The date the CHARGE job finds every seeded subscription due. */
  dueDate: Date
  count: number
}

/**
 * `count` confirmed monthly subscriptions started on START (a fortnight ago), each held by its own new member with a
 * card the test provider accepts; the first `readers` belong to the seeded users whose tokens are given.
 */
export async function seedMemberships(db: Db, count: number, readers: Array<{ userId: string; token: string }>): Promise<SeededMemberships> {
  const plan = await createMembership(
    db,
    {
      displayName: 'Adult monthly',
      type: 'BASIC_MEMBER',
      chargeType: 'MONTHLY',
      price: 49.9,
      initiationFee: 25,
      taxes: [{ name: 'VAT', percentage: 21, inclusive: false }],
      fees: [{ name: 'Service', percentage: 2.5 }]
    },
    { clock: { now: () => START }, currency: 'EUR' }
  )
  const anchor = anchorAt(START, 'Europe/Madrid')
  const next = chargeDate(anchor, 'MONTHLY', 1).toISOString()
  const at = START.toISOString()
  const members = Array.from({ length: count }, (_, i) => readers[i]?.userId ?? randomUUID())
  const newUsers = members.slice(readers.length).map((id, i) => ({
    id,
    email: `member${i}@memberships.bench.example.org`,
    password_hash: 'x',
    first_name: 'Member',
    last_name: String(i),
    role: 'member' as const,
    created_at: at,
    updated_at: at
  }))
  const subscriptions = members.map((memberId) => ({
    id: randomUUID(),
    membership_id: plan.id,
    member_id: memberId,
    creator_id: memberId,
    status: 'CONFIRMED' as const,
    condition: 'VALID' as const,
    condition_updated_at: at,
    timezone: 'Europe/Madrid',
    anchor_local: anchor.local,
    charge_type: 'MONTHLY' as const,
    currency: 'EUR',
    price_minor: 4990,
    initiation_fee_minor: 2500,
    additional_member_fee_minor: 0,
    duration_days: null,
    start_date: at,
    end_date: null,
    cancellation_requested_at: null,
    cycle_index: 0,
    billing_cycle_start: at,
    billing_cycle_end: next,
    last_charge_date: at,
    next_charge_date: next,
    next_retry_date: null,
    next_grant_date: next,
    last_grant_date: at,
    last_order_id: null,
    errors: null,
    created_at: at,
    updated_at: at
  }))
  await db.transaction().execute(async (tx) => {
    await insertChunked(newUsers, (chunk) => tx.insertInto('users').values(chunk).execute())
    await insertChunked(members, (chunk) =>
      tx
        .insertInto('payment_methods')
        .values(
          chunk.map((userId) => ({
            id: randomUUID(),
            user_id: userId,
            brand: 'visa',
            last4: '4242',
            exp_month: 12,
            exp_year: 2030,
            is_default: 1,
            created_at: at,
            provider_customer_ref: null,
            provider_method_ref: null
          }))
        )
        .execute()
    )
    await insertChunked(subscriptions, (chunk) => tx.insertInto('membership_subscriptions').values(chunk).execute())
  })
  return {
    readable: subscriptions.slice(0, readers.length).map((s, i) => ({ id: s.id, token: readers[i]!.token })),
    dueDate: new Date(next),
    count
  }
}

/** The CHARGE job over every seeded subscription, in this process against the same file the server uses. */
export async function timeChargeJob(db: Db, seeded: SeededMemberships) {
  const t = performance.now()
  const run = await runChargeJob(db, seeded.dueDate, { clock, provider: new TestPaymentProvider() })
  const seconds = (performance.now() - t) / 1000
  const renewed = run.counts.renewed ?? 0
  return { due: seeded.count, renewed, seconds: Math.round(seconds * 100) / 100, renewalsPerSecond: Math.round(renewed / seconds), counts: run.counts }
}

export const membershipScenario: Scenario = {
  name: 'GET membership-subscriptions/{id} (Bearer)',
  target: 0.4,
  run: (server, seeded, durationSeconds, connections) => {
    const readable = seeded.memberships!.readable
    return load({
      name: 'membership subscription read',
      url: server.url,
      paths: readable.map((r) => `/apis/v2/membership-subscriptions/${r.id}`),
      headers: (i) => ({ authorization: `Bearer ${readable[i % readable.length]!.token}` }),
      durationSeconds,
      connections
    })
  }
}
