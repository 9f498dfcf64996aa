// Membership enrollments: who a subscription covers. The owner holds one (is_owner 1) from the moment
// the subscription is confirmed; the owner or staff add other members of the club. An enrollment is
// never deleted: removing one, or the end of its subscription, sets its end_date.
import { randomUUID } from 'node:crypto'
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('membership_enrollments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('subscription_id', 'text', (c) => c.notNull().references('membership_subscriptions.id').onDelete('restrict'))
    .addColumn('membership_id', 'text', (c) => c.notNull().references('memberships.id').onDelete('restrict'))
    // The plan's type, copied here so that the one-active-per-type rule is a unique index (a plan
    // with subscriptions keeps its type, so the copy cannot go stale).
    .addColumn('membership_type', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('restrict'))
    .addColumn('creator_id', 'text', (c) => c.notNull().references('users.id').onDelete('restrict'))
    .addColumn('is_owner', 'integer', (c) => c.notNull())
    // Added to each renewal besides the plan's additional member fee; minor units of the subscription's currency.
    .addColumn('custom_fee_minor', 'integer', (c) => c.notNull())
    .addColumn('start_date', 'text', (c) => c.notNull())
    // null: open-ended; a date in the future: ends then (a cancellation at the end of the cycle).
    .addColumn('end_date', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  // At most one open-ended enrollment per user and plan type, whoever writes it. Enrollments that end
  // in the future (a pending cancellation, a NON_RECURRING plan) are held to the same rule by the
  // check made in the IMMEDIATE transaction that inserts.
  await db.schema
    .createIndex('membership_enrollments_one_active_per_type')
    .on('membership_enrollments')
    .columns(['user_id', 'membership_type'])
    .unique()
    .where(sql.ref('end_date'), 'is', null)
    .execute()
  await db.schema.createIndex('membership_enrollments_subscription').on('membership_enrollments').columns(['subscription_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('membership_enrollments_user').on('membership_enrollments').columns(['user_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('membership_enrollments_created').on('membership_enrollments').columns(['created_at', 'id']).execute()

  // Subscriptions confirmed before enrollments existed get their owner's enrollment, ending when they
  // end. Newest first, so that if two open ones of a type ever coexisted the newest holds the open row.
  const confirmed = await db
    .selectFrom('membership_subscriptions as s')
    .innerJoin('memberships as m', 'm.id', 's.membership_id')
    .select(['s.id', 's.membership_id', 'm.type', 's.member_id', 's.creator_id', 's.start_date', 's.end_date', 's.created_at'])
    .where('s.status', '=', 'CONFIRMED')
    .orderBy('s.created_at', 'desc')
    .execute()
  for (const s of confirmed) {
    await db
      .insertInto('membership_enrollments')
      .values({
        id: randomUUID(),
        subscription_id: s.id,
        membership_id: s.membership_id,
        membership_type: s.type,
        user_id: s.member_id,
        creator_id: s.creator_id,
        is_owner: 1,
        custom_fee_minor: 0,
        start_date: s.start_date,
        end_date: s.end_date,
        created_at: s.created_at
      })
      .onConflict((oc) => oc.doNothing())
      .execute()
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('membership_enrollments').execute()
}
