// Memberships: the plans a club sells, the subscriptions members hold, and the orders every charge
// and refund is recorded as. Money is integer minor units of the club's currency; rates are basis
// points; recurring dates come from an anchor (a local wall time) in the subscription's timezone.
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('memberships')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('charge_type', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('price_minor', 'integer', (c) => c.notNull())
    .addColumn('initiation_fee_minor', 'integer', (c) => c.notNull())
    .addColumn('additional_member_fee_minor', 'integer', (c) => c.notNull())
    .addColumn('duration_days', 'integer')
    // JSON: [{name, basisPoints, inclusive}] and [{name, basisPoints}]
    .addColumn('taxes', 'text', (c) => c.notNull())
    .addColumn('fees', 'text', (c) => c.notNull())
    .addColumn('area_id', 'text', (c) => c.references('areas.id').onDelete('restrict'))
    // JSON {minimumWeeks, maximumWeeks, pausesPerYear, pauseFeeMinor}, or null: no pauses
    .addColumn('pause_policy', 'text')
    .addColumn('grace_days', 'integer', (c) => c.notNull())
    .addColumn('hold_days', 'integer', (c) => c.notNull())
    .addColumn('self_service', 'integer', (c) => c.notNull())
    .addColumn('perk_template_id', 'text', (c) => c.references('templates.id').onDelete('set null'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('memberships_status').on('memberships').columns(['status', 'created_at', 'id']).execute()
  await db.schema.createIndex('memberships_area_id').on('memberships').column('area_id').execute()

  await db.schema
    .createTable('orders')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // Who pays, and who placed it (the member, or staff for them).
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('restrict'))
    .addColumn('creator_id', 'text', (c) => c.notNull().references('users.id').onDelete('restrict'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('membership_subscription_id', 'text')
    // The billing period a membership charge pays for (its start); null for other orders.
    .addColumn('period_start', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('subtotal_minor', 'integer', (c) => c.notNull())
    .addColumn('total_minor', 'integer', (c) => c.notNull())
    // JSON, as priced: lines [{kind, description, amount}], fees and taxes with rate and amount
    .addColumn('lines', 'text', (c) => c.notNull())
    .addColumn('fees', 'text', (c) => c.notNull())
    .addColumn('taxes', 'text', (c) => c.notNull())
    .addColumn('provider', 'text')
    .addColumn('provider_ref', 'text')
    // One order per charge the business means once: a second attempt finds this one.
    .addColumn('idempotency_key', 'text', (c) => c.notNull().unique())
    .addColumn('failure_code', 'text')
    .addColumn('failure_message', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('orders_user').on('orders').columns(['user_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('orders_created').on('orders').columns(['created_at', 'id']).execute()
  await db.schema.createIndex('orders_subscription').on('orders').column('membership_subscription_id').execute()
  // At most one live charge (being made, made, or waiting for the customer) per subscription and
  // period, whoever runs the job and however often: a second run's insert fails and it moves on.
  await db.schema
    .createIndex('orders_one_live_charge_per_period')
    .on('orders')
    .columns(['membership_subscription_id', 'period_start'])
    .unique()
    .where(sql.ref('status'), 'in', sql`('PENDING', 'PAID', 'REQUIRES_AUTHENTICATION')`)
    .execute()

  await db.schema
    .createTable('membership_subscriptions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('membership_id', 'text', (c) => c.notNull().references('memberships.id').onDelete('restrict'))
    .addColumn('member_id', 'text', (c) => c.notNull().references('users.id').onDelete('restrict'))
    .addColumn('creator_id', 'text', (c) => c.notNull().references('users.id').onDelete('restrict'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('condition', 'text', (c) => c.notNull())
    .addColumn('condition_updated_at', 'text', (c) => c.notNull())
    .addColumn('timezone', 'text', (c) => c.notNull())
    // The schedule's anchor: a local wall time (no offset) in `timezone`; pauses move it.
    .addColumn('anchor_local', 'text', (c) => c.notNull())
    .addColumn('charge_type', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    // This subscription's own price (staff may change it); taxes and fees follow the plan.
    .addColumn('price_minor', 'integer', (c) => c.notNull())
    .addColumn('initiation_fee_minor', 'integer', (c) => c.notNull())
    .addColumn('additional_member_fee_minor', 'integer', (c) => c.notNull())
    .addColumn('duration_days', 'integer')
    .addColumn('start_date', 'text', (c) => c.notNull())
    .addColumn('end_date', 'text')
    .addColumn('cancellation_requested_at', 'text')
    .addColumn('cycle_index', 'integer', (c) => c.notNull())
    .addColumn('billing_cycle_start', 'text')
    .addColumn('billing_cycle_end', 'text')
    .addColumn('last_charge_date', 'text')
    .addColumn('next_charge_date', 'text')
    // In GRACE and HOLD: when the failed renewal is tried again.
    .addColumn('next_retry_date', 'text')
    .addColumn('next_grant_date', 'text')
    .addColumn('last_grant_date', 'text')
    .addColumn('last_order_id', 'text', (c) => c.references('orders.id').onDelete('set null'))
    // JSON [{code, message, details}] of the last failed step, or null
    .addColumn('errors', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('membership_subscriptions_member').on('membership_subscriptions').columns(['member_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('membership_subscriptions_plan').on('membership_subscriptions').columns(['membership_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('membership_subscriptions_created').on('membership_subscriptions').columns(['created_at', 'id']).execute()
  await db.schema
    .createIndex('membership_subscriptions_due')
    .on('membership_subscriptions')
    .columns(['status', 'next_charge_date'])
    .execute()

  await db.schema
    .createTable('membership_job_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('date', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    // JSON: outcome -> count
    .addColumn('counts', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .execute()
  await db.schema.createIndex('membership_job_runs_started').on('membership_job_runs').columns(['started_at', 'id']).execute()

  // What a provider needs to charge a saved method off-session (Stripe's customer and payment method).
  await db.schema.alterTable('payment_methods').addColumn('provider_customer_ref', 'text').execute()
  await db.schema.alterTable('payment_methods').addColumn('provider_method_ref', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('payment_methods').dropColumn('provider_method_ref').execute()
  await db.schema.alterTable('payment_methods').dropColumn('provider_customer_ref').execute()
  for (const table of ['membership_job_runs', 'membership_subscriptions', 'orders', 'memberships']) await db.schema.dropTable(table).execute()
}
