// Replays, the player's side: a player asks for the last seconds of a court, reads and deletes their
// replays; staff take one down. The box's side is device.ts, a stored clip's life clips.ts, what they
// share replay.ts. Rules and SQL live here; the routes map HTTP to these functions.
import { randomUUID } from 'node:crypto'
import type { Replay, ReplayListQuery, ReplayRequest, ReplayServerConfig } from '@club/contract'
import { isStaff, type Actor } from '../actor.js'
import type { Db, DbOrTx } from '../db/database.js'
import { rowLocked } from '../db/sql.js'
import type { ReplaysTable } from '../db/schema.js'
import {
  BadRequestError,
  ConflictError,
  ForbiddenError,
  HttpError,
  NotFoundError,
  PaymentRequiredError,
  ServiceUnavailableError,
  quote
} from '../errors.js'
import { recordFootageAccess, type FootageLook, type Viewer } from '../footage-access/service.js'
import { refuseDoNotFilm } from '../do-not-film/service.js'
import { refuseTakenDownFootage, takeDownFootage } from '../footage-takedowns/service.js'
import { redeemFromAnyIn } from '../packages/redemptions.js'
import { paidMatches } from '../packages/targets.js'
import { chaptersOfMatches } from '../matches/chapters.js'
import { matchIdsOf, maySeeMatch } from '../matches/participants.js'
import { paged, pageRequest } from '../paging.js'
import { onlineSince, parseConfig } from '../replay-servers/service.js'
import type { StoredCamera } from '../replay-servers/health.js'
import {
  IN_PROGRESS,
  PATH,
  giveBack,
  isGuest,
  recordReplayEvent,
  removeClip,
  toReplay,
  type ReplayDeps,
  type ReplaySettings,
  type Requester
} from './replay.js'

/** How long a MATCH angle may wait for its box to start it before it fails box_unreachable. */
export const MATCH_UNANSWERED_MS = 86_400_000

/** An approved box of the court's area with its configuration. */
interface CandidateBox {
  id: string
  config: ReplayServerConfig
}

/** The approved, configured boxes of an area, oldest first: whose cameras may film its courts. */
export async function areaBoxes(db: DbOrTx, areaId: string): Promise<CandidateBox[]> {
  const boxes = await db
    .selectFrom('replay_servers')
    .select(['id', 'config'])
    .where('area_id', '=', areaId)
    .where('status', '=', 'APPROVED')
    .where('config', 'is not', null)
    .orderBy('created_at')
    .execute()
  return boxes.map((b) => ({ id: b.id, config: parseConfig(b.config)! }))
}

/** A camera its box says is FAILED, and since when (the server's clock): see failedCameras. */
export type FailedCameras = ReadonlyMap<string, { since: string }>

/** The enabled cameras of these boxes that film `courtId` (their courtIds name it), with every court each films. */
export function camerasFilming(boxes: readonly CandidateBox[], courtId: string): Array<{ replayServerId: string; cameraId: string; courtIds: string[] }> {
  return boxes.flatMap((box) =>
    box.config.cameras
      .filter((c) => c.isEnabled !== false && (c.courtIds ?? []).includes(courtId))
      .map((c) => ({ replayServerId: box.id, cameraId: c.id, courtIds: c.courtIds! }))
  )
}

/**
 * The box and camera a replay of `courtId` is cut from: the named camera when it films the court,
 * else the first enabled camera that does and is not FAILED. `missing` names what is missing;
 * `failed`: the named camera, or every camera filming the court, is FAILED (the first of them).
 */
