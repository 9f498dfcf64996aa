// Membership pauses, and the grants of a membership's monthly perks (at most one per subscription
// and grant date, whoever runs the GRANT job).
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('membership_pauses')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('subscription_id', 'text', (c) => c.notNull().references('membership_subscriptions.id').onDelete('cascade'))
    .addColumn('start_date', 'text', (c) => c.notNull())
    // Where it ends: as scheduled, or now when ended early or called off.
    .addColumn('end_date', 'text', (c) => c.notNull())
    .addColumn('weeks', 'integer', (c) => c.notNull())
    .addColumn('fee_minor', 'integer', (c) => c.notNull())
    .addColumn('fee_order_id', 'text', (c) => c.references('orders.id').onDelete('set null'))
    .addColumn('ended_early_at', 'text')
    .addColumn('cancelled_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('membership_pauses_subscription').on('membership_pauses').columns(['subscription_id', 'start_date']).execute()

  await db.schema
    .createTable('membership_grants')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('subscription_id', 'text', (c) => c.notNull().references('membership_subscriptions.id').onDelete('cascade'))
    .addColumn('grant_date', 'text', (c) => c.notNull())
    // granted, or skipped (paused, suspended in HOLD): either way that date is done.
    .addColumn('outcome', 'text', (c) => c.notNull())
    // The package template the plan grants, as it was; the packages issue issues the package itself.
    .addColumn('perk_template_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('membership_grants_once', ['subscription_id', 'grant_date'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('membership_grants').execute()
  await db.schema.dropTable('membership_pauses').execute()
}
