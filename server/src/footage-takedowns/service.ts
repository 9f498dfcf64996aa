// Footage takedowns: staff take down a court's footage for an interval, not only one replay's clip.
// Every replay of those minutes goes TAKEN_DOWN (clips out of the bucket), no replay of them may be
// asked for again, and each box of the court's area is told to delete them from every camera filming
// the court until it confirms. Rules and SQL live here; a replay's own takedown comes here too.
import { randomUUID } from 'node:crypto'
import type { FootageDeletion, FootageDeletionReport, FootageTakedown, FootageTakedownListQuery, FootageTakedownOrder, FootageTakedownRequest } from '@club/contract'
import type { Actor } from '../actor.js'
import type { Db, DbOrTx } from '../db/database.js'
import type { FootageTakedownDeletionsTable, FootageTakedownsTable, ReplaysTable } from '../db/schema.js'
import { BadRequestError, ConflictError, HttpError, NotFoundError, quote } from '../errors.js'
import { existingCourt } from '../do-not-film/service.js'
import { paged, pageRequest } from '../paging.js'
import { parseConfig } from '../replay-servers/service.js'
import { IN_PROGRESS, giveBack, removeClip, type ReplayDeps } from '../replays/replay.js'

/** A minute of slack for the caller's clock: "until now" typed on a phone is not the future. */
const CLOCK_SLACK_MS = 60_000
/** How many takedowns a box's status answer carries, oldest first (the contract's maxItems). */
const FOR_BOX = 100

const pathOf = (courtId: string) => `/apis/v2/admin/courts/${encodeURIComponent(courtId)}/takedowns`

function toDeletion(row: FootageTakedownDeletionsTable): FootageDeletion {
  return {
    replayServer: { id: row.replay_server_id },
    status: row.deleted_at === null ? 'PENDING' : 'DELETED',
    deletedDate: row.deleted_at,
    deletedFiles: row.deleted_files
  }
}

function toTakedown(row: FootageTakedownsTable, deletions: readonly FootageTakedownDeletionsTable[]): FootageTakedown {
  return {
    id: row.id,
    court: { id: row.court_id },
    start: row.start_at,
    end: row.end_at,
    reason: row.reason,
    replay: row.replay_id === null ? null : { id: row.replay_id },
    replaysTakenDown: row.replays_taken_down,
    deletions: deletions.filter((d) => d.takedown_id === row.id).map(toDeletion),
    createdBy: row.created_by === null ? null : { id: row.created_by },
    createdDate: row.created_at,
    _links: { self: { href: `${pathOf(row.court_id)}/${row.id}` } }
  }
}

/**
 * The instants a request names, or a 400 naming the field: footage that exists (not the future: "do
 * not film" is for that), within what the club keeps at all (REPLAY_RETENTION_DAYS of replays).
 */
export function checkedTakedownInterval(body: Pick<FootageTakedownRequest, 'start' | 'end'>, now: Date, retentionDays: number): { start: Date; end: Date } {
  const start = new Date(body.start)
  const end = new Date(body.end)
  if (Number.isNaN(start.getTime())) throw new BadRequestError(`body.start ${quote(body.start)} is not a date-time`)
  if (Number.isNaN(end.getTime())) throw new BadRequestError(`body.end ${quote(body.end)} is not a date-time`)
  if (end <= start) throw new BadRequestError('body.end must be after body.start')
  if (end.getTime() > now.getTime() + CLOCK_SLACK_MS) {
    throw new BadRequestError(`body.end ${quote(body.end)} is in the future: footage not yet recorded is kept from the cameras with "do not film"`)
  }
  if (end.getTime() - start.getTime() > retentionDays * 86_400_000) {
    throw new BadRequestError(`body.start: a takedown spans at most ${retentionDays} days (REPLAY_RETENTION_DAYS): nothing older is kept`)
  }
  return { start, end }
}

export interface FootageToTakeDown {
  courtId: string
  start: Date
  end: Date
  reason: string
  /** The replay whose takedown this is: refused (409) when it was taken down already. */
  replayId?: string
}

/** The replays a takedown of `courtId` covers: of the court, or cut from a camera that films it (its picture shows the court). */
function coveredReplays(tx: DbOrTx, courtId: string, cameras: ReadonlyArray<{ replayServerId: string; cameraId: string }>, start: Date, end: Date) {
  return tx
    .selectFrom('replays')
    .selectAll()
    .where((eb) =>
      eb.or([
        eb('court_id', '=', courtId),
        ...cameras.map((c) => eb.and([eb('replay_server_id', '=', c.replayServerId), eb('camera_id', '=', c.cameraId)]))
      ])
    )
    .where('start_at', '<', end.toISOString())
    .where('end_at', '>', start.toISOString())
    .where('status', 'in', [...IN_PROGRESS, 'READY'])
    .execute()
}