export function chooseCamera(
  boxes: readonly CandidateBox[],
  courtId: string,
  cameraId: string | undefined,
  failed: FailedCameras = new Map()
): { replayServerId: string; cameraId: string } | { missing: string } | { failed: { cameraId: string; since: string } } {
  const filming = camerasFilming(boxes, courtId).map(({ replayServerId, cameraId }) => ({ replayServerId, cameraId }))
  const failure = (c: { replayServerId: string; cameraId: string }) => {
    const known = failed.get(`${c.replayServerId} ${c.cameraId}`)
    return known ? { failed: { cameraId: c.cameraId, ...known } } : null
  }
  if (cameraId !== undefined) {
    const named = filming.find((c) => c.cameraId === cameraId)
    if (!named) return { missing: `camera ${quote(cameraId)} does not film court ${quote(courtId)}` }
    return failure(named) ?? named
  }
  if (filming.length === 0) return { missing: `no camera films court ${quote(courtId)}: name it in a camera's courtIds` }
  return filming.find((c) => !failure(c)) ?? failure(filming[0]!)!
}

/**
 * The cameras of these boxes that are FAILED by their box's latest report, keyed "box camera". Only
 * what is current counts: a box reports each change of state as it happens, so its latest report
 * holds while it polls; a box that stopped polling (offline) says nothing of its cameras now, and a
 * replay of it is asked for as before (it waits for the box, or fails as it always did).
 */
export async function failedCameras(db: DbOrTx, boxIds: readonly string[], now: Date, pollIntervalSeconds: number): Promise<FailedCameras> {
  const failed = new Map<string, { since: string }>()
  if (boxIds.length === 0) return failed
  const rows = await db
    .selectFrom('replay_server_health as h')
    .innerJoin('replay_servers', 'replay_servers.id', 'h.replay_server_id')
    .select(['h.replay_server_id', 'h.cameras'])
    .where('h.replay_server_id', 'in', [...boxIds])
    .where('h.failed_cameras', '>', 0)
    .where('replay_servers.last_seen_at', '>=', onlineSince(now, pollIntervalSeconds))
    .execute()
  for (const row of rows) {
    for (const camera of JSON.parse(row.cameras) as StoredCamera[]) {
      if (camera.state === 'FAILED') failed.set(`${row.replay_server_id} ${camera.id}`, { since: camera.since })
    }
  }
  return failed
}

/** The interval a request asks for, or a 400 naming the field. */
export function replayInterval(body: Pick<ReplayRequest, 'seconds' | 'end'>, now: Date, settings: Pick<ReplaySettings, 'defaultSeconds' | 'maxSeconds'>) {
  const seconds = body.seconds ?? settings.defaultSeconds
  if (seconds > settings.maxSeconds) throw new BadRequestError(`body.seconds: a replay lasts at most ${settings.maxSeconds} s; this one asks for ${seconds}`)
  const end = body.end === undefined ? now : new Date(body.end)
  if (Number.isNaN(end.getTime())) throw new BadRequestError(`body.end ${quote(body.end)} is not a date-time`)
  // A second of slack for the caller's clock.
  if (end.getTime() > now.getTime() + 1000) throw new BadRequestError(`body.end ${quote(body.end)} is in the future`)
  return { start: new Date(end.getTime() - seconds * 1000), end }
}

/**
 * Who may ask for these minutes. A member or guest: footage ending within REPLAY_MAX_AGE_SECONDS of
 * now ("that point a few minutes ago"), else 400 naming the limit. Staff and admins: older footage
 * too, for a reason they type (400 without one). A reason from a member or guest is a claim to the
 * staff's rule they cannot make: 403. Answers the reason to record, if any.
 */
export function replayAccessReason(
  interval: { end: Date },
  accessReason: string | undefined,
  requester: Requester,
  now: Date,
  settings: Pick<ReplaySettings, 'maxAgeSeconds'>
): string | null {
  const staff = !isGuest(requester) && isStaff(requester)
  if (accessReason !== undefined && !staff) {
    throw new ForbiddenError('body.accessReason: only staff and admins give a reason to see older footage; leave it out')
  }
  const reason = accessReason?.trim() || null
  const ageSeconds = Math.floor((now.getTime() - interval.end.getTime()) / 1000)
  if (ageSeconds <= settings.maxAgeSeconds) return reason
  if (!staff) {
    throw new BadRequestError(
      `body.end: a replay must end within the last ${settings.maxAgeSeconds} s (REPLAY_MAX_AGE_SECONDS); this one ends ${ageSeconds} s ago. Older footage is for the club's staff`
    )
  }
  if (reason === null) {
    throw new BadRequestError(
      `body.accessReason: footage ending more than ${settings.maxAgeSeconds} s ago (REPLAY_MAX_AGE_SECONDS) is given to staff and admins for a reason: type it in accessReason`
    )
  }
  return reason
}

