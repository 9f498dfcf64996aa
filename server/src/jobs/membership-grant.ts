// The GRANT membership job: a membership's perks are granted monthly (BILLING.md), whatever its
// charge period; nothing while it is paused or in HOLD. Each (subscription, grant date) is done at
// most once under a unique key, whoever runs the job. The perk itself, a package from the plan's
// PACKAGE template, is issued in the same transaction as the grant row, so it is issued exactly once.
import { randomUUID } from 'node:crypto'
import { setImmediate } from 'node:timers/promises'
import type { UserMembershipSubscriptionSummary } from '@club/contract'
import { cycleAt, grantDate, type Anchor } from '../billing/calendar.js'
import type { Db, DbOrTx } from '../db/database.js'
import type { MembershipGrantsTable } from '../db/schema.js'
import { membershipRow, toPlan } from '../memberships/plans.js'
import { subscriptionPath } from '../memberships/subscription-rows.js'
import { issuePackage } from '../packages/issue.js'
import type { JobDeps } from './membership-charge.js'

/** Grants a subscription may owe at most in one run (a job not run for two years catches up, bounded). */
const MAX_CATCH_UP = 24

export interface GrantRun {
  id: string
  type: 'GRANT'
  date: string
  startedDate: string
  finishedDate: string
  counts: Record<string, number>
  users: UserMembershipSubscriptionSummary[]
}

/** The first monthly grant date from the anchor strictly after `after`. */
export function nextGrantAfter(anchor: Anchor, after: Date): Date {
  const { index } = cycleAt(anchor, 'MONTHLY', after)
  let n = index
  // A schedule re-anchored on its next charge (a pause, a staff correction) has grants before its
  // anchor: a yearly plan's monthly grants count back from it.
  while (grantDate(anchor, n - 1) > after) n--
  while (grantDate(anchor, n) <= after) n++
  return grantDate(anchor, n)
}

export async function runGrantJob(db: Db, date: Date, deps: Pick<JobDeps, 'clock'>): Promise<GrantRun> {
  const id = randomUUID()
  const started = deps.clock.now().toISOString()
  const at = date.toISOString()
  await db.insertInto('membership_job_runs').values({ id, type: 'GRANT', date: at, started_at: started, finished_at: null, counts: '{}', error: null }).execute()
  const due = await db
    .selectFrom('membership_subscriptions')
    .select('id')
    .where('status', '=', 'CONFIRMED')
    .where('next_grant_date', '<=', at)
    .orderBy('next_grant_date')
    .orderBy('id')
    .execute()
  // A run that granted nothing says so.
  const counts: Record<string, number> = { granted: 0 }
  const users: UserMembershipSubscriptionSummary[] = []
  for (const { id: subscriptionId } of due) {
    // A turn of the event loop between subscriptions: SQLite's calls block it and a grant does no other
    // I/O, so requests would otherwise wait for the whole run.
    await setImmediate()
    const outcomes = await grantOne(db, subscriptionId, date, deps.clock.now())
    for (const outcome of outcomes) {
      counts[outcome.outcome] = (counts[outcome.outcome] ?? 0) + 1
      if (outcome.outcome === 'granted') {
        users.push({ id: subscriptionId, user: { id: outcome.userId }, amount: 0, _links: { self: { href: subscriptionPath(subscriptionId) } } })
      }
    }
  }
  const finished = deps.clock.now().toISOString()
  await db.updateTable('membership_job_runs').set({ finished_at: finished, counts: JSON.stringify(counts) }).where('id', '=', id).execute()
  return { id, type: 'GRANT', date: at, startedDate: started, finishedDate: finished, counts, users }
}

/** The plan's perk package for one grant; a template that is no longer a PACKAGE template issues nothing. */
async function issuePerk(tx: DbOrTx, templateId: string, userId: string, grantId: string, at: Date, timezone: string): Promise<void> {
  const template = await tx.selectFrom('templates').select('type').where('id', '=', templateId).executeTakeFirst()
  if (template?.type !== 'PACKAGE') return
  await issuePackage(tx, { templateId, userId, creatorId: null, source: 'MEMBERSHIP', issuedAt: at, timezone, grantId })
}

/** Every grant of one subscription due by `date`, in one IMMEDIATE transaction. */
async function grantOne(db: Db, subscriptionId: string, date: Date, now: Date): Promise<Array<{ outcome: MembershipGrantsTable['outcome'] | 'ended' | 'done_elsewhere'; userId: string }>> {
  const at = date.toISOString()
  return db.transaction().execute(async (tx) => {
    const row = await tx.selectFrom('membership_subscriptions').selectAll().where('id', '=', subscriptionId).executeTakeFirstOrThrow()
    if (row.next_grant_date === null || row.next_grant_date > at) return [{ outcome: 'done_elsewhere' as const, userId: row.member_id }]
    const plan = toPlan(await membershipRow(tx, row.membership_id))
    const anchor: Anchor = { local: row.anchor_local, timezone: row.timezone }
    const results: Array<{ outcome: MembershipGrantsTable['outcome'] | 'ended' | 'done_elsewhere'; userId: string }> = []
    let next: string | null = row.next_grant_date
    let lastGranted = row.last_grant_date
    for (let i = 0; i < MAX_CATCH_UP && next !== null && next <= at; i++) {
      const when: string = next
      if (row.end_date !== null && row.end_date <= when) {
        // Nothing is granted after the membership ended.
        results.push({ outcome: 'ended', userId: row.member_id })
        next = null
        break
      }
      const paused = await tx
        .selectFrom('membership_pauses')
        .select('id')
        .where('subscription_id', '=', subscriptionId)
        .where('cancelled_at', 'is', null)
        .where('start_date', '<=', when)
        .where('end_date', '>', when)
        .executeTakeFirst()
      const outcome: MembershipGrantsTable['outcome'] = row.condition === 'HOLD' ? 'skipped_hold' : paused ? 'skipped_paused' : 'granted'
      const grantId = randomUUID()
      const inserted = await tx
        .insertInto('membership_grants')
        .values({ id: grantId, subscription_id: subscriptionId, grant_date: when, outcome, perk_template_id: outcome === 'granted' ? plan.perkTemplateId : null, created_at: now.toISOString() })
        .onConflict((oc) => oc.columns(['subscription_id', 'grant_date']).doNothing())
        .executeTakeFirst()
      const granted = Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1
      if (granted && outcome === 'granted' && plan.perkTemplateId !== null) await issuePerk(tx, plan.perkTemplateId, row.member_id, grantId, new Date(when), row.timezone)
      results.push({ outcome: granted ? outcome : 'done_elsewhere', userId: row.member_id })
      if (outcome === 'granted') lastGranted = when
      next = nextGrantAfter(anchor, new Date(when)).toISOString()
    }
    await tx.updateTable('membership_subscriptions').set({ next_grant_date: next, last_grant_date: lastGranted, updated_at: now.toISOString() }).where('id', '=', subscriptionId).execute()
    return results
  })
}
