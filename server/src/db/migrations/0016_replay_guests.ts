// The court's page (issue 25): a player without an account may get a replay when the club lets guests
// in (REPLAYS_GUEST). A guest is a row here, known by a token kept on their phone (only its hash is
// stored); a replay belongs to a user or to a guest. Courts already have their public slug (0002:
// unique, made from the name, editable through PATCH /apis/v2/admin/courts/{id}): /r/{slug} uses it.
//
// SQLite cannot drop NOT NULL from a column, so replays is rebuilt (rows, indexes and the triggers of
// 0015 as they were). No table refers to replays, so dropping the old one cascades nowhere.
import { sql, type Kysely } from 'kysely'
import { isPostgres } from './dialect.js'

const BUMP = sql`update replay_server_status_changes set counter = counter + 1 where id = 1;`

const COLUMNS = [
  'id', 'user_id', 'court_id', 'replay_server_id', 'camera_id', 'start_at', 'end_at', 'status', 'reason', 'location',
  'duration_seconds', 'size_bytes', 'sha256', 'package_id', 'redemption_id', 'created_at', 'updated_at'
]

async function createReplays(db: Kysely<any>, name: string, withGuests: boolean): Promise<void> {
  let table = db.schema
    .createTable(name)
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => (withGuests ? c : c.notNull()).references('users.id').onDelete('cascade'))
  if (withGuests) table = table.addColumn('guest_id', 'text', (c) => c.references('replay_guests.id').onDelete('cascade'))
  await table
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
    // Exactly one owner: a user or a guest.
    .$call((b) => (withGuests ? b.addCheckConstraint('replays_one_owner', sql`(user_id is null) <> (guest_id is null)`) : b))
    .execute()
}

async function indexesAndTriggers(db: Kysely<any>, withGuests: boolean): Promise<void> {
  await db.schema.createIndex('replays_server_status').on('replays').columns(['replay_server_id', 'status']).execute()
  await db.schema.createIndex('replays_user').on('replays').columns(['user_id', 'created_at', 'id']).execute()
  if (withGuests) await db.schema.createIndex('replays_guest').on('replays').columns(['guest_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('replays_created').on('replays').columns(['created_at', 'id']).execute()
  await db.schema.createIndex('replays_status').on('replays').columns(['status', 'created_at']).execute()
  await sql`create trigger replays_waiting_insert after insert on replays when new.status = 'REQUESTED' begin ${BUMP} end`.execute(db)
  await sql`create trigger replays_waiting_delete after delete on replays when old.status = 'REQUESTED' begin ${BUMP} end`.execute(db)
  await sql`create trigger replays_waiting_update after update on replays when
      (old.status = 'REQUESTED') is not (new.status = 'REQUESTED') or old.replay_server_id is not new.replay_server_id
    begin ${BUMP} end`.execute(db)
}

async function rebuild(db: Kysely<any>, withGuests: boolean): Promise<void> {
  await createReplays(db, 'replays_next', withGuests)
  const columns = sql.join(COLUMNS.map((c) => sql.ref(c)))
  // Going down, a guest's replay has no user to keep it: it goes.
  await sql`insert into replays_next (${columns}) select ${columns} from replays where user_id is not null`.execute(db)
  await db.schema.dropTable('replays').execute()
  await db.schema.alterTable('replays_next').renameTo('replays').execute()
  await indexesAndTriggers(db, withGuests)
}

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('replay_guests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // sha256 of the guest's token; the token itself is only ever on the phone.
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute()
  if (isPostgres(db)) {
    // PostgreSQL drops NOT NULL in place: no rebuild, the triggers of 0015 stay.
    await db.schema.alterTable('replays').addColumn('guest_id', 'text', (c) => c.references('replay_guests.id').onDelete('cascade')).execute()
    await db.schema.alterTable('replays').alterColumn('user_id', (c) => c.dropNotNull()).execute()
    await db.schema.alterTable('replays').addCheckConstraint('replays_one_owner', sql`(user_id is null) <> (guest_id is null)`).execute()
    await db.schema.createIndex('replays_guest').on('replays').columns(['guest_id', 'created_at', 'id']).execute()
    return
  }
  await rebuild(db, true)
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) {
    // As SQLite's rebuild does: guests' replays cannot outlive the column that owns them.
    await db.deleteFrom('replays').where('user_id', 'is', null).execute()
    await db.schema.dropIndex('replays_guest').execute()
    await db.schema.alterTable('replays').dropConstraint('replays_one_owner').execute()
    await db.schema.alterTable('replays').dropColumn('guest_id').execute()
    await db.schema.alterTable('replays').alterColumn('user_id', (c) => c.setNotNull()).execute()
  } else {
    await rebuild(db, false)
  }
  await db.schema.dropTable('replay_guests').execute()
}
