// Matches (issue 49): a booking's or an event's whole interval on a filmed court, made once (the
// unique keys on source and court hold across processes) when the interval ends; each camera filming
// the court records it as a replay of kind MATCH pointing at its match. `chapters` is the JSON of the
// marks (the replays participants asked for meanwhile), fixed when the match is made; `mailed_at` is
// the conditional write that tells the participants once.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('matches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('court_id', 'text', (c) => c.notNull().references('courts.id').onDelete('cascade'))
    // BOOKING (redemption_id set) or EVENT (event_id set).
    .addColumn('source_type', 'text', (c) => c.notNull())
    .addColumn('redemption_id', 'text')
    .addColumn('event_id', 'text')
    .addColumn('start_at', 'text', (c) => c.notNull())
    .addColumn('end_at', 'text', (c) => c.notNull())
    .addColumn('chapters', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('mailed_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  // At most one match per source and court, whichever process makes it (a null is distinct on both databases).
  await db.schema.createIndex('matches_booking_court').on('matches').columns(['redemption_id', 'court_id']).unique().execute()
  await db.schema.createIndex('matches_event_court').on('matches').columns(['event_id', 'court_id']).unique().execute()
  await db.schema.createIndex('matches_court_start').on('matches').columns(['court_id', 'start_at']).execute()
  // The match maker's scan: the bookings that began within its window.
  await db.schema.createIndex('package_redemptions_type_start').on('package_redemptions').columns(['type', 'target_start_at']).execute()
  await db.schema.alterTable('replays').addColumn('kind', 'text', (c) => c.notNull().defaultTo('CLIP')).execute()
  await db.schema.alterTable('replays').addColumn('match_id', 'text', (c) => c.references('matches.id').onDelete('cascade')).execute()
  await db.schema.createIndex('replays_match').on('replays').column('match_id').execute()
  await db.schema.alterTable('events').addColumn('record_match', 'integer', (c) => c.notNull().defaultTo(0)).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('events').dropColumn('record_match').execute()
  await db.schema.dropIndex('replays_match').execute()
  await db.schema.dropIndex('package_redemptions_type_start').execute()
  // A match's angles have no meaning without it.
  await db.deleteFrom('replays').where('kind', '=', 'MATCH').execute()
  await db.schema.alterTable('replays').dropColumn('match_id').execute()
  await db.schema.alterTable('replays').dropColumn('kind').execute()
  await db.schema.dropTable('matches').execute()
}
