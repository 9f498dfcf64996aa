// The fleet at a glance (GET /apis/v2/admin/fleet, the console's first page): boxes by status and
// online, those with a problem (the list's health=PROBLEM), cameras by the state their box last
// reported, the agent versions run, and the rollouts under way.
import type { CameraState, FleetSummary, ReplayServerStatus } from '@club/contract'
import type { DbOrTx } from '../db/database.js'
import { hasProblem, type StoredCamera } from './health.js'
import { onlineSince, type ReplayServerDeps } from './service.js'

/** The rollouts RUNNING or PAUSED, newest first: the staged rollouts' to say (agent-rollouts/service.ts activeRollouts). */
export type RunningRollouts = (db: DbOrTx) => Promise<FleetSummary['rollouts']>

const STATUSES: readonly ReplayServerStatus[] = ['PENDING', 'APPROVED', 'REJECTED', 'REVOKED']
const CAMERA_STATES: readonly CameraState[] = ['RECORDING', 'STARTING', 'FAILED', 'PAUSED', 'DISABLED']

export async function fleetSummary(
  db: DbOrTx,
  deps: Pick<ReplayServerDeps, 'clock' | 'pollIntervalSeconds' | 'unrecordedSightings'>,
  runningRollouts: RunningRollouts
): Promise<FleetSummary> {
  await deps.unrecordedSightings?.flush()
  const since = onlineSince(deps.clock.now(), deps.pollIntervalSeconds)
  const approved = db
    .selectFrom('replay_servers')
    .leftJoin('replay_server_health as h', 'h.replay_server_id', 'replay_servers.id')
    .where('status', '=', 'APPROVED')
  const [statuses, counts, cameraRows, versions, rollouts] = await Promise.all([
    db.selectFrom('replay_servers').select(['status', (eb) => eb.fn.countAll<number>().as('boxes')]).groupBy('status').execute(),
    approved
      .select((eb) => [
        eb.fn.countAll<number>().as('approved'),
        eb.fn.sum<number>(eb.case().when('last_seen_at', '>=', since).then(1).else(0).end()).as('online'),
        eb.fn.sum<number>(eb.case().when(hasProblem(since)).then(1).else(0).end()).as('problems')
      ])
      .executeTakeFirstOrThrow(),
    approved.select('h.cameras').where('h.cameras', 'is not', null).execute(),
    approved
      .select(['version', (eb) => eb.fn.countAll<number>().as('boxes')])
      .groupBy('version')
      .orderBy('boxes', 'desc')
      .orderBy('version')
      .execute(),
    runningRollouts(db)
  ])
  const byStatus = Object.fromEntries(STATUSES.map((status) => [status, 0])) as Record<ReplayServerStatus, number>
  for (const row of statuses) byStatus[row.status] = Number(row.boxes)
  const cameras = Object.fromEntries(CAMERA_STATES.map((state) => [state, 0])) as Record<CameraState, number>
  for (const row of cameraRows) for (const camera of JSON.parse(row.cameras!) as StoredCamera[]) cameras[camera.state]++
  const online = Number(counts.online ?? 0)
  return {
    boxes: {
      total: Object.values(byStatus).reduce((a, b) => a + b, 0),
      byStatus,
      online,
      offline: Number(counts.approved) - online,
      withProblems: Number(counts.problems ?? 0)
    },
    cameras,
    versions: versions.map((row) => ({ version: row.version, boxes: Number(row.boxes) })),
    rollouts
  }
}
