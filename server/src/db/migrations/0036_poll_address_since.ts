// Since when a box has polled from the address it polls from now (issue 47): a record without a key
// adopts one only from a poll of that address, held for a while. Whoever read a serverId could
// otherwise poll once from anywhere, making that the "recorded" address, and adopt their own key at once.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('replay_servers').addColumn('poll_address_since', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('replay_servers').dropColumn('poll_address_since').execute()
}
