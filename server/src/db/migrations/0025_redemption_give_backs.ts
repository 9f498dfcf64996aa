// Who gave a package item back on purpose, and why (a staff decision past the cancellation rules,
// BILLING.md "Packages"): kept on the redemption it undid, so a refund can tell such items apart.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('package_redemptions').addColumn('given_back_by', 'text').execute()
  await db.schema.alterTable('package_redemptions').addColumn('given_back_reason', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('package_redemptions').dropColumn('given_back_reason').execute()
  await db.schema.alterTable('package_redemptions').dropColumn('given_back_by').execute()
}