/**
 * Takes a court's footage down: in one transaction (every transaction that may write runs alone on
 * SQLite; on PostgreSQL a plain one takes the cluster's write lock exclusive, so no replay request
 * or box report interleaves) the takedown, each box's pending deletion and every covered replay made
 * TAKEN_DOWN (an undelivered one gives its item back); then the clips leave their buckets. A clip the
 * bucket would not delete now keeps its location, and replays/cleanup deletes it (its 502 here).
 */
export async function takeDownFootage(db: Db, what: FootageToTakeDown, by: Actor | null, deps: ReplayDeps): Promise<FootageTakedown> {
  const now = deps.clock.now().toISOString()
  const { takedown, deletions, replays } = await db.transaction().execute(async (tx) => {
    const court = await tx.selectFrom('courts').select(['id', 'area_id']).where('id', '=', what.courtId).executeTakeFirst()
    if (!court) throw new BadRequestError(`params.id: no court ${quote(what.courtId)}`)
    if (what.replayId !== undefined) {
      const replay = await tx.selectFrom('replays').select(['status', 'taken_down_at']).where('id', '=', what.replayId).executeTakeFirst()
      if (replay?.status === 'TAKEN_DOWN') throw new ConflictError(`replay ${quote(what.replayId)} was taken down already, on ${replay.taken_down_at}`)
    }
    const boxes = await tx.selectFrom('replay_servers').select(['id', 'config']).where('area_id', '=', court.area_id).orderBy('created_at').orderBy('id').execute()
    const cameras = boxes.flatMap((box) =>
      (parseConfig(box.config)?.cameras ?? []).filter((c) => (c.courtIds ?? []).includes(court.id)).map((c) => ({ replayServerId: box.id, cameraId: c.id }))
    )
    const replays = await coveredReplays(tx, court.id, cameras, what.start, what.end)
    const takedown: FootageTakedownsTable = {
      id: randomUUID(),
      court_id: court.id,
      start_at: what.start.toISOString(),
      end_at: what.end.toISOString(),
      reason: what.reason.trim(),
      replay_id: what.replayId ?? null,
      replays_taken_down: replays.length,
      created_by: by?.id ?? null,
      created_at: now
    }
    await tx.insertInto('footage_takedowns').values(takedown).execute()
    const deletions: FootageTakedownDeletionsTable[] = boxes.map((box) => ({ takedown_id: takedown.id, replay_server_id: box.id, deleted_at: null, deleted_files: null }))
    if (deletions.length > 0) await tx.insertInto('footage_takedown_deletions').values(deletions).execute()
    if (replays.length > 0) {
      await tx
        .updateTable('replays')
        .set({ status: 'TAKEN_DOWN', taken_down_at: now, taken_down_by: by?.id ?? null, taken_down_reason: takedown.reason, updated_at: now })
        .where('id', 'in', replays.map((r) => r.id))
        .execute()
    }
    for (const replay of replays) if (IN_PROGRESS.includes(replay.status)) await giveBack(tx, replay, deps)
    return { takedown, deletions, replays }
  })
  await removeClips(db, replays, deps)
  return toTakedown(takedown, deletions)
}

/** Deletes the covered replays' clips, each tried; the first failure (a 502) is answered once all were tried. */
async function removeClips(db: Db, replays: readonly ReplaysTable[], deps: ReplayDeps): Promise<void> {
  let failure: unknown
  for (const replay of replays) {
    if (replay.location === null) continue
    try {
      await removeClip(db, replay, deps)
      await db.updateTable('replays').set({ location: null }).where('id', '=', replay.id).where('location', '=', replay.location).execute()
    } catch (err) {
      if (!(err instanceof HttpError)) throw err
      failure ??= err
    }
  }
  if (failure) throw failure
}

export async function createFootageTakedown(
  db: Db,
  courtId: string,
  body: FootageTakedownRequest,
  by: Actor | null,
  deps: ReplayDeps & { retentionDays: number }
): Promise<FootageTakedown> {
  const { start, end } = checkedTakedownInterval(body, deps.clock.now(), deps.retentionDays)
  return takeDownFootage(db, { courtId, start, end, reason: body.reason }, by, deps)
}

