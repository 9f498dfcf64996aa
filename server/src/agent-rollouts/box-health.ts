// The one thing rollouts ask of box health: since when every camera of a box that should record has
// been RECORDING, by its latest health report (replay-servers/health.ts keeps each camera's state
// with the time the server first heard of it).
import type { DbOrTx } from '../db/database.js'
import type { StoredCamera } from '../replay-servers/health.js'
import { parseConfig } from '../replay-servers/service.js'
import type { RecordingSince } from './service.js'

/**
 * Null while a camera that should record does not (STARTING, FAILED) or before the box's first
 * report. PAUSED ("do not film") and DISABLED cameras are not asked to record. A camera enabled in the
 * box's configuration that its report leaves out does not record either: a release that broke the
 * agent's cameras so badly that it reports none would otherwise count as healthy. A box with no
 * camera to record answers the epoch: it has recorded all it should for as long as anyone asks, so
 * its version alone and healthSeconds decide (the rollout counts from when it ran the version).
 */
export const camerasRecordingSince: RecordingSince = async (db: DbOrTx, boxId: string) => {
  const row = await db
    .selectFrom('replay_server_health')
    .innerJoin('replay_servers', 'replay_servers.id', 'replay_server_health.replay_server_id')
    .select(['replay_server_health.cameras', 'replay_servers.config'])
    .where('replay_server_id', '=', boxId)
    .executeTakeFirst()
  if (!row) return null
  const reported = JSON.parse(row.cameras) as StoredCamera[]
  const configured = parseConfig(row.config)?.cameras ?? []
  if (configured.some((camera) => camera.isEnabled !== false && !reported.some((c) => c.id === camera.id))) return null
  const filming = reported.filter((camera) => camera.state !== 'PAUSED' && camera.state !== 'DISABLED')
  if (filming.some((camera) => camera.state !== 'RECORDING')) return null
  return new Date(Math.max(0, ...filming.map((camera) => Date.parse(camera.since))))
}
