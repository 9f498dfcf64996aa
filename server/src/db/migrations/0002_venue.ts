// The venue structure templates and replay servers point at: regions, areas (in a region),
// pods (in an area) and courts (in an area, optionally in a pod).
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('regions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('areas')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('region_id', 'text', (c) => c.notNull().references('regions.id').onDelete('restrict'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('areas_region_id').on('areas').column('region_id').execute()

  await db.schema
    .createTable('pods')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('area_id', 'text', (c) => c.notNull().references('areas.id').onDelete('restrict'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('pods_area_id').on('pods').column('area_id').execute()

  await db.schema
    .createTable('courts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('area_id', 'text', (c) => c.notNull().references('areas.id').onDelete('restrict'))
    .addColumn('pod_id', 'text', (c) => c.references('pods.id').onDelete('restrict'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('courts_area_id').on('courts').column('area_id').execute()
  await db.schema.createIndex('courts_pod_id').on('courts').column('pod_id').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['courts', 'pods', 'areas', 'regions']) await db.schema.dropTable(table).execute()
}