/** A guest asks only for the court whose page made their session. */
async function checkGuestCourt(db: DbOrTx, guestId: string, courtId: string): Promise<void> {
  const guest = await db.selectFrom('replay_guests').select('court_id').where('id', '=', guestId).executeTakeFirst()
  if (guest?.court_id !== courtId) {
    throw new ForbiddenError(`body.court.id: this guest session was made on another court's page; a guest asks only for that court's replays (open the page of court ${courtId})`)
  }
}

/** A replay asked for by `viewer` (a member, staff, an admin or a guest), written with its footage log row. */
export async function createReplay(db: Db, body: ReplayRequest, viewer: Viewer, deps: ReplayDeps): Promise<ReplaysTable> {
  const requester = viewer.who
  const now = deps.clock.now()
  const { start, end } = replayInterval(body, now, deps.settings)
  const accessReason = replayAccessReason({ end }, body.accessReason, requester, now, deps.settings)
  if (isGuest(requester)) await checkGuestCourt(db, requester.guestId, body.court.id)
  const court = await db.selectFrom('courts').select(['id', 'area_id']).where('id', '=', body.court.id).executeTakeFirst()
  if (!court) throw new BadRequestError(`body.court.id: no court ${quote(body.court.id)}`)
  const candidates = await areaBoxes(db, court.area_id)
  const failed = await failedCameras(db, candidates.map((b) => b.id), now, deps.settings.pollIntervalSeconds)
  const choice = chooseCamera(candidates, court.id, body.cameraId, failed)
  if ('missing' in choice) throw new ConflictError(choice.missing)
  // Told at once, before anything is stored or paid: the box would only report it FAILED minutes later.
  if ('failed' in choice) {
    // Not its problem in words: that is the box's own text (ffmpeg's last line at worst, a camera's
    // address in it), for staff in the admin view, not for whoever asks for a replay.
    const { cameraId, since } = choice.failed
    throw new ServiceUnavailableError(
      `camera ${quote(cameraId)} filming court ${quote(court.id)} does not record since ${since}: no replay can be cut from it until it records again`,
      // Its box reports the camera's next change with its next poll.
      { 'retry-after': String(deps.settings.pollIntervalSeconds) },
      // For the court page, which tells the player in their language (a 503 is otherwise sent again).
      { camera: { id: cameraId, state: 'FAILED', since } }
    )
  }
  const filmed = candidates.find((b) => b.id === choice.replayServerId)!.config.cameras.find((c) => c.id === choice.cameraId)!.courtIds!
  await refuseDoNotFilm(db, filmed, start, end)

  const id = randomUUID()
  // The item that pays for it and the replay are written together: neither can exist without the other.
  // The only rule inside is the redemption's, kept by its package rows' locks (redemptions.ts).
  return rowLocked(db, async (tx) => {
    // Inside the transaction: a takedown (a transaction that runs alone) is either seen here or sees
    // this replay and takes it down too.
    await refuseTakenDownFootage(tx, filmed, start, end)
    let paidWith: { packageId: string; redemptionId: string } | null = null
    // A guest has no packages: what limits guests is the rate limit per court and per address.
    if (deps.settings.requirePackage && !isGuest(requester)) {
      try {
        const { redemption } = await redeemFromAnyIn(tx, { type: 'REPLAY', target: { replay: { id } } }, requester, deps.redemption)
        const { package_id } = await tx.selectFrom('package_redemptions').select('package_id').where('id', '=', redemption.id).executeTakeFirstOrThrow()
        paidWith = { packageId: package_id, redemptionId: redemption.id }
      } catch (err) {
        if (err instanceof HttpError && err.statusCode === 409) throw new PaymentRequiredError(`a replay takes a REPLAY package item and none is left: ${err.message}`)
        throw err
      }
    }
    const row: ReplaysTable = {
      id,
      user_id: isGuest(requester) ? null : requester.id,
      guest_id: isGuest(requester) ? requester.guestId : null,
      court_id: court.id,
      replay_server_id: choice.replayServerId,
      camera_id: choice.cameraId,
      start_at: start.toISOString(),
      end_at: end.toISOString(),
      status: 'REQUESTED',
      reason: null,
      location: null,
      duration_seconds: null,
      size_bytes: null,
      sha256: null,
      package_id: paidWith?.packageId ?? null,
      redemption_id: paidWith?.redemptionId ?? null,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
      bucket: null,
      taken_down_at: null,
      taken_down_by: null,
      taken_down_reason: null,
      kind: 'CLIP',
      match_id: null
    }
    await tx.insertInto('replays').values(row).execute()
    await recordReplayEvent(tx, id, 'replay.requested', now)
    const look: FootageLook = {
      purpose: 'REPLAY',
      reason: accessReason,
      courtId: row.court_id,
      replayServerId: row.replay_server_id,
      cameraId: row.camera_id,
      replayId: row.id,
      start: row.start_at,
      end: row.end_at
    }
    await recordFootageAccess(tx, viewer, [look], now)
    return row
  })
}

