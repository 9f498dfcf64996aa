// Replays, the box's side: what a box must still cut or upload, and its reports of each replay's
// progress (only forward, only into its own bucket).
import { replayClipKey, replayDeviceRoutes } from '@club/contract'
import type { Chapter, DeviceReplay, DeviceReplayCollection, DeviceReplayStatusChange, ReplayStatus } from '@club/contract'
import type { Db, DbOrTx } from '../db/database.js'
import type { ReplaysTable } from '../db/schema.js'
import { BadRequestError, ConflictError, NotFoundError, quote } from '../errors.js'
import { collection } from '../paging.js'
import { markDelivered } from '../packages/redemptions.js'
import { parseConfig } from '../replay-servers/service.js'
import { BucketError, checkLocation, keyBelow } from '@club/storage'
import { FINAL, IN_PROGRESS, giveBack, recordReplayEvent, removeClip, type ReplayDeps } from './replay.js'
import { failUnansweredReplays } from './service.js'
import { chaptersOfMatches } from '../matches/chapters.js'

/** Whether a box may move a replay from `current` to `next`: only forward, never out of a final status. */
export function transitionError(current: ReplayStatus, next: DeviceReplayStatusChange['status']): string | null {
  if (FINAL.includes(current)) return `the replay is ${current} already`
  // A box restarted mid-way begins again: EXPORTING after UPLOADING is allowed, as is repeating one.
  if (current === 'REQUESTED' && next === 'UPLOADING') return 'a replay is exported before it is uploaded'
  return null
}

type DeviceRow = Pick<ReplaysTable, 'id' | 'kind' | 'match_id' | 'status' | 'camera_id' | 'start_at' | 'end_at'>

/** A MATCH angle carries its match's chapter marks (no replay ids: the box writes only the marks). */
function toDeviceReplay(row: DeviceRow, chapters: ReadonlyMap<string, Chapter[]>): DeviceReplay {
  const marks = row.match_id === null ? undefined : chapters.get(row.match_id)
  return { id: row.id, kind: row.kind, status: row.status, cameraId: row.camera_id, start: row.start_at, end: row.end_at, ...(marks ? { chapters: marks } : {}) }
}

async function toDeviceReplays(db: DbOrTx, rows: readonly DeviceRow[]): Promise<DeviceReplay[]> {
  const chapters = await chaptersOfMatches(db, rows.flatMap((row) => (row.match_id === null ? [] : [row.match_id])), 'box')
  return rows.map((row) => toDeviceReplay(row, chapters))
}

/** What a box must still cut or upload, oldest first. */
export async function listDeviceReplays(db: Db, replayServerId: string, deps: ReplayDeps): Promise<DeviceReplayCollection> {
  await failUnansweredReplays(db, deps)
  const rows = await db
    .selectFrom('replays')
    .select(['id', 'kind', 'match_id', 'status', 'camera_id', 'start_at', 'end_at'])
    .where('replay_server_id', '=', replayServerId)
    .where('status', 'in', IN_PROGRESS)
    .orderBy('created_at')
    .orderBy('id')
    .execute()
  return collection(await toDeviceReplays(db, rows), replayDeviceRoutes.list.url)
}

/** A READY location that is not the replay's own clip: the box's error (400), and worth a line in the log. */
export class NotTheReplaysClipError extends BadRequestError {
  override name = 'NotTheReplaysClipError'
}

/**
 * Refuses, as a 400 naming why, a READY location outside the box's bucket (by its text for s3:// and
 * gs://, by where it really is for file://: a symbolic link in the folder may point anywhere), or one
 * that is not the replay's own key there (replayClipKey): the server deletes what a replay's location
 * names (a takedown, a late READY, the cleanup), and a bucket is shared by boxes, so a box that could
 * report any object would make the server delete other people's clips. For a replay this box no
 * longer has (an orphan, see removeOrphanClip), the key of that id under one of its own cameras.
 */
