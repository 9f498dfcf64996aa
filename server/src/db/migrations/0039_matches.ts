// Matches (issue 49): a booking's or an event's whole interval on a filmed court, made once (the
// unique keys on source and court hold across processes) when the interval ends; each camera filming
// the court records it as a replay of kind MATCH pointing at its match. `chapters` is the JSON of the
// marks (the replays participants asked for meanwhile), fixed when the match is made; `mailed_at` is
// the conditional write that tells the participants once.
//
// An event's angle belongs to no one user: replays_one_owner (0016: a user or a guest) admits a MATCH
// with neither. PostgreSQL replaces the check in place; SQLite cannot alter a check, so replays is
// rebuilt as 0016 did (rows, indexes, the waiting triggers). footage_takedowns.replay_id refers to
// replays (0033, on delete set null): dropping the old table would null it, so it is kept aside and
// put back.
import { sql, type Kysely } from 'kysely'
import { isPostgres } from './dialect.js'

const BUMP = sql`update replay_server_status_changes set counter = counter + 1 where id = 1;`

const COLUMNS = [
  'id', 'user_id', 'guest_id', 'court_id', 'replay_server_id', 'camera_id', 'start_at', 'end_at', 'status', 'reason', 'location',
  'duration_seconds', 'size_bytes', 'sha256', 'package_id', 'redemption_id', 'created_at', 'updated_at',
  'bucket', 'taken_down_at', 'taken_down_by', 'taken_down_reason'
]

const OWNER = sql`(user_id is null) <> (guest_id is null)`
const OWNER_OR_MATCH = sql`(user_id is null) <> (guest_id is null) or (kind = 'MATCH' and user_id is null and guest_id is null)`

async function createReplays(db: Kysely<any>, name: string, withMatches: boolean): Promise<void> {
  let table = db.schema
    .createTable(name)
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('guest_id', 'text', (c) => c.references('replay_guests.id').onDelete('cascade'))
    .addColumn('court_id', 'text', (c) => c.notNull().references('courts.id').onDelete('cascade'))
    .addColumn('replay_server_id', 'text', (c) => c.references('replay_servers.id').onDelete('set null'))
    .addColumn('camera_id', 'text', (c) => c.notNull())
    .addColumn('start_at', 'text', (c) => c.notNull())
    .addColumn('end_at', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('location', 'text')
    .addColumn('duration_seconds', 'real')
    .addColumn('size_bytes', 'integer')
    .addColumn('sha256', 'text')
    .addColumn('package_id', 'text')
    .addColumn('redemption_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('bucket', 'text')
    .addColumn('taken_down_at', 'text')
    .addColumn('taken_down_by', 'text', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('taken_down_reason', 'text')
  if (withMatches) {
    table = table
      .addColumn('kind', 'text', (c) => c.notNull().defaultTo('CLIP'))
      .addColumn('match_id', 'text', (c) => c.references('matches.id').onDelete('cascade'))
  }
  await table.addCheckConstraint('replays_one_owner', withMatches ? OWNER_OR_MATCH : OWNER).execute()
}

async function rebuildSqlite(db: Kysely<any>, withMatches: boolean): Promise<void> {
  await createReplays(db, 'replays_next', withMatches)
  // Up, kind is its default (every replay so far a CLIP); down, the MATCH angles are gone already.
  const columns = sql.join(COLUMNS.map((c) => sql.ref(c)))
  await sql`insert into replays_next (${columns}) select ${columns} from replays`.execute(db)
  await sql`create temporary table takedown_replays as select id, replay_id from footage_takedowns where replay_id is not null`.execute(db)
  await db.schema.dropTable('replays').execute()
  await db.schema.alterTable('replays_next').renameTo('replays').execute()
  await sql`update footage_takedowns set replay_id = (select t.replay_id from takedown_replays t where t.id = footage_takedowns.id)
    where id in (select id from takedown_replays)`.execute(db)
  await sql`drop table takedown_replays`.execute(db)
  await db.schema.createIndex('replays_server_status').on('replays').columns(['replay_server_id', 'status']).execute()
  await db.schema.createIndex('replays_user').on('replays').columns(['user_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('replays_guest').on('replays').columns(['guest_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('replays_created').on('replays').columns(['created_at', 'id']).execute()
  await db.schema.createIndex('replays_status').on('replays').columns(['status', 'created_at']).execute()
  await sql`create trigger replays_waiting_insert after insert on replays when new.status = 'REQUESTED' begin ${BUMP} end`.execute(db)
  await sql`create trigger replays_waiting_delete after delete on replays when old.status = 'REQUESTED' begin ${BUMP} end`.execute(db)
  await sql`create trigger replays_waiting_update after update on replays when
      (old.status = 'REQUESTED') is not (new.status = 'REQUESTED') or old.replay_server_id is not new.replay_server_id
    begin ${BUMP} end`.execute(db)
}

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('matches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('court_id', 'text', (c) => c.notNull().references('courts.id').onDelete('cascade'))
    // BOOKING (redemption_id set) or EVENT (event_id set).
    .addColumn('source_type', 'text', (c) => c.notNull())
    .addColumn('redemption_id', 'text')
    .addColumn('event_id', 'text')
    .addColumn('start_at', 'text', (c) => c.notNull())
    .addColumn('end_at', 'text', (c) => c.notNull())
    .addColumn('chapters', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('mailed_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  // At most one match per source and court, whichever process makes it (a null is distinct on both databases).
  await db.schema.createIndex('matches_booking_court').on('matches').columns(['redemption_id', 'court_id']).unique().execute()
  await db.schema.createIndex('matches_event_court').on('matches').columns(['event_id', 'court_id']).unique().execute()
  await db.schema.createIndex('matches_court_start').on('matches').columns(['court_id', 'start_at']).execute()
  // The teller's mail scan, every poll interval: the matches not mailed yet.
  await db.schema.createIndex('matches_mailed').on('matches').columns(['mailed_at', 'end_at']).execute()
  // The match maker's scan: the bookings that began within its window.
  await db.schema.createIndex('package_redemptions_type_start').on('package_redemptions').columns(['type', 'target_start_at']).execute()
  if (isPostgres(db)) {
    await db.schema.alterTable('replays').addColumn('kind', 'text', (c) => c.notNull().defaultTo('CLIP')).execute()
    await db.schema.alterTable('replays').addColumn('match_id', 'text', (c) => c.references('matches.id').onDelete('cascade')).execute()
    await db.schema.alterTable('replays').dropConstraint('replays_one_owner').execute()
    await db.schema.alterTable('replays').addCheckConstraint('replays_one_owner', OWNER_OR_MATCH).execute()
  } else {
    await rebuildSqlite(db, true)
  }
  await db.schema.createIndex('replays_match').on('replays').column('match_id').execute()
  await db.schema.alterTable('events').addColumn('record_match', 'integer', (c) => c.notNull().defaultTo(0)).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('events').dropColumn('record_match').execute()
  await db.schema.dropIndex('replays_match').execute()
  await db.schema.dropIndex('package_redemptions_type_start').execute()
  // A match's angles have no meaning without it.
  await db.deleteFrom('replays').where('kind', '=', 'MATCH').execute()
  if (isPostgres(db)) {
    await db.schema.alterTable('replays').dropConstraint('replays_one_owner').execute()
    await db.schema.alterTable('replays').addCheckConstraint('replays_one_owner', OWNER).execute()
    await db.schema.alterTable('replays').dropColumn('match_id').execute()
    await db.schema.alterTable('replays').dropColumn('kind').execute()
  } else {
    await rebuildSqlite(db, false)
  }
  await db.schema.dropTable('matches').execute()
}
