// Replays: a player's request for the last seconds of a court, the box that cuts it, its progress,
// where the clip is stored, and the package item paid with. A waiting replay is part of its box's
// status answer (replayRequests), so the status change counter (0008) moves when one starts or
// stops waiting.
import { sql, type Kysely } from 'kysely'
import { isPostgres } from './dialect.js'

const BUMP = sql`update replay_server_status_changes set counter = counter + 1 where id = 1;`

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('replays')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('court_id', 'text', (c) => c.notNull().references('courts.id').onDelete('cascade'))
    // The box that cuts it; null once that box is forgotten.
    .addColumn('replay_server_id', 'text', (c) => c.references('replay_servers.id').onDelete('set null'))
    .addColumn('camera_id', 'text', (c) => c.notNull())
    .addColumn('start_at', 'text', (c) => c.notNull())
    .addColumn('end_at', 'text', (c) => c.notNull())
    // REQUESTED, EXPORTING, UPLOADING, READY, FAILED, EXPIRED
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    // s3://, gs:// or file:// URL of the stored clip, once READY
    .addColumn('location', 'text')
    .addColumn('duration_seconds', 'real')
    .addColumn('size_bytes', 'integer')
    .addColumn('sha256', 'text')
    // The REPLAY package item redeemed for it (REPLAYS_REQUIRE_PACKAGE), given back if it fails.
    .addColumn('package_id', 'text')
    .addColumn('redemption_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('replays_server_status').on('replays').columns(['replay_server_id', 'status']).execute()
  await db.schema.createIndex('replays_user').on('replays').columns(['user_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('replays_created').on('replays').columns(['created_at', 'id']).execute()
  await db.schema.createIndex('replays_status').on('replays').columns(['status', 'created_at']).execute()
  if (isPostgres(db)) return waitingTriggersPostgres(db)
  await sql`create trigger replays_waiting_insert after insert on replays when new.status = 'REQUESTED' begin ${BUMP} end`.execute(db)
  await sql`create trigger replays_waiting_delete after delete on replays when old.status = 'REQUESTED' begin ${BUMP} end`.execute(db)
  await sql`create trigger replays_waiting_update after update on replays when
      (old.status = 'REQUESTED') is not (new.status = 'REQUESTED') or old.replay_server_id is not new.replay_server_id
    begin ${BUMP} end`.execute(db)
}

/** The same three triggers on PostgreSQL, over 0008's bump function (0016 alters the table in place and keeps them). */
async function waitingTriggersPostgres(db: Kysely<any>): Promise<void> {
  await sql`create trigger replays_waiting_insert after insert on replays for each row when (new.status = 'REQUESTED')
      execute function replay_server_status_bump()`.execute(db)
  await sql`create trigger replays_waiting_delete after delete on replays for each row when (old.status = 'REQUESTED')
      execute function replay_server_status_bump()`.execute(db)
  await sql`create trigger replays_waiting_update after update on replays for each row when (
      (old.status = 'REQUESTED') is distinct from (new.status = 'REQUESTED') or old.replay_server_id is distinct from new.replay_server_id
    ) execute function replay_server_status_bump()`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  const on = isPostgres(db) ? sql` on replays` : sql``
  await sql`drop trigger replays_waiting_update${on}`.execute(db)
  await sql`drop trigger replays_waiting_delete${on}`.execute(db)
  await sql`drop trigger replays_waiting_insert${on}`.execute(db)
  await db.schema.dropTable('replays').execute()
}