async function deletionsOf(db: DbOrTx, takedownIds: readonly string[]): Promise<FootageTakedownDeletionsTable[]> {
  if (takedownIds.length === 0) return []
  return db.selectFrom('footage_takedown_deletions').selectAll().where('takedown_id', 'in', takedownIds).orderBy('replay_server_id').execute()
}

/** A court's takedowns, newest first, each with its boxes' deletions. */
export async function listFootageTakedowns(db: Db, courtId: string, query: FootageTakedownListQuery) {
  await existingCourt(db, courtId)
  const request = pageRequest(query)
  const filtered = db.selectFrom('footage_takedowns').where('court_id', '=', courtId)
  const [rows, count] = await Promise.all([
    filtered.selectAll().orderBy('created_at', 'desc').orderBy('id').limit(request.ipp).offset(request.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  const deletions = await deletionsOf(db, rows.map((r) => r.id))
  return paged(rows.map((r) => toTakedown(r, deletions)), Number(count.total), request, pathOf(courtId), {})
}

export async function getFootageTakedown(db: Db, courtId: string, takedownId: string): Promise<FootageTakedown> {
  const row = await db.selectFrom('footage_takedowns').selectAll().where('id', '=', takedownId).where('court_id', '=', courtId).executeTakeFirst()
  if (!row) throw new NotFoundError(`court ${quote(courtId)} has no takedown ${quote(takedownId)}`)
  return toTakedown(row, await deletionsOf(db, [row.id]))
}

/**
 * A 409 naming the takedown when a replay from `start` to `end` would overlap footage taken down of
 * one of `courtIds` (every court the replay's camera films: its picture shows them all).
 */
export async function refuseTakenDownFootage(db: DbOrTx, courtIds: readonly string[], start: Date, end: Date): Promise<void> {
  const overlapping = await db
    .selectFrom('footage_takedowns')
    .select(['id', 'court_id', 'start_at', 'end_at'])
    .where('court_id', 'in', courtIds)
    .where('start_at', '<', end.toISOString())
    .where('end_at', '>', start.toISOString())
    .orderBy('start_at')
    .executeTakeFirst()
  if (overlapping) {
    // Not the reason: a member asking learns only that those minutes are gone.
    throw new ConflictError(
      `the footage of court ${quote(overlapping.court_id)} from ${overlapping.start_at} to ${overlapping.end_at} was taken down (takedown ${quote(overlapping.id)}): no replay may overlap it`
    )
  }
}

/** What a box is told to delete: the takedowns it has not confirmed, oldest first. */
export async function footageTakedownsOfBox(db: DbOrTx, replayServerId: string): Promise<FootageTakedownOrder[]> {
  const rows = await db
    .selectFrom('footage_takedown_deletions')
    .innerJoin('footage_takedowns', 'footage_takedowns.id', 'footage_takedown_deletions.takedown_id')
    .select(['footage_takedowns.id', 'footage_takedowns.court_id', 'footage_takedowns.start_at', 'footage_takedowns.end_at'])
    .where('footage_takedown_deletions.replay_server_id', '=', replayServerId)
    .where('footage_takedown_deletions.deleted_at', 'is', null)
    .orderBy('footage_takedowns.created_at')
    .orderBy('footage_takedowns.id')
    .limit(FOR_BOX)
    .execute()
  return rows.map((r) => ({ id: r.id, court: { id: r.court_id }, start: r.start_at, end: r.end_at }))
}

/** A box confirms it deleted a takedown's minutes; a second confirmation keeps the first (conditional update). */
export async function confirmFootageDeletion(db: Db, replayServerId: string, takedownId: string, report: FootageDeletionReport, now: Date): Promise<FootageDeletion> {
  await db
    .updateTable('footage_takedown_deletions')
    .set({ deleted_at: now.toISOString(), deleted_files: report.deletedFiles })
    .where('takedown_id', '=', takedownId)
    .where('replay_server_id', '=', replayServerId)
    .where('deleted_at', 'is', null)
    .execute()
  const row = await db
    .selectFrom('footage_takedown_deletions')
    .selectAll()
    .where('takedown_id', '=', takedownId)
    .where('replay_server_id', '=', replayServerId)
    .executeTakeFirst()
  if (!row) throw new NotFoundError(`this box was told of no takedown ${quote(takedownId)}`)
  return toDeletion(row)
}
