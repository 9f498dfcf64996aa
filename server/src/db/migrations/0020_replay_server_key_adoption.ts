// A box registered before it had a key adopts the one its own poll proves, once (issue 32): when and
// from which address, so that an admin sees how the record came to hold its key.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('replay_servers').addColumn('key_adopted_at', 'text').execute()
  await db.schema.alterTable('replay_servers').addColumn('key_adopted_from', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('replay_servers').dropColumn('key_adopted_from').execute()
  await db.schema.alterTable('replay_servers').dropColumn('key_adopted_at').execute()
}
