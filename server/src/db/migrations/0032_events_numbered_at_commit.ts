// On PostgreSQL an event takes its number at its transaction's commit, not when it is written
// (issue 37). Numbering it when written held outbox_sequence's row lock from the event to the commit,
// three round trips of every redemption, so every evented write of every process took turns there
// (bench:pg-writes: every lock wait of two processes' redemptions was on that row). Now the event is
// written with a provisional negative number, and at commit the transaction's first deferred trigger
// (table_changes_bump, 0030, which every writer of a counted table fires already) numbers its events
// in the order they were written: the row lock lasts from there to the commit's end. Numbers are still
// given in commit order (the next transaction waits for the lock until this one has committed), so a
// reader that has seen N has seen every event below N. The lock is taken before the counters', in
// every transaction, so the two cannot deadlock. SQLite runs one write transaction at a time: nothing
// changes there.
import { sql, type Kysely } from 'kysely'
import { isPostgres } from './dialect.js'

/** What 0030's function does: each counter of the tables written moves, their rows locked in name order. */
const BUMP_COUNTERS = sql.raw(`update table_changes set counter = counter + 1 where table_name in (
        select table_name from table_changes
        where table_name = any(string_to_array(current_setting('club.written_tables', true), ','))
        order by table_name for update
      );`)

/** 0030's function, with the events numbered first. */
const BUMP_NUMBERING_EVENTS = sql`create or replace function table_changes_bump() returns trigger language plpgsql as $$
    declare
      written text := ',' || coalesce(current_setting('club.written_tables', true), '') || ',';
      pending bigint[];
      last bigint;
    begin
      if current_setting('club.tables_bumped', true) = 'yes' then return null; end if;
      perform set_config('club.tables_bumped', 'yes', true);
      if position(',outbox_events,' in written) > 0 then
        -- This transaction's events, by their provisional numbers in the order written (kept by
        -- outbox_events_pending): each found by its key. A scan of seq < 0 would also walk every
        -- numbered event's old row version still in the index until vacuum, ever longer.
        pending := string_to_array(substr(current_setting('club.pending_events', true), 2), ',')::bigint[];
        if cardinality(pending) > 0 then
          update outbox_sequence set last_seq = last_seq + cardinality(pending) where id = 1 returning last_seq into last;
          update outbox_events set seq = last - cardinality(pending) + numbered.k
            from unnest(pending) with ordinality as numbered(provisional, k)
            where outbox_events.seq = numbered.provisional;
        end if;
      end if;
      ${BUMP_COUNTERS}
      return null;
    end $$`

/** 0030's function as it was. */
const BUMP = sql`create or replace function table_changes_bump() returns trigger language plpgsql as $$
    begin
      if current_setting('club.tables_bumped', true) = 'yes' then return null; end if;
      perform set_config('club.tables_bumped', 'yes', true);
      ${BUMP_COUNTERS}
      return null;
    end $$`

export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return
  // Provisional numbers: negative, so never a number a reader could pass; unique, as seq is the key.
  await sql`create sequence outbox_pending`.execute(db)
  await sql`alter table outbox_events alter column seq set default (- nextval('outbox_pending'))`.execute(db)
  await BUMP_NUMBERING_EVENTS.execute(db)
  // Each event's provisional number, in the order written, for the commit to find them by.
  await sql`create function outbox_events_pending() returns trigger language plpgsql as $$
    begin
      perform set_config('club.pending_events', coalesce(current_setting('club.pending_events', true), '') || ',' || new.seq, true);
      return null;
    end $$`.execute(db)
  await sql`create trigger outbox_events_pending after insert on outbox_events for each row execute function outbox_events_pending()`.execute(db)
  await sql`create trigger outbox_events_changes_note after insert on outbox_events for each statement execute function table_changes_note()`.execute(db)
  await sql`create constraint trigger outbox_events_changes_bump after insert on outbox_events
    deferrable initially deferred for each row execute function table_changes_bump()`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return
  await sql`drop trigger outbox_events_changes_bump on outbox_events`.execute(db)
  await sql`drop trigger outbox_events_changes_note on outbox_events`.execute(db)
  await sql`drop trigger outbox_events_pending on outbox_events`.execute(db)
  await sql`drop function outbox_events_pending`.execute(db)
  await BUMP.execute(db)
  await sql`alter table outbox_events alter column seq drop default`.execute(db)
  await sql`drop sequence outbox_pending`.execute(db)
}
