// Enrolment as an invitation: an enrollment the owner asks for is INVITED until the user accepts
// (ACCEPTED) or declines (DECLINED); rows made before are ACCEPTED. A plan may cap how many members
// a subscription covers (max_enrollments, the owner included; null: no cap).
// And a subscription's history of staff and admin corrections (price, charge and grant dates, timezone):
// who changed which field, when, from what to what, as the API showed it. The member is shown each
// one in their subscription's messages; a price or charge date nobody can explain is the complaint.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('membership_subscription_changes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('subscription_id', 'text', (c) => c.notNull().references('membership_subscriptions.id').onDelete('cascade'))
    .addColumn('field', 'text', (c) => c.notNull())
    // JSON of the API's value before and after (a number in currency units, a date-time, a name, null).
    .addColumn('from_value', 'text', (c) => c.notNull())
    .addColumn('to_value', 'text', (c) => c.notNull())
    .addColumn('changed_by', 'text', (c) => c.notNull())
    .addColumn('changed_by_role', 'text', (c) => c.notNull())
    .addColumn('changed_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.alterTable('membership_enrollments').addColumn('invitation_status', 'text', (c) => c.notNull().defaultTo('ACCEPTED')).execute()
  await db.schema.alterTable('memberships').addColumn('max_enrollments', 'integer').execute()
  await db.schema.createIndex('membership_subscription_changes_subscription').on('membership_subscription_changes').columns(['subscription_id', 'changed_at']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('membership_subscription_changes').execute()
  await db.schema.alterTable('memberships').dropColumn('max_enrollments').execute()
  await db.schema.alterTable('membership_enrollments').dropColumn('invitation_status').execute()
}
