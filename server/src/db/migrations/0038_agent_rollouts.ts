// Staged rollouts of an agent release (issue 48): the rollout, its groups in the order they open,
// and each box's place, fixed when the rollout starts, with where the box stands. A box is offered
// the release through its own target_version (so polls, the status change counter and the update
// windows work as for a target set by hand); the rows here say which rollout set it.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('agent_rollouts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('area_id', 'text')
    .addColumn('error_threshold_percent', 'real', (c) => c.notNull())
    .addColumn('success_threshold_percent', 'real', (c) => c.notNull())
    .addColumn('health_seconds', 'integer', (c) => c.notNull())
    .addColumn('silent_timeout_minutes', 'integer', (c) => c.notNull())
    .addColumn('halted_reason', 'text')
    // The admin's user id; null: made with `club rollouts create`.
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('agent_rollouts_status').on('agent_rollouts').columns(['status', 'created_at']).execute()
  await db.schema
    .createTable('agent_rollout_groups')
    .addColumn('rollout_id', 'text', (c) => c.notNull().references('agent_rollouts.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('percent', 'real')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('opened_at', 'text')
    .addColumn('completed_at', 'text')
    .addPrimaryKeyConstraint('agent_rollout_groups_pk', ['rollout_id', 'position'])
    .execute()
  await db.schema
    .createTable('agent_rollout_boxes')
    .addColumn('rollout_id', 'text', (c) => c.notNull().references('agent_rollouts.id').onDelete('cascade'))
    .addColumn('replay_server_id', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('offered_at', 'text')
    // When the rollout first saw the box run the version, and since when its cameras were seen recording then.
    .addColumn('version_at', 'text')
    .addColumn('recording_since', 'text')
    .addColumn('finished_at', 'text')
    .addPrimaryKeyConstraint('agent_rollout_boxes_pk', ['rollout_id', 'replay_server_id'])
    .execute()
  await db.schema.createIndex('agent_rollout_boxes_box').on('agent_rollout_boxes').column('replay_server_id').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('agent_rollout_boxes').execute()
  await db.schema.dropTable('agent_rollout_groups').execute()
  await db.schema.dropTable('agent_rollouts').execute()
}
