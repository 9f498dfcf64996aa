// Releases of the recording box's software and each box's progress with its update. A release is a
// Debian package stored as a file (AGENT_RELEASES_DIR), its signature made with the release key,
// whose private half never enters the database. What a box reports about its update, its
// architecture and its update window are part of its status answer (pendingUpdate), so the status
// change trigger (0008) is made again with them.
import { sql, type Kysely } from 'kysely'
import { isPostgres } from './dialect.js'

const BUMP = sql`update replay_server_status_changes set counter = counter + 1 where id = 1;`

const watched = (columns: string[]) => sql.raw(columns.map((c) => `old.${c} is not new.${c}`).join(' or\n      '))

const BEFORE = ['id', 'server_id_hash', 'token_generation', 'token_hash', 'status', 'area_id', 'config', 'target_version', 'version', 'server_url', 'local_ip']
const ADDED = ['architecture', 'update_window', 'update_state', 'update_version', 'update_reason']

async function statusTrigger(db: Kysely<any>, columns: string[]): Promise<void> {
  if (isPostgres(db)) {
    // 0008's bump function, on a row trigger watching these columns.
    await sql`drop trigger replay_servers_status_update on replay_servers`.execute(db)
    await sql`create trigger replay_servers_status_update after update on replay_servers for each row when (
      ${sql.raw(columns.map((c) => `old.${c} is distinct from new.${c}`).join(' or '))}
    ) execute function replay_server_status_bump()`.execute(db)
    return
  }
  await sql`drop trigger replay_servers_status_update`.execute(db)
  await sql`create trigger replay_servers_status_update after update on replay_servers when
      ${watched(columns)}
    begin ${BUMP} end`.execute(db)
}

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('agent_releases')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('architecture', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    // The file's name inside AGENT_RELEASES_DIR.
    .addColumn('file', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('agent_releases_version_architecture', ['version', 'architecture'])
    .execute()
  await db.schema.alterTable('replay_servers').addColumn('architecture', 'text').execute()
  // HH:MM-HH:MM in the club's timezone; null: the box updates when idle.
  await db.schema.alterTable('replay_servers').addColumn('update_window', 'text').execute()
  await db.schema
    .alterTable('replay_servers')
    .addColumn('update_state', 'text', (c) => c.check(sql`update_state in ('DOWNLOADING', 'WAITING_FOR_IDLE', 'INSTALLING', 'ROLLED_BACK', 'FAILED')`))
    .execute()
  // The version update_state is about: a ROLLED_BACK or FAILED one is not offered again until the target changes.
  await db.schema.alterTable('replay_servers').addColumn('update_version', 'text').execute()
  await db.schema.alterTable('replay_servers').addColumn('update_reason', 'text').execute()
  await db.schema.createIndex('replay_servers_update_state').on('replay_servers').column('update_state').execute()
  await statusTrigger(db, [...BEFORE, ...ADDED])
}

export async function down(db: Kysely<any>): Promise<void> {
  await statusTrigger(db, BEFORE)
  await db.schema.dropIndex('replay_servers_update_state').execute()
  for (const column of ADDED) await db.schema.alterTable('replay_servers').dropColumn(column).execute()
  await db.schema.dropTable('agent_releases').execute()
}
