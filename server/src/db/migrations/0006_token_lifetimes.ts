// A refresh keeps the lifetimes its login was issued with (a web view's tokens stay short-lived).
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('tokens').addColumn('access_ttl_seconds', 'integer').execute()
  await db.schema.alterTable('tokens').addColumn('refresh_ttl_seconds', 'integer').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('tokens').dropColumn('refresh_ttl_seconds').execute()
  await db.schema.alterTable('tokens').dropColumn('access_ttl_seconds').execute()
}
