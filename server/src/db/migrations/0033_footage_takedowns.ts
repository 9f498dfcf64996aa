// Footage takedowns (issue 47): staff take down a court's footage for an interval, not one replay's
// clip. Every replay of it is taken down, new replays of it are refused, and each box of the court's
// area is told (in its status answer) to delete those minutes of every camera filming the court, until
// it confirms: one deletion row per box, pending while deleted_at is null. Both tables are part of the
// status answer, so the status change counter (0008) moves with every change, through any process.
import { sql, type Kysely } from 'kysely'
import { isPostgres } from './dialect.js'

const BUMP = sql`update replay_server_status_changes set counter = counter + 1 where id = 1;`
const TABLES = ['footage_takedowns', 'footage_takedown_deletions']

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('footage_takedowns')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('court_id', 'text', (c) => c.notNull().references('courts.id').onDelete('cascade'))
    .addColumn('start_at', 'text', (c) => c.notNull())
    .addColumn('end_at', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    // The replay whose takedown made it; null: asked for the court's interval itself.
    .addColumn('replay_id', 'text', (c) => c.references('replays.id').onDelete('set null'))
    .addColumn('replays_taken_down', 'integer', (c) => c.notNull())
    // Null: made from the `club` command line.
    .addColumn('created_by', 'text', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addCheckConstraint('footage_takedowns_order', sql`start_at < end_at`)
    .execute()
  await db.schema.createIndex('footage_takedowns_court').on('footage_takedowns').columns(['court_id', 'start_at']).execute()
  await db.schema
    .createTable('footage_takedown_deletions')
    .addColumn('takedown_id', 'text', (c) => c.notNull().references('footage_takedowns.id').onDelete('cascade'))
    .addColumn('replay_server_id', 'text', (c) => c.notNull().references('replay_servers.id').onDelete('cascade'))
    // Null: pending, the box has not confirmed yet.
    .addColumn('deleted_at', 'text')
    .addColumn('deleted_files', 'integer')
    .addPrimaryKeyConstraint('footage_takedown_deletions_pk', ['takedown_id', 'replay_server_id'])
    .execute()
  await db.schema.createIndex('footage_takedown_deletions_box').on('footage_takedown_deletions').columns(['replay_server_id', 'deleted_at']).execute()
  for (const table of TABLES) {
    if (isPostgres(db)) {
      await sql`create trigger ${sql.raw(`${table}_status`)} after insert or update or delete on ${sql.raw(table)}
        for each statement execute function replay_server_status_bump()`.execute(db)
      continue
    }
    for (const event of ['insert', 'update', 'delete']) {
      await sql`create trigger ${sql.raw(`${table}_${event}`)} after ${sql.raw(event)} on ${sql.raw(table)} begin ${BUMP} end`.execute(db)
    }
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of TABLES) {
    if (isPostgres(db)) await sql`drop trigger ${sql.raw(`${table}_status`)} on ${sql.raw(table)}`.execute(db)
    else for (const event of ['insert', 'update', 'delete']) await sql`drop trigger ${sql.raw(`${table}_${event}`)}`.execute(db)
  }
  await db.schema.dropTable('footage_takedown_deletions').execute()
  await db.schema.dropTable('footage_takedowns').execute()
}