/**
 * Fails the replays no box has started within REPLAY_REQUEST_TIMEOUT_SECONDS (box_unreachable) and
 * gives their items back. Run before every read and by a timer; each row changes once (the update
 * is conditional on its status), whichever process gets there first.
 */
export async function failUnansweredReplays(db: Db, deps: ReplayDeps): Promise<number> {
  const now = deps.clock.now()
  const before = new Date(now.getTime() - deps.settings.requestTimeoutSeconds * 1000).toISOString()
  // A match's angle waits behind every player's clip on its box (cut at the lowest priority): only
  // a box that has not started it within a day (MATCH_UNANSWERED_MS) is unreachable for it.
  const matchBefore = new Date(now.getTime() - Math.max(deps.settings.requestTimeoutSeconds * 1000, MATCH_UNANSWERED_MS)).toISOString()
  const stale = await db
    .selectFrom('replays')
    .select(['id', 'user_id', 'package_id', 'redemption_id'])
    .where('status', '=', 'REQUESTED')
    .where((eb) => eb.or([eb.and([eb('kind', '=', 'CLIP'), eb('created_at', '<', before)]), eb.and([eb('kind', '=', 'MATCH'), eb('created_at', '<', matchBefore)])]))
    .execute()
  let failed = 0
  for (const row of stale) {
    const done = await db.transaction().execute(async (tx) => {
      const result = await tx
        .updateTable('replays')
        .set({ status: 'FAILED', reason: 'box_unreachable', updated_at: now.toISOString() })
        .where('id', '=', row.id)
        .where('status', '=', 'REQUESTED')
        .executeTakeFirst()
      if (Number(result.numUpdatedRows) !== 1) return false
      await giveBack(tx, row, deps)
      await recordReplayEvent(tx, row.id, 'replay.failed', now)
      return true
    })
    if (done) failed++
  }
  return failed
}

/** Whether `requester` sees the replay: their own clip, a MATCH angle of a match they take part in (matches/participants.ts), or staff. */
async function maySeeReplay(db: DbOrTx, row: ReplaysTable, requester: Requester): Promise<boolean> {
  if (row.kind === 'MATCH') {
    const match = await db.selectFrom('matches').selectAll().where('id', '=', row.match_id!).executeTakeFirst()
    return match !== undefined && (await maySeeMatch(db, match, requester))
  }
  return isGuest(requester) ? row.guest_id === requester.guestId : row.user_id === requester.id || isStaff(requester)
}

async function visibleReplay(db: DbOrTx, id: string, requester: Requester): Promise<ReplaysTable> {
  const row = await db.selectFrom('replays').selectAll().where('id', '=', id).executeTakeFirst()
  const visible = row && (await maySeeReplay(db, row, requester))
  // Someone else's replay is "not found", not "forbidden": its existence is not theirs to learn.
  if (!visible) throw new NotFoundError(`no replay ${quote(id)}`)
  return row
}

