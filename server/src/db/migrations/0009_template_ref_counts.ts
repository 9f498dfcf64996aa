// How many templates reference each place, kept by triggers on template_refs. A list filtered by one
// place answers its total from here in one look-up; counting the place's index entries grew with
// its templates (2,700 entries of an area at 100,000 templates cost more than the page itself).
// Triggers rather than application code: every writer of template_refs keeps it true, cascading
// deletes of templates included.
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
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

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger template_ref_counts_update`.execute(db)
  await sql`drop trigger template_ref_counts_delete`.execute(db)
  await sql`drop trigger template_ref_counts_insert`.execute(db)
  await sql`drop table template_ref_counts`.execute(db)
}
