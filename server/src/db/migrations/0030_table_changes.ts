// A change counter per table the read caches read from (issue 37), so that on PostgreSQL another
// process's commit retires only the cached answers read from the tables it wrote: a write to
// `templates` leaves cached credentials in place. Triggers rather than application code, because
// every writer (a second server, the `club` CLI, psql) must move them, and in the same transaction
// as the write, so that a reader sees the data and the counter move together.
// SQLite needs none: PRAGMA data_version tells other connections' commits for nothing, and the file
// has one writer at a time anyway (the table exists there too, empty, so the schema is one).
import { sql, type Kysely } from 'kysely'
import { isPostgres } from './dialect.js'

/** The tables read caches read from when this shipped. A table missing here is still safe: see tableChangesCheck. */
const TRACKED = [
  'api_keys',
  'membership_enrollments',
  'membership_pauses',
  'membership_subscription_changes',
  'membership_subscriptions',
  'memberships',
  'oauth_clients',
  'product_areas',
  'product_categories',
  'products',
  'template_refs',
  'template_search',
  'templates',
  'tokens',
  'users'
]

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('table_changes')
    .addColumn('table_name', 'text', (c) => c.primaryKey())
    .addColumn('counter', 'integer', (c) => c.notNull())
    .execute()
  if (!isPostgres(db)) return
  await db
    .insertInto('table_changes')
    .values(TRACKED.map((table_name) => ({ table_name, counter: 0 })))
    .execute()
  // Each write statement notes its table in a transaction-local setting: no lock, nothing written.
  await sql`create function table_changes_note() returns trigger language plpgsql as $$
    declare written text := coalesce(current_setting('club.written_tables', true), '');
    begin
      if position(',' || tg_table_name || ',' in written || ',') = 0 then
        perform set_config('club.written_tables', written || ',' || tg_table_name, true);
      end if;
      return null;
    end $$`.execute(db)
  // At commit (a deferred trigger, the first to fire does it for all), every counter of the tables
  // written moves in one statement that locks their rows in name order. Deferred, so a counter's row
  // lock is held only from the commit's start to its end, not for the whole transaction: two
  // transactions writing `tokens` wait for each other only that long. Sorted, so two transactions
  // that wrote the same tables in another order cannot deadlock on the counters.
  await sql`create function table_changes_bump() returns trigger language plpgsql as $$
    begin
      if current_setting('club.tables_bumped', true) = 'yes' then return null; end if;
      perform set_config('club.tables_bumped', 'yes', true);
      update table_changes set counter = counter + 1 where table_name in (
        select table_name from table_changes
        where table_name = any(string_to_array(current_setting('club.written_tables', true), ','))
        order by table_name for update
      );
      return null;
    end $$`.execute(db)
  for (const table of TRACKED) {
    await sql`create trigger ${sql.id(`${table}_changes_note`)} after insert or update or delete on ${sql.table(table)}
      for each statement execute function table_changes_note()`.execute(db)
    await sql`create constraint trigger ${sql.id(`${table}_changes_bump`)} after insert or update or delete on ${sql.table(table)}
      deferrable initially deferred for each row execute function table_changes_bump()`.execute(db)
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) {
    for (const table of TRACKED) {
      await sql`drop trigger ${sql.id(`${table}_changes_bump`)} on ${sql.table(table)}`.execute(db)
      await sql`drop trigger ${sql.id(`${table}_changes_note`)} on ${sql.table(table)}`.execute(db)
    }
    await sql`drop function table_changes_bump`.execute(db)
    await sql`drop function table_changes_note`.execute(db)
  }
  await db.schema.dropTable('table_changes').execute()
}
