// The one thing rollouts ask of box health: since when every camera of a box that should record has
// been RECORDING, by its latest health report (replay-servers/health.ts keeps each camera's state
// with the time the server first heard of it).
import type { DbOrTx } from '../db/database.js'
import type { StoredCamera } from '../replay-servers/health.js'
import type { RecordingSince } from './service.js'

/**
 * Null while a camera that should record does not (STARTING, FAILED) or before the box's first
 * report. PAUSED ("do not film") and DISABLED cameras are not asked to record. A box with no camera
 * to record answers the epoch: it has recorded all it should for as long as anyone asks, so its
 * version alone and healthSeconds decide (the rollout counts from when it ran the version).
 */
export const camerasRecordingSince: RecordingSince = async (db: DbOrTx, boxId: string) => {
  const row = await db.selectFrom('replay_server_health').select('cameras').where('replay_server_id', '=', boxId).executeTakeFirst()
  if (!row) return null
  const filming = (JSON.parse(row.cameras) as StoredCamera[]).filter((camera) => camera.state !== 'PAUSED' && camera.state !== 'DISABLED')
  if (filming.some((camera) => camera.state !== 'RECORDING')) return null
  return new Date(Math.max(0, ...filming.map((camera) => Date.parse(camera.since))))
}
