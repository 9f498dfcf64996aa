// The address each box's status polls come from, as the server sees it (the connection's peer, or
// the client TRUST_PROXY names). The server calls a box only at an address the box could own: this
// one, or one inside BOX_NETWORKS; a serverUrl the box reports is never enough by itself. Not part of
// the status answer, so the status change trigger does not watch it.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('replay_servers').addColumn('poll_address', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('replay_servers').dropColumn('poll_address').execute()
}