/** A replay just asked for, as the requester sees it: not READY, so no link is issued. */
export function presentNewReplay(row: ReplaysTable, requester: Requester): Replay {
  return toReplay(row, requester)
}

/**
 * How long a READY replay's link stays valid. A player's video asks for the clip again as it plays
 * (byte ranges from where it is), so a link must outlast the playing: a match's angle may be hours
 * long, and with the clip's REPLAY_URL_TTL_SECONDS alone it would stop playing partway. Its link
 * lasts its duration on top.
 */
export function linkTtlSeconds(row: Pick<ReplaysTable, 'kind' | 'duration_seconds' | 'start_at' | 'end_at'>, settings: Pick<ReplaySettings, 'urlTtlSeconds'>): number {
  if (row.kind !== 'MATCH') return settings.urlTtlSeconds
  const seconds = row.duration_seconds ?? (Date.parse(row.end_at) - Date.parse(row.start_at)) / 1000
  return settings.urlTtlSeconds + Math.ceil(Math.max(0, seconds))
}

/**
 * The matches of these angles whose links `who` has not paid for under MATCH_REQUIRES_PACKAGE: a
 * member pays by opening the match (GET /matches/:id); a list or an angle's own GET spends nothing,
 * so until then it gives no link. Staff never pay.
 */
async function unpaidMatches(db: DbOrTx, rows: readonly ReplaysTable[], who: Requester, deps: ReplayDeps): Promise<Set<string>> {
  const ids = new Set(rows.flatMap((row) => (row.match_id !== null && row.status === 'READY' ? [row.match_id] : [])))
  if (!deps.settings.matchRequiresPackage || ids.size === 0 || (!isGuest(who) && isStaff(who))) return new Set()
  if (isGuest(who)) return ids
  const paid = await paidMatches(db, who.id, [...ids])
  return new Set([...ids].filter((id) => !paid.has(id)))
}

/**
 * Replays as `viewer` sees them: a READY one with a fresh download link, and each link issued is a
 * look at footage, written to the log.
 */
export async function presentReplays(db: Db, rows: readonly ReplaysTable[], viewer: Viewer, deps: ReplayDeps): Promise<Replay[]> {
  const now = deps.clock.now()
  const looks: FootageLook[] = []
  const chapters = await chaptersOfMatches(db, rows.flatMap((row) => (row.match_id === null ? [] : [row.match_id])), viewer.who)
  const unpaid = await unpaidMatches(db, rows, viewer.who, deps)
  const replays = await Promise.all(
    rows.map(async (row) => {
      const marks = row.match_id === null ? undefined : chapters.get(row.match_id)
      if (row.status !== 'READY' || row.location === null || (row.match_id !== null && unpaid.has(row.match_id))) return toReplay(row, viewer.who, undefined, marks)
      const link = await deps.storage.downloadLink(row.id, row.location, now, linkTtlSeconds(row, deps.settings))
      looks.push({ purpose: 'DOWNLOAD_LINK', courtId: row.court_id, replayServerId: row.replay_server_id, cameraId: row.camera_id, replayId: row.id, start: row.start_at, end: row.end_at })
      return toReplay(row, viewer.who, link, marks)
    })
  )
  await recordFootageAccess(db, viewer, looks, now)
  return replays
}

export async function getReplay(db: Db, id: string, viewer: Viewer, deps: ReplayDeps): Promise<Replay> {
  await failUnansweredReplays(db, deps)
  const [replay] = await presentReplays(db, [await visibleReplay(db, id, viewer.who)], viewer, deps)
  return replay!
}

