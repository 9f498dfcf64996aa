// Recording boxes (replay servers) and a small key/value table for server-side settings such as
// the generated device token key.
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('settings')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('replay_servers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('device_id', 'text', (c) => c.notNull().unique())
    .addColumn('server_id_hash', 'text', (c) => c.notNull().unique())
    .addColumn('token_generation', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('PENDING', 'APPROVED', 'REJECTED', 'REVOKED')`)
    )
    .addColumn('hostname', 'text')
    .addColumn('display_name', 'text')
    .addColumn('version', 'text')
    .addColumn('local_ip', 'text')
    .addColumn('server_url', 'text')
    .addColumn('area_id', 'text', (c) => c.references('areas.id').onDelete('restrict'))
    .addColumn('config', 'text')
    .addColumn('target_version', 'text')
    .addColumn('last_seen_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('replay_servers_status').on('replay_servers').columns(['status', 'created_at']).execute()
  await db.schema.createIndex('replay_servers_last_seen_at').on('replay_servers').column('last_seen_at').execute()
  await db.schema.createIndex('replay_servers_area_id').on('replay_servers').column('area_id').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('replay_servers').execute()
  await db.schema.dropTable('settings').execute()
}
