// Takedown (issue 33): staff and admins take a replay down with a reason; its clip leaves the bucket
// and the row stays, TAKEN_DOWN, with who and why. `bucket` is the box's cloudStorageBucket when the
// clip was reported READY: every later read or delete of a file:// clip is held inside that folder,
// whatever the box's configuration says since.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('replays').addColumn('bucket', 'text').execute()
  await db.schema.alterTable('replays').addColumn('taken_down_at', 'text').execute()
  // Null with taken_down_at set: taken down from the `club` command line.
  await db.schema.alterTable('replays').addColumn('taken_down_by', 'text', (c) => c.references('users.id').onDelete('set null')).execute()
  await db.schema.alterTable('replays').addColumn('taken_down_reason', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  // Going down, a taken-down replay has no status to be: it goes (its clip is gone already).
  await db.deleteFrom('replays').where('status', '=', 'TAKEN_DOWN').execute()
  for (const column of ['taken_down_reason', 'taken_down_by', 'taken_down_at', 'bucket']) {
    await db.schema.alterTable('replays').dropColumn(column).execute()
  }
}
