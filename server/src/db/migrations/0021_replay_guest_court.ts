// A guest is a guest of one court (issue 33): the court whose page made the session. A replay the
// guest asks for another court is refused. Sessions made before this have no court and get no more
// replays: the phone opens the court page again and gets a bound one. No foreign key (SQLite cannot
// drop a column that has one): a deleted court leaves guests that can ask for nothing.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('replay_guests').addColumn('court_id', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('replay_guests').dropColumn('court_id').execute()
}