async function checkReadyLocation(db: DbOrTx, replayServerId: string, id: string, location: string): Promise<string> {
  const box = await db.selectFrom('replay_servers').select('config').where('id', '=', replayServerId).executeTakeFirstOrThrow()
  const config = parseConfig(box.config)
  const bucket = config?.cloudStorageBucket
  if (bucket === undefined) throw new BadRequestError(`body.location is not in the box's cloudStorageBucket: it has none`)
  let key: string
  try {
    await checkLocation(bucket, location)
    key = keyBelow(bucket, location)
  } catch (err) {
    if (err instanceof BucketError) throw new BadRequestError(`body.location is not in the box's cloudStorageBucket: ${err.message}`)
    throw err
  }
  const replay = await db.selectFrom('replays').select('camera_id').where('id', '=', id).where('replay_server_id', '=', replayServerId).executeTakeFirst()
  const cameraIds = replay ? [replay.camera_id] : (config?.cameras ?? []).map((camera) => camera.id)
  if (!cameraIds.some((cameraId) => key === replayClipKey({ id, cameraId }))) {
    const own = replay ? quote(replayClipKey({ id, cameraId: replay.camera_id }), { limit: 300 }) : `<cameraId>/${id}.mp4`
    throw new NotTheReplaysClipError(`body.location is not this replay's clip: a box stores replay ${quote(id)} at ${own} in its bucket, and reports only that`)
  }
  return bucket
}

/**
 * A clip a box stored for a replay its player deleted meanwhile (DELETE while UPLOADING): no row names
 * it any more, so neither a takedown nor replays/cleanup would ever delete it; it goes now. Only a
 * clip in the box's bucket under the replay's own key (checked already) of an id no replay has, so a
 * box never makes the server delete anything else.
 */
async function removeOrphanClip(db: Db, id: string, location: string, bucket: string, deps: ReplayDeps): Promise<void> {
  if (await db.selectFrom('replays').select('id').where('id', '=', id).executeTakeFirst()) return
  await removeClip(db, { id, location, bucket, replay_server_id: null }, deps)
}

/** A box's report of a replay's progress. A failure gives the package item back. */
export async function setDeviceReplayStatus(db: Db, replayServerId: string, id: string, change: DeviceReplayStatusChange, deps: ReplayDeps): Promise<DeviceReplay> {
  const now = deps.clock.now().toISOString()
  // The server signs links to, serves and deletes whatever is here: only what lies in the box's own
  // bucket once decoded (`%2e%2e` is `..`) and resolved, checked before the transaction (file system work).
  const bucket = change.status === 'READY' ? await checkReadyLocation(db, replayServerId, id, change.location) : null
  const row = await db.transaction().execute(async (tx) => {
    const row = await tx.selectFrom('replays').selectAll().where('id', '=', id).where('replay_server_id', '=', replayServerId).executeTakeFirst()
    if (!row) return null
    const problem = transitionError(row.status, change.status)
    if (problem) return { row, problem }
    let set: Partial<ReplaysTable> = { status: change.status, updated_at: now }
    if (change.status === 'READY') {
      set = { ...set, location: change.location, bucket, duration_seconds: change.durationSeconds, size_bytes: change.sizeBytes, sha256: change.sha256 }
    }
    if (change.status === 'FAILED') set = { ...set, reason: change.reason }
    // Conditional on the status read: a takedown committed in between (PostgreSQL reads committed
    // rows) is not overwritten by READY, nor is a replay given up by its redemption's cancellation in
    // another process (packages/redemptions.ts), so the item and the replay never both stay; the box
    // is told, and its clip deleted, below.
    const done = await tx.updateTable('replays').set(set).where('id', '=', row.id).where('status', '=', row.status).executeTakeFirst()
    if (Number(done.numUpdatedRows) !== 1) {
      const current = await tx.selectFrom('replays').select('status').where('id', '=', row.id).executeTakeFirstOrThrow()
      return { row: { ...row, status: current.status }, problem: `the replay is ${current.status} already` }
    }
    if (change.status === 'FAILED') await giveBack(tx, row, deps)
    // Delivered: its item is spent for good, whatever becomes of this row (BILLING.md, "Packages").
    if (change.status === 'READY' && row.redemption_id !== null) await markDelivered(tx, row.redemption_id, now)
    if (change.status === 'READY' || change.status === 'FAILED') {
      await recordReplayEvent(tx, row.id, change.status === 'READY' ? 'replay.ready' : 'replay.failed', new Date(now))
    }
    return { row: { ...row, ...set } as ReplaysTable, problem: null }
  })
  if (row === null) {
    if (change.status === 'READY') await removeOrphanClip(db, id, change.location, bucket!, deps)
    throw new NotFoundError(`this box has no replay ${quote(id)}`)
  }
  if (row.problem !== null) {
    // Taken down, or given up by its member, while the box was cutting it: the clip it uploaded
    // anyway leaves the bucket now.
    if ((row.row.status === 'TAKEN_DOWN' || row.row.status === 'FAILED') && change.status === 'READY') {
      await removeClip(db, { ...row.row, location: change.location, bucket }, deps)
    }
    throw new ConflictError(`replay ${row.row.id}: ${row.problem}`)
  }
  return (await toDeviceReplays(db, [row.row]))[0]!
}

