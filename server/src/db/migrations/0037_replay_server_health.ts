// A box's health (issue 48): the latest report each box made of its cameras, its disk and itself,
// with the server's own measure of its clock; a bounded history of the changes of state; and what
// integrators and admins were last told of each camera or condition, so that each change is told
// once, and only after it held (replay-servers/health-teller.ts). None of these tables moves the
// status change counter: a report changes nothing of the box's poll answer.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('replay_server_health')
    .addColumn('replay_server_id', 'text', (c) => c.primaryKey().references('replay_servers.id').onDelete('cascade'))
    // When the latest report arrived, by the server's clock.
    .addColumn('reported_at', 'text', (c) => c.notNull())
    // JSON: the BoxHealthReport's disk and the agent's own figures, as the box sent them.
    .addColumn('report', 'text', (c) => c.notNull())
    // JSON: each camera as reported, with `since` (the server's time its state was first reported).
    .addColumn('cameras', 'text', (c) => c.notNull())
    // How many cameras are FAILED: read by the list's health filter in SQL.
    .addColumn('failed_cameras', 'integer', (c) => c.notNull())
    // The box's clock minus the server's (ms), measured from signed polls; null: not measured.
    .addColumn('clock_offset_ms', 'real')
    // The disk's and the clock's state (LOW/OK, SKEWED/OK) and since when: the problems DISK_LOW and
    // CLOCK_SKEWED as of the latest report (the disk floor in force then), and the hold rule's start.
    .addColumn('disk_state', 'text', (c) => c.notNull())
    .addColumn('disk_since', 'text', (c) => c.notNull())
    .addColumn('clock_state', 'text', (c) => c.notNull())
    .addColumn('clock_since', 'text', (c) => c.notNull())
    .execute()
  await db.schema
    .createTable('replay_server_health_changes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('replay_server_id', 'text', (c) => c.notNull().references('replay_servers.id').onDelete('cascade'))
    .addColumn('at', 'text', (c) => c.notNull())
    // camera:<id>, disk or clock.
    .addColumn('subject', 'text', (c) => c.notNull())
    // A CameraState, LOW/OK (disk) or SKEWED/OK (clock).
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('problem', 'text')
    .execute()
  await db.schema.createIndex('replay_server_health_changes_box').on('replay_server_health_changes').columns(['replay_server_id', 'at']).execute()
  await db.schema
    .createTable('replay_server_health_told')
    .addColumn('replay_server_id', 'text', (c) => c.notNull().references('replay_servers.id').onDelete('cascade'))
    .addColumn('subject', 'text', (c) => c.notNull())
    // What was last told: FAILED/RECOVERED (a camera), LOW/OK (disk), SKEWED/OK (clock).
    .addColumn('told', 'text', (c) => c.notNull())
    .addColumn('told_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('replay_server_health_told_pk', ['replay_server_id', 'subject'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('replay_server_health_told').execute()
  await db.schema.dropTable('replay_server_health_changes').execute()
  await db.schema.dropTable('replay_server_health').execute()
}
