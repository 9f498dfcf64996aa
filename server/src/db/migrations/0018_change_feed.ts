// PostgreSQL's change feed: every table announces its commits on the club_changes channel, which
// every server process listens to (ChangeFeed in ../postgres.ts), so its read caches and status-poll
// answers learn of another process's writes as SQLite's data_version tells them on one machine.
// Statement triggers, not row triggers: one notification per statement and table, and PostgreSQL
// folds the same notification within a transaction into one, delivered at commit.
// A later migration that creates a table calls changeFeedTriggers again. Nothing on SQLite.
import { sql, type Kysely } from 'kysely'
import { isPostgres } from './dialect.js'

/** Adds the notifying trigger to every table of the schema that has none (Kysely's own excepted). */
export async function changeFeedTriggers(db: Kysely<any>): Promise<void> {
  await sql`do $$
    declare t record;
    begin
      for t in select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
               where c.relkind = 'r' and n.nspname = current_schema() and c.relname not like 'kysely_%'
                 and not exists (select 1 from pg_trigger g where g.tgrelid = c.oid and g.tgname = 'club_changes')
      loop
        execute format('create trigger club_changes after insert or update or delete or truncate on %I
                        for each statement execute function club_notify_change()', t.relname);
      end loop;
    end $$`.execute(db)
}

export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return
  await sql`create function club_notify_change() returns trigger language plpgsql as $$
    begin perform pg_notify('club_changes', tg_table_name); return null; end $$`.execute(db)
  await changeFeedTriggers(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return
  await sql`drop function club_notify_change cascade`.execute(db)
}
