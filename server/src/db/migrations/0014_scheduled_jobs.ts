// Scheduled jobs (issue 14): every run of a job, the deliveries and slots that must run at most once,
// the locks events hold on their places, the reminders already sent, the daily summaries, and a
// user's request to be erased. Also the indexes the cleanup job purges by.
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('job_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('job', 'text', (c) => c.notNull())
    // webhook, schedule or cli: who started it (PROTOCOLS.md).
    .addColumn('trigger', 'text', (c) => c.notNull())
    // The webhook-id, or the scheduled slot; null when run by hand.
    .addColumn('delivery', 'text')
    .addColumn('date', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('counts', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('note', 'text')
    .addColumn('error', 'text')
    .execute()
  await db.schema.createIndex('job_runs_started').on('job_runs').columns(['started_at', 'id']).execute()
  await db.schema.createIndex('job_runs_job_started').on('job_runs').columns(['job', 'started_at', 'id']).execute()

  // A webhook delivery or a scheduled slot: done once. Whoever runs it holds the row's lease until it
  // expires; a completed row is never run again.
  await db.schema
    .createTable('job_deliveries')
    .addColumn('job', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('holder', 'text', (c) => c.notNull())
    .addColumn('lease_expires_at', 'text', (c) => c.notNull())
    .addColumn('completed_at', 'text')
    .addColumn('run_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('job_deliveries_pk', ['job', 'key'])
    .execute()
  await db.schema.createIndex('job_deliveries_created').on('job_deliveries').column('created_at').execute()

  await db.schema
    .createTable('event_locks')
    .addColumn('event_id', 'text', (c) => c.primaryKey().references('events.id').onDelete('cascade'))
    .addColumn('locked_at', 'text', (c) => c.notNull())
    .addColumn('locked_until', 'text', (c) => c.notNull())
    .addColumn('released_at', 'text')
    .execute()
  await db.schema.createIndex('event_locks_held').on('event_locks').columns(['released_at', 'locked_until']).execute()

  await db.schema
    .createTable('reminders_sent')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text', (c) => c.notNull())
    // What the reminder is about, e.g. the renewal date: a later renewal is a new occurrence.
    .addColumn('occurrence', 'text', (c) => c.notNull())
    .addColumn('recipient_id', 'text', (c) => c.notNull())
    .addColumn('sent_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('reminders_sent_once', ['kind', 'subject_id', 'occurrence'])
    .execute()
  await db.schema.createIndex('reminders_sent_at').on('reminders_sent').column('sent_at').execute()

  await db.schema
    .createTable('summaries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // The local day it sums up, YYYY-MM-DD in `timezone`.
    .addColumn('day', 'text', (c) => c.notNull().unique())
    .addColumn('timezone', 'text', (c) => c.notNull())
    .addColumn('figures', 'text', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('html', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()

  await db.schema.alterTable('users').addColumn('deletion_requested_at', 'text').execute()
  await db.schema.alterTable('users').addColumn('erased_at', 'text').execute()
  await db.schema.createIndex('users_deletion_requested').on('users').column('deletion_requested_at').where(sql.ref('erased_at'), 'is', null).execute()

  // What the cleanup job deletes by.
  await db.schema.createIndex('tokens_expires_at').on('tokens').column('expires_at').execute()
  await db.schema.createIndex('mail_outbox_created_at').on('mail_outbox').column('created_at').execute()
  await db.schema.createIndex('password_reset_tokens_expires_at').on('password_reset_tokens').column('expires_at').execute()
  await db.schema.createIndex('phone_verifications_expires_at').on('phone_verifications').column('expires_at').execute()
  await db.schema.createIndex('users_created_at').on('users').column('created_at').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const index of ['users_created_at', 'phone_verifications_expires_at', 'password_reset_tokens_expires_at', 'mail_outbox_created_at', 'tokens_expires_at', 'users_deletion_requested']) {
    await db.schema.dropIndex(index).execute()
  }
  await db.schema.alterTable('users').dropColumn('erased_at').execute()
  await db.schema.alterTable('users').dropColumn('deletion_requested_at').execute()
  for (const table of ['summaries', 'reminders_sent', 'event_locks', 'job_deliveries', 'job_runs']) await db.schema.dropTable(table).execute()
}
