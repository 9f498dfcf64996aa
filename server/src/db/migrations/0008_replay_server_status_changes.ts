// A counter that moves whenever something a replay server's status answer (or its poll's sighting
// check) is made of changes, whichever connection or process changed it: the server keeps answers
// in memory and reads this one row per poll to know whether they still hold. Triggers rather than
// application code, because the `club devices` commands write the same file from another process.
// last_seen_at, hostname, display_name and the timestamps are left out: polls never read them.
import { sql, type Kysely } from 'kysely'
import { isPostgres } from './dialect.js'

/** The columns a status answer is made of (PostgreSQL's trigger; SQLite's names them as shipped). */
const WATCHED = ['id', 'server_id_hash', 'token_generation', 'token_hash', 'status', 'area_id', 'config', 'target_version', 'version', 'server_url', 'local_ip']

const BUMP = sql`update replay_server_status_changes set counter = counter + 1 where id = 1;`

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('replay_server_status_changes')
    .addColumn('id', 'integer', (c) => c.primaryKey().check(sql`id = 1`))
    .addColumn('counter', 'integer', (c) => c.notNull())
    .execute()
  await db.insertInto('replay_server_status_changes').values({ id: 1, counter: 0 }).execute()
  if (isPostgres(db)) {
    await sql`create function replay_server_status_bump() returns trigger language plpgsql as $$
      begin ${BUMP} return null; end $$`.execute(db)
    await sql`create trigger replay_servers_status_insert_delete after insert or delete on replay_servers
      for each statement execute function replay_server_status_bump()`.execute(db)
    await sql`create trigger replay_servers_status_update after update on replay_servers for each row when (
      ${sql.raw(WATCHED.map((c) => `old.${c} is distinct from new.${c}`).join(' or '))}
    ) execute function replay_server_status_bump()`.execute(db)
    return
  }
  await sql`create trigger replay_servers_status_insert after insert on replay_servers begin ${BUMP} end`.execute(db)
  await sql`create trigger replay_servers_status_delete after delete on replay_servers begin ${BUMP} end`.execute(db)
  await sql`create trigger replay_servers_status_update after update on replay_servers when
      old.id is not new.id or
      old.server_id_hash is not new.server_id_hash or
      old.token_generation is not new.token_generation or
      old.token_hash is not new.token_hash or
      old.status is not new.status or
      old.area_id is not new.area_id or
      old.config is not new.config or
      old.target_version is not new.target_version or
      old.version is not new.version or
      old.server_url is not new.server_url or
      old.local_ip is not new.local_ip
    begin ${BUMP} end`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) {
    await sql`drop trigger replay_servers_status_update on replay_servers`.execute(db)
    await sql`drop trigger replay_servers_status_insert_delete on replay_servers`.execute(db)
    await sql`drop function replay_server_status_bump`.execute(db)
  } else {
    await sql`drop trigger replay_servers_status_update`.execute(db)
    await sql`drop trigger replay_servers_status_delete`.execute(db)
    await sql`drop trigger replay_servers_status_insert`.execute(db)
  }
  await db.schema.dropTable('replay_server_status_changes').execute()
}
