// The events outbox (issue 35): one row per change an integrator is told of, written in the same
// transaction as the change. (`events` already names the calendar's events, so the table is
// outbox_events.) seq is taken from the one-row outbox_sequence, never from an identity column: a
// PostgreSQL sequence hands out numbers at insert and transactions commit in another order, so a
// reader could pass 11 before 10 commits. Updating the counter row holds its lock to the commit, so
// event-writing transactions take their numbers in commit order.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('outbox_sequence')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('last_seq', 'integer', (c) => c.notNull())
    .execute()
  await db.insertInto('outbox_sequence').values({ id: 1, last_seq: 0 }).execute()
  await db.schema
    .createTable('outbox_events')
    .addColumn('seq', 'integer', (c) => c.primaryKey())
    // evt_ + 128 random bits: unique without an index enforcing it, and nothing looks an event up
    // by it. A unique index on a random key costs each write a random page (pnpm bench: a redemption
    // wrote a quarter fewer per second with it).
    .addColumn('id', 'text', (c) => c.notNull())
    // resource.verb, one of the contract's eventTypes.
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    // JSON: the resource as its GET route answered right after the change.
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  // No index on type: the feed and the worker read in seq order (the primary key) and a types filter
  // skips rows as it goes; every index here is one more page each evented write pays for.
  await db.schema.createIndex('outbox_events_created').on('outbox_events').columns(['created_at']).execute()
  // What integrators were last told of an approved box's connectivity (1 online, 0 offline, null
  // nothing yet): online is derived from the last poll at read time, so the transition is found by
  // comparing with this and told once (replay_server.online / .offline).
  await db.schema.alterTable('replay_servers').addColumn('online_told', 'integer').execute()
  // 1 once integrators were told a subscription is canceled. A cancellation at the cycle's end sets
  // the end date when asked and takes effect by time alone; the CHARGE job tells it once that date
  // has passed. The ones that ended before events existed count as told.
  await db.schema.alterTable('membership_subscriptions').addColumn('cancellation_told', 'integer').execute()
  await db
    .updateTable('membership_subscriptions')
    .set({ cancellation_told: 1 })
    .where('cancellation_requested_at', 'is not', null)
    .where('end_date', '<=', new Date().toISOString())
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('membership_subscriptions').dropColumn('cancellation_told').execute()
  await db.schema.alterTable('replay_servers').dropColumn('online_told').execute()
  await db.schema.dropTable('outbox_events').execute()
  await db.schema.dropTable('outbox_sequence').execute()
}
