// Templates with their version history, and the events and series they are made from.
// Every list filter of GET /apis/v2/templates is an index search: type, status and subtype through
// (column, updated_at desc, id) indexes on templates; areas, pods, courts and regions through
// template_refs, which repeats the template's updated_at so that a page comes out of the index in
// order; search through a trigram full-text index whose rowid is templates.seq.
import { sql, type Kysely } from 'kysely'
import { isPostgres } from './dialect.js'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('series')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('subtype', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('subtype', 'text')
    .addColumn('tags', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('start_at', 'text', (c) => c.notNull())
    .addColumn('end_at', 'text', (c) => c.notNull())
    .addColumn('series_id', 'text', (c) => c.references('series.id').onDelete('set null'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('events_series_id').on('events').columns(['series_id', 'start_at']).execute()

  // The areas, pods and courts of an event; the venue tables refuse deleting what is referenced here.
  await db.schema
    .createTable('event_refs')
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('area', 'pod', 'court')`))
    .addColumn('ref_id', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('event_refs_pk', ['event_id', 'kind', 'ref_id'])
    .execute()
  await db.schema.createIndex('event_refs_ref').on('event_refs').columns(['kind', 'ref_id']).execute()

  // An INTEGER PRIMARY KEY keeps rowids stable through VACUUM, so the search index can use them.
  await db.schema
    .createTable('templates')
    // PostgreSQL has no rowid: the same numbers come from an identity column.
    .addColumn('seq', 'integer', (c) => (isPostgres(db) ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey()))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('subtype', 'text')
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('last_updated_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('templates_updated').on('templates').columns(['updated_at desc', 'id']).execute()
  for (const column of ['type', 'status', 'subtype']) {
    await db.schema.createIndex(`templates_${column}`).on('templates').columns([column, 'updated_at desc', 'id']).execute()
  }

  // kind region/area/pod/court: the template's own collections, in the order given. kind in_region:
  // every region the template lies in (its regions and the regions of its areas), for the regionId
  // filter. Areas never change region, so these rows stay true.
  await db.schema
    .createTable('template_refs')
    .addColumn('template_id', 'text', (c) => c.notNull().references('templates.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('region', 'area', 'pod', 'court', 'in_region')`))
    .addColumn('ref_id', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('template_refs_pk', ['template_id', 'kind', 'ref_id'])
    .execute()
  await db.schema.createIndex('template_refs_filter').on('template_refs').columns(['kind', 'ref_id', 'updated_at desc', 'template_id']).execute()

  await db.schema
    .createTable('template_versions')
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('template_id', 'text', (c) => c.notNull().references('templates.id').onDelete('cascade'))
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('places', 'text', (c) => c.notNull())
    .addColumn('changed_by', 'text', (c) => c.notNull())
    .addColumn('changed_at', 'text', (c) => c.notNull())
    .addColumn('change_action', 'text', (c) => c.notNull().check(sql`change_action in ('CREATE', 'UPDATE', 'ROLLBACK')`))
    // Two writers can never record the same version of a template.
    .addPrimaryKeyConstraint('template_versions_pk', ['template_id', 'version'])
    .execute()

  // Trigram tokens make `search` a case-insensitive substring match served by the index: SQLite's
  // FTS5 trigram tokenizer; on PostgreSQL a plain table under pg_trgm's GIN indexes, kept by the
  // same statements (rowid = templates.seq).
  if (isPostgres(db)) {
    await sql`create extension if not exists pg_trgm`.execute(db)
    await sql`create table template_search (rowid bigint primary key, name text, description text)`.execute(db)
    await sql`create index template_search_name on template_search using gin (lower(name) gin_trgm_ops)`.execute(db)
    await sql`create index template_search_description on template_search using gin (lower(coalesce(description, '')) gin_trgm_ops)`.execute(db)
  } else {
    await sql`create virtual table template_search using fts5(name, description, tokenize = 'trigram')`.execute(db)
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table template_search`.execute(db)
  for (const table of ['template_versions', 'template_refs', 'templates', 'event_refs', 'events', 'series']) {
    await db.schema.dropTable(table).execute()
  }
}
