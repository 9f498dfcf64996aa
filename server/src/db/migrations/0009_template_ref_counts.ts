// How many templates reference each place, kept by triggers on template_refs. A list filtered by one
// place answers its total from here in one look-up; counting the place's index entries grew with
// its templates (2,700 entries of an area at 100,000 templates cost more than the page itself).
// Triggers rather than application code: every writer of template_refs keeps it true, cascading
// deletes of templates included.
import { sql, type Kysely } from 'kysely'
import { isPostgres } from './dialect.js'

export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) return upPostgres(db)
  await sql`create table template_ref_counts (
      kind text not null,
      ref_id text not null,
      total integer not null,
      primary key (kind, ref_id)
    ) without rowid`.execute(db)
  await sql`insert into template_ref_counts (kind, ref_id, total)
      select kind, ref_id, count(*) from template_refs group by kind, ref_id`.execute(db)
  await sql`create trigger template_ref_counts_insert after insert on template_refs begin
      insert or ignore into template_ref_counts (kind, ref_id, total) values (new.kind, new.ref_id, 0);
      update template_ref_counts set total = total + 1 where kind = new.kind and ref_id = new.ref_id;
    end`.execute(db)
  await sql`create trigger template_ref_counts_delete after delete on template_refs begin
      update template_ref_counts set total = total - 1 where kind = old.kind and ref_id = old.ref_id;
    end`.execute(db)
  await sql`create trigger template_ref_counts_update after update of kind, ref_id on template_refs begin
      update template_ref_counts set total = total - 1 where kind = old.kind and ref_id = old.ref_id;
      insert or ignore into template_ref_counts (kind, ref_id, total) values (new.kind, new.ref_id, 0);
      update template_ref_counts set total = total + 1 where kind = new.kind and ref_id = new.ref_id;
    end`.execute(db)
}

/** The same table and counts on PostgreSQL: one row trigger function for the three events. */
async function upPostgres(db: Kysely<any>): Promise<void> {
  await sql`create table template_ref_counts (
      kind text not null,
      ref_id text not null,
      total bigint not null,
      primary key (kind, ref_id)
    )`.execute(db)
  await sql`insert into template_ref_counts (kind, ref_id, total)
      select kind, ref_id, count(*) from template_refs group by kind, ref_id`.execute(db)
  await sql`create function template_ref_counts_keep() returns trigger language plpgsql as $$
    begin
      if tg_op in ('DELETE', 'UPDATE') then
        update template_ref_counts set total = total - 1 where kind = old.kind and ref_id = old.ref_id;
      end if;
      if tg_op in ('INSERT', 'UPDATE') then
        insert into template_ref_counts (kind, ref_id, total) values (new.kind, new.ref_id, 1)
          on conflict (kind, ref_id) do update set total = template_ref_counts.total + 1;
      end if;
      return null;
    end $$`.execute(db)
  await sql`create trigger template_ref_counts_keep after insert or delete or update of kind, ref_id on template_refs
      for each row execute function template_ref_counts_keep()`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) {
    await sql`drop trigger template_ref_counts_keep on template_refs`.execute(db)
    await sql`drop function template_ref_counts_keep`.execute(db)
    await sql`drop table template_ref_counts`.execute(db)
    return
  }
  await sql`drop trigger template_ref_counts_update`.execute(db)
  await sql`drop trigger template_ref_counts_delete`.execute(db)
  await sql`drop trigger template_ref_counts_insert`.execute(db)
  await sql`drop table template_ref_counts`.execute(db)
}
