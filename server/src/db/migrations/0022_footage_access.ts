// The footage access log (issue 33): one row per look at footage of people (a replay asked for, a
// download link issued, an admin's camera snapshot), who looked, at which court, camera and minutes,
// what for and from which address. Kept FOOTAGE_LOG_RETENTION_DAYS, then deleted by replays/cleanup.
// No foreign keys: a row outlives the replay, the guest session and the box it names (that is what
// it is for), and users are erased in place, never deleted.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('footage_access')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // member, staff, admin (the user's role then) or guest.
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text')
    .addColumn('guest_id', 'text')
    // REPLAY, DOWNLOAD_LINK or SNAPSHOT.
    .addColumn('purpose', 'text', (c) => c.notNull())
    // What staff typed to see footage older than REPLAY_MAX_AGE_SECONDS.
    .addColumn('reason', 'text')
    .addColumn('court_id', 'text')
    .addColumn('replay_server_id', 'text')
    .addColumn('camera_id', 'text', (c) => c.notNull())
    .addColumn('replay_id', 'text')
    .addColumn('start_at', 'text', (c) => c.notNull())
    .addColumn('end_at', 'text', (c) => c.notNull())
    .addColumn('address', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('footage_access_created').on('footage_access').columns(['created_at', 'id']).execute()
  await db.schema.createIndex('footage_access_court').on('footage_access').columns(['court_id', 'end_at']).execute()
  await db.schema.createIndex('footage_access_user').on('footage_access').columns(['user_id', 'end_at']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('footage_access').execute()
}
