// The users/cleanup job: deletes what is no longer needed and should not be kept, each purge in
// batches of BATCH_SIZE rows per transaction (a large table is never locked for long), and erases
// the accounts whose deletion was asked USER_DELETION_GRACE_DAYS ago, one account per transaction.
import { revokeUserApiKeys } from '../api-keys/service.js'
import { sql, type RawBuilder } from 'kysely'
import type { DbOrTx } from '../db/database.js'
import { DAY_MS } from '../instants.js'
import { endEnrollments } from '../memberships/enrollment-rows.js'
import { recordSubscriptionEvent } from '../memberships/subscription-view.js'
import { recordUserEvent } from '../users/service.js'
import type { JobResult } from './runs.js'
import { count, purge, type ScheduledJobDeps } from './deps.js'

/** The e-mail an erased account keeps: unique (the column is), unroutable (RFC 2606's .invalid). */
const erasedEmail = (userId: string) => `erased-${userId}@erased.invalid`

export async function runUsersCleanup(deps: ScheduledJobDeps, date: Date): Promise<JobResult> {
  const { db, config } = deps
  const now = date.toISOString()
  const dayAgo = new Date(date.getTime() - DAY_MS).toISOString()
  const retained = new Date(date.getTime() - config.RETENTION_DAYS * DAY_MS).toISOString()
  const eventsKept = new Date(date.getTime() - config.EVENT_RETENTION_DAYS * DAY_MS).toISOString()
  const counts: Record<string, number> = {}
  const purges: Array<[string, string, RawBuilder<unknown>]> = [
    // Expired codes are refused anyway; a used one inside its lifetime stays, so a replay still revokes its tokens.
    ['authorization_codes', 'authorization_codes', sql`expires_at <= ${now}`],
    ['forum_connect_nonces', 'forum_nonces', sql`expires_at <= ${now}`],
    ['password_reset_tokens', 'password_reset_tokens', sql`expires_at <= ${now} or used_at is not null`],
    ['phone_verifications', 'phone_verifications', sql`expires_at <= ${now}`],
    // The send limits look back an hour.
    ['phone_verification_sends', 'phone_verification_sends', sql`created_at < ${dayAgo}`],
    ['tokens', 'tokens', sql`expires_at < ${dayAgo}`],
    ['mail_outbox', 'mail_outbox', sql`created_at < ${retained}`],
    ['job_runs', 'job_runs', sql`started_at < ${retained} and status != 'running'`],
    ['membership_job_runs', 'membership_job_runs', sql`started_at < ${retained}`],
    ['job_deliveries', 'webhook_deliveries', sql`created_at < ${retained} and (completed_at is not null or lease_expires_at <= ${now})`],
    ['reminders_sent', 'reminders_sent', sql`sent_at < ${retained}`],
    ['event_locks', 'event_locks', sql`released_at is not null and released_at < ${retained}`],
    // A settled delivery to a webhook endpoint, with its attempts (they cascade).
    ['endpoint_deliveries', 'endpoint_deliveries', sql`updated_at < ${retained} and status in ('SUCCEEDED', 'FAILED')`],
    // The event feed's outbox: an integrator away longer than EVENT_RETENTION_DAYS reads on from the oldest kept.
    ['outbox_events', 'events', sql`created_at < ${eventsKept}`]
  ]
  for (const [table, outcome, condition] of purges) count(counts, `${outcome}_deleted`, await purge(db, table, condition))

  const due = new Date(date.getTime() - config.USER_DELETION_GRACE_DAYS * DAY_MS).toISOString()
  const erasable = await db.selectFrom('users').select('id').where('erased_at', 'is', null).where('deletion_requested_at', '<=', due).orderBy('deletion_requested_at').execute()
  for (const { id } of erasable) {
    const erased = await db.transaction().execute((tx) => eraseUser(tx, id, now))
    count(counts, erased ? 'users_erased' : 'users_erased_elsewhere')
  }
  return { counts }
}

/**
 * Erases one account's personal data: name, e-mail (also as the recipient of the mail records kept),
 * password, payment methods and reset tokens; ends its memberships (and its places in others');
 * revokes its tokens and API keys. Orders, with their amounts, stay for the accounts. Answers false
 * when another run erased it first.
 */
async function eraseUser(tx: DbOrTx, userId: string, now: string): Promise<boolean> {
  const user = await tx.selectFrom('users').select(['email', 'created_at']).where('id', '=', userId).where('erased_at', 'is', null).executeTakeFirst()
  if (!user) return false
  const email = erasedEmail(userId)
  await tx.updateTable('users').set({ email, first_name: null, last_name: null, password_hash: '', erased_at: now, updated_at: now }).where('id', '=', userId).execute()
  // Stored lower-case; a message may have been addressed as typed.
  await tx.updateTable('mail_outbox').set({ recipient: email }).where(sql`lower(recipient)`, '=', user.email.toLowerCase()).execute()
  await tx.deleteFrom('payment_methods').where('user_id', '=', userId).execute()
  await tx.deleteFrom('password_reset_tokens').where('user_id', '=', userId).execute()
  await tx.updateTable('tokens').set({ revoked_at: now }).where('user_id', '=', userId).where('revoked_at', 'is', null).execute()
  await revokeUserApiKeys(tx, userId, now)
  const inForce = await tx
    .selectFrom('membership_subscriptions')
    .select(['id', 'cancellation_requested_at'])
    .where('member_id', '=', userId)
    .where('status', '=', 'CONFIRMED')
    .where((eb) => eb.or([eb('end_date', 'is', null), eb('end_date', '>', now)]))
    .execute()
  for (const subscription of inForce) {
    await tx
      .updateTable('membership_subscriptions')
      .set({ cancellation_requested_at: subscription.cancellation_requested_at ?? now, end_date: now, next_retry_date: null, updated_at: now })
      .where('id', '=', subscription.id)
      .execute()
    await endEnrollments(tx, subscription.id, now)
    await recordSubscriptionEvent(tx, subscription.id, 'membership_subscription.canceled', new Date(now))
  }
  await tx
    .updateTable('membership_enrollments')
    .set({ end_date: now })
    .where('user_id', '=', userId)
    .where((eb) => eb.or([eb('end_date', 'is', null), eb('end_date', '>', now)]))
    .execute()
  const erased = await recordUserEvent(tx, userId, 'user.deleted', new Date(now))
  // The user.created told before stays in the feed for EVENT_RETENTION_DAYS, and may be sent again
  // to an endpoint: it keeps its type and time but shows the user as erased, as user.deleted does.
  // It was written at the user's creation: found by its time (indexed), not by a scan of the outbox.
  await tx
    .updateTable('outbox_events')
    .set({ data: JSON.stringify(erased) })
    .where('created_at', '=', user.created_at)
    .where('resource_id', '=', userId)
    .where('type', '=', 'user.created')
    .execute()
  return true
}
