// Webhook endpoints (issue 35): where an admin wants events sent, the deliveries of each event to
// each endpoint, and every attempt of a delivery. No secret is stored: an endpoint's signing secret
// is derived from the server's key, its id and secret_generation (see webhook-endpoints/secrets.ts).
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('url', 'text', (c) => c.notNull())
    // JSON array of event types.
    .addColumn('event_types', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('secret_generation', 'integer', (c) => c.notNull())
    .addColumn('secret_created_at', 'text', (c) => c.notNull())
    // The generation before secret_generation still signs until then (rotation overlap); null: none.
    .addColumn('previous_secret_expires_at', 'text')
    // The outbox seq up to which events were turned into deliveries for this endpoint.
    .addColumn('after_seq', 'integer', (c) => c.notNull())
    // Since when every attempt failed (null after any success): 3 days of it disables the endpoint.
    .addColumn('failing_since', 'text')
    .addColumn('disabled_reason', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('endpoint_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
    .addColumn('event_seq', 'integer', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    // PENDING (not tried yet), RETRYING, SUCCEEDED, FAILED (given up after 3 days).
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempt_count', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'text')
    // When this round of attempts began (made, or an admin's retry): 3 days later it is given up.
    .addColumn('due_since', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    // One delivery per event and endpoint, however many workers scan the outbox.
    .addUniqueConstraint('endpoint_deliveries_once', ['endpoint_id', 'event_seq'])
    .execute()
  await db.schema.createIndex('endpoint_deliveries_open').on('endpoint_deliveries').columns(['endpoint_id', 'status', 'event_seq']).execute()
  await db.schema.createIndex('endpoint_deliveries_created').on('endpoint_deliveries').columns(['endpoint_id', 'created_at']).execute()

  await db.schema
    .createTable('endpoint_delivery_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('delivery_id', 'text', (c) => c.notNull().references('endpoint_deliveries.id').onDelete('cascade'))
    .addColumn('attempted_at', 'text', (c) => c.notNull())
    // The receiver's HTTP status; null when none came (refused, timed out, address not allowed).
    .addColumn('response_status', 'integer')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .execute()
  await db.schema.createIndex('endpoint_delivery_attempts_delivery').on('endpoint_delivery_attempts').columns(['delivery_id', 'attempted_at']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('endpoint_delivery_attempts').execute()
  await db.schema.dropTable('endpoint_deliveries').execute()
  await db.schema.dropTable('webhook_endpoints').execute()
}
