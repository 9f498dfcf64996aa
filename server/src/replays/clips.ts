// A replay's stored clip after it is READY: the signed file:// link's download, and its expiry by the
// replays/cleanup job (a takedown's clip the bucket refused is retried there too).
import type { Db } from '../db/database.js'
import { HttpError, NotFoundError, quote } from '../errors.js'
import { BucketError, BucketObjectMissingError } from '@club/storage'
import type { ReplayStorage } from './storage.js'
import { clipBucket, recordReplayEvent, type ReplayDeps } from './replay.js'

/**
 * The stored file of a READY file:// replay, opened, when the link's signature and expiry hold: only
 * inside the bucket it was reported in, symbolic links followed (@club/storage refuses the rest). The
 * caller closes the handle.
 */
export async function openReplayDownload(db: Db, id: string, expires: number, signature: string, deps: ReplayDeps) {
  if (!deps.storage.checkFileLink(id, expires, signature, deps.clock.now())) {
    throw new HttpError(403, 'this download link is not valid or has expired: ask for the replay again to get a fresh one')
  }
  const row = await db.selectFrom('replays').select(['status', 'location', 'bucket', 'replay_server_id']).where('id', '=', id).executeTakeFirst()
  if (row?.status === 'TAKEN_DOWN') throw new HttpError(410, `replay ${quote(id)} was taken down: its clip is deleted`)
  if (!row || row.status !== 'READY' || !row.location?.startsWith('file://')) throw new NotFoundError(`no stored clip of replay ${quote(id)}`)
  try {
    return await deps.storage.openFile(row.location, await clipBucket(db, row))
  } catch (err) {
    if (!(err instanceof BucketError)) throw err
    // Gone, or leading out of its bucket: either way there is nothing this link may serve.
    throw new NotFoundError(`the clip of replay ${quote(id)} is not stored in its bucket${err instanceof BucketObjectMissingError ? ' any more' : ''}`)
  }
}

/**
 * The replays/cleanup job's work (the webhooks issue wires it): every replay older than
 * `retentionDays` (a match's angle: `matchRetentionDays` after its match's end) loses its stored clip and becomes EXPIRED, and a taken-down replay's clip still
 * stored is deleted. A clip that cannot be deleted now keeps its replay as it is, for the next run.
 * Answers how many expired.
 */
export async function deleteExpiredReplays(
  db: Db,
  storage: Pick<ReplayStorage, 'remove'>,
  now: Date,
  retentionDays: number,
  matchRetentionDays: number = retentionDays
): Promise<number> {
  const before = new Date(now.getTime() - retentionDays * 86_400_000).toISOString()
  const clips = await db
    .selectFrom('replays')
    .select(['id', 'location', 'bucket', 'replay_server_id'])
    // A taken-down replay stays as it is: its record is what the takedown keeps.
    .where('status', 'not in', ['EXPIRED', 'TAKEN_DOWN'])
    .where('kind', '=', 'CLIP')
    .where('created_at', '<', before)
    .orderBy('created_at')
    .execute()
  // A match's angles by MATCH_RETENTION_DAYS after the match's end (issue 49).
  const matchesBefore = new Date(now.getTime() - matchRetentionDays * 86_400_000).toISOString()
  const angles = await db
    .selectFrom('replays')
    .innerJoin('matches', 'matches.id', 'replays.match_id')
    .select(['replays.id', 'replays.location', 'replays.bucket', 'replays.replay_server_id'])
    .where('replays.status', 'not in', ['EXPIRED', 'TAKEN_DOWN'])
    .where('replays.kind', '=', 'MATCH')
    .where('matches.end_at', '<', matchesBefore)
    .orderBy('matches.end_at')
    .execute()
  const rows = [...clips, ...angles]
  let expired = 0
  for (const row of rows) {
    try {
      if (row.location !== null) await storage.remove(row.location, await clipBucket(db, row))
    } catch {
      continue
    }
    // Not over a takedown made since the select: its record stays TAKEN_DOWN.
    await db.transaction().execute(async (tx) => {
      const done = await tx.updateTable('replays').set({ status: 'EXPIRED', location: null, updated_at: now.toISOString() }).where('id', '=', row.id).where('status', '!=', 'TAKEN_DOWN').executeTakeFirst()
      if (Number(done.numUpdatedRows) === 1) await recordReplayEvent(tx, row.id, 'replay.expired', now)
    })
    expired++
  }
  // A takedown's clip the bucket would not delete then (its 502): tried again on every run, whatever
  // its age, so that it goes even when no one takes the replay down again.
  const leftovers = await db.selectFrom('replays').select(['id', 'location', 'bucket', 'replay_server_id']).where('status', '=', 'TAKEN_DOWN').where('location', 'is not', null).execute()
  for (const row of leftovers) {
    try {
      await storage.remove(row.location!, await clipBucket(db, row))
    } catch {
      continue
    }
    await db.updateTable('replays').set({ location: null }).where('id', '=', row.id).where('location', '=', row.location).execute()
  }
  // A guest whose token has expired can read nothing any more; once its last clip is gone too, its row
  // (and its expired replays, by cascade) goes, so the table does not grow with every phone that came.
  await db
    .deleteFrom('replay_guests')
    .where('expires_at', '<', now.toISOString())
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('replays').select('replays.id').whereRef('replays.guest_id', '=', 'replay_guests.id').where('replays.status', '!=', 'EXPIRED')))
    )
    .execute()
  return expired
}