export async function listReplays(db: Db, query: ReplayListQuery, viewer: Viewer, deps: ReplayDeps) {
  const requester = viewer.who
  await failUnansweredReplays(db, deps)
  const request = pageRequest(query)
  let filtered = db.selectFrom('replays')
  if (isGuest(requester)) {
    if (query.user !== undefined) throw new BadRequestError('user: a guest lists only the replays made on their phone')
    filtered = filtered.where('guest_id', '=', requester.guestId)
  } else if (!isStaff(requester)) {
    if (query.user !== undefined && query.user !== requester.id) throw new BadRequestError('user: a member lists only their own replays')
    // Their own clips, and the angles of the matches they take part in (someone else's booking they were a guest of).
    const matches = await matchIdsOf(db, requester.id)
    filtered = filtered.where((eb) => (matches.length === 0 ? eb('user_id', '=', requester.id) : eb.or([eb('user_id', '=', requester.id), eb('match_id', 'in', matches)])))
  } else if (query.user !== undefined) {
    filtered = filtered.where('user_id', '=', query.user)
  }
  if (query.court !== undefined) filtered = filtered.where('court_id', '=', query.court)
  if (query.status !== undefined) filtered = filtered.where('status', '=', query.status)
  if (query.kind !== undefined) filtered = filtered.where('kind', '=', query.kind)
  const [rows, count] = await Promise.all([
    filtered.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(request.ipp).offset(request.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  const items = await presentReplays(db, rows, viewer, deps)
  return paged(items, Number(count.total), request, PATH, { court: query.court, status: query.status, user: query.user, kind: query.kind })
}

/** Removes a replay: its stored clip first (a clip left behind would outlive its record), then the record. */
export async function deleteReplay(db: Db, id: string, requester: Requester, deps: ReplayDeps): Promise<void> {
  const row = await visibleReplay(db, id, requester)
  if (row.kind === 'MATCH' && (isGuest(requester) || !isStaff(requester))) {
    // One angle of a match is every participant's: not one player's to remove for the others.
    throw new ForbiddenError(`replay ${quote(id)} is an angle of match ${quote(row.match_id!)}, which all its participants see: only staff delete it`)
  }
  if (row.status === 'TAKEN_DOWN') throw new ConflictError(`replay ${quote(id)} was taken down by staff: its record is kept`)
  await removeClip(db, row, deps)
  const deleted = await db.transaction().execute(async (tx) => {
    const deleted = await tx
      .deleteFrom('replays')
      .where('id', '=', row.id)
      .where('status', '!=', 'TAKEN_DOWN')
      .returning(['status', 'location', 'bucket'])
      .executeTakeFirst()
    // Only a replay still being made gives its item back: a delivered one (READY, or EXPIRED since) was
    // paid for, and a FAILED one gave it back when it failed.
    if (deleted && IN_PROGRESS.includes(deleted.status)) await giveBack(tx, row, deps)
    return deleted
  })
  // Its box reported it READY after it was read above: that clip goes too, or no row would name it.
  if (deleted && deleted.location !== row.location) await removeClip(db, { ...row, ...deleted }, deps)
}

/**
 * Takes a replay down (staff, admins, or the command line when `by` is null) and its footage with it:
 * its minutes of its court are taken down as a court's takedown does (takeDownFootage: every other
 * replay of them, new requests, the boxes' recordings), in one transaction; a second takedown finds
 * it done: 409. A replay TAKEN_DOWN whose clip the bucket would not delete then is the retry: only its
 * clip is deleted again.
 */
export async function takeDownReplay(db: Db, id: string, by: Actor | null, reason: string, deps: ReplayDeps): Promise<Replay> {
  const row = await db.selectFrom('replays').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw new NotFoundError(`no replay ${quote(id)}`)
  if (row.status === 'TAKEN_DOWN') {
    if (row.location === null) throw new ConflictError(`replay ${quote(id)} was taken down already, on ${row.taken_down_at}`)
    await removeClip(db, row, deps)
    await db.updateTable('replays').set({ location: null }).where('id', '=', row.id).where('location', '=', row.location).execute()
  } else {
    await takeDownFootage(db, { courtId: row.court_id, start: new Date(row.start_at), end: new Date(row.end_at), reason, replayId: id }, by, deps)
  }
  const after = await db.selectFrom('replays').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  return toReplay(after, by ?? null)
}

