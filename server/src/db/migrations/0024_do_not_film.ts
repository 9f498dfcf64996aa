// "Do not film" (issue 33): a court is not filmed for an interval (a junior camp, a private event).
// The intervals of a box's courts are part of its status answer, so the status change counter (0008)
// moves whenever one is added, changed or removed, through any process (the `club` command too).
import { sql, type Kysely } from 'kysely'
import { isPostgres } from './dialect.js'

const BUMP = sql`update replay_server_status_changes set counter = counter + 1 where id = 1;`

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('do_not_film_intervals')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('court_id', 'text', (c) => c.notNull().references('courts.id').onDelete('cascade'))
    .addColumn('start_at', 'text', (c) => c.notNull())
    .addColumn('end_at', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    // Null: made from the `club` command line.
    .addColumn('created_by', 'text', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addCheckConstraint('do_not_film_intervals_order', sql`start_at < end_at`)
    .execute()
  await db.schema.createIndex('do_not_film_intervals_court').on('do_not_film_intervals').columns(['court_id', 'end_at']).execute()
  if (isPostgres(db)) {
    await sql`create trigger do_not_film_intervals_status after insert or update or delete on do_not_film_intervals
      for each statement execute function replay_server_status_bump()`.execute(db)
    return
  }
  for (const event of ['insert', 'update', 'delete']) {
    await sql`create trigger ${sql.raw(`do_not_film_intervals_${event}`)} after ${sql.raw(event)} on do_not_film_intervals begin ${BUMP} end`.execute(db)
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) await sql`drop trigger do_not_film_intervals_status on do_not_film_intervals`.execute(db)
  else for (const event of ['insert', 'update', 'delete']) await sql`drop trigger ${sql.raw(`do_not_film_intervals_${event}`)}`.execute(db)
  await db.schema.dropTable('do_not_film_intervals').execute()
}
