// Replays: a player asks for the last seconds of a court; the box whose camera films it cuts the clip,
// uploads it and reports its progress; the player downloads it through a short-lived link. Rules and
// SQL live here; the routes map HTTP to these functions.
import { randomUUID } from 'node:crypto'
import { replayDeviceRoutes } from '@club/contract'
import type {
  EventType,
  DeviceReplay,
  DeviceReplayCollection,
  DeviceReplayStatusChange,
  Replay,
  ReplayListQuery,
  ReplayRequest,
  ReplayServerConfig,
  ReplayStatus
} from '@club/contract'
import { isStaff, type Actor } from '../actor.js'
import type { Clock } from '../clock.js'
import type { Db, DbOrTx } from '../db/database.js'
import { rowLocked } from '../db/sql.js'
import type { ReplaysTable } from '../db/schema.js'
import { BadGatewayError, BadRequestError, ConflictError, ForbiddenError, HttpError, NotFoundError, PaymentRequiredError, quote } from '../errors.js'
import { recordEvent } from '../events/outbox.js'
import { recordFootageAccess, type FootageLook, type Viewer } from '../footage-access/service.js'
import { refuseDoNotFilm } from '../do-not-film/service.js'
import { redeemFromAnyIn, returnUndeliveredIn, type RedemptionDeps } from '../packages/redemptions.js'
import { collection, paged, pageRequest } from '../paging.js'
import { parseConfig } from '../replay-servers/service.js'
import { BucketError, BucketObjectMissingError, checkLocation } from '@club/storage'
import type { ReplayStorage } from './storage.js'

export interface ReplaySettings {
  defaultSeconds: number
  maxSeconds: number
  /** How far back a member's or guest's replay may end (REPLAY_MAX_AGE_SECONDS). */
  maxAgeSeconds: number
  urlTtlSeconds: number
  requestTimeoutSeconds: number
  requirePackage: boolean
}

export interface ReplayDeps {
  clock: Clock
  settings: ReplaySettings
  redemption: RedemptionDeps
  storage: ReplayStorage
}

/**
 * Who asks: a signed-in user (an Actor), or a guest of a court page (REPLAYS_GUEST), who sees only the
 * replays made with their token and pays with no package item.
 */
export type Requester = Viewer['who']

const isGuest = (requester: Requester): requester is { guestId: string } => 'guestId' in requester

const PATH = '/apis/v2/replays'
/** Statuses a box still has work to do in. */
const IN_PROGRESS: ReplayStatus[] = ['REQUESTED', 'EXPORTING', 'UPLOADING']
const FINAL: ReplayStatus[] = ['READY', 'FAILED', 'EXPIRED', 'TAKEN_DOWN']

/**
 * What a replay's takedown shows: when, to everyone who sees the replay; who and why only to staff
 * (the reason may be about someone else in the picture, and names the member of staff).
 */
function takedownOf(row: ReplaysTable, requester: Requester | null): Replay['takedown'] {
  if (row.taken_down_at === null) return undefined
  if (requester === null || isGuest(requester) || !isStaff(requester)) return { date: row.taken_down_at }
  return { date: row.taken_down_at, by: row.taken_down_by === null ? null : { id: row.taken_down_by }, reason: row.taken_down_reason ?? '' }
}

/**
 * The one row → API shape mapping; the download link is added by the caller when READY. `requester`
 * null: the command line, which sees what staff see.
 */
function toReplay(row: ReplaysTable, requester: Requester | null, link?: { url: string; expiresAt: Date }): Replay {
  const takedown = takedownOf(row, requester)
  return {
    id: row.id,
    status: row.status,
    ...(row.reason !== null ? { reason: row.reason } : {}),
    user: row.user_id === null ? null : { id: row.user_id },
    court: { id: row.court_id },
    camera: { id: row.camera_id },
    start: row.start_at,
    end: row.end_at,
    durationSeconds: row.duration_seconds,
    sizeBytes: row.size_bytes,
    ...(link ? { downloadUrl: link.url, downloadUrlExpiresAt: link.expiresAt.toISOString() } : {}),
    ...(takedown ? { takedown } : {}),
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: `${PATH}/${row.id}` } }
  }
}

/**
 * A replay event with the replay as GET shows it to staff, written in the change's transaction. No
 * download link: a link is signed for one viewer and handing it out is a look at the footage.
 */
async function recordReplayEvent(tx: DbOrTx, id: string, type: Extract<EventType, `replay.${string}`>, now: Date): Promise<void> {
  const row = await tx.selectFrom('replays').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  await recordEvent(tx, { type, resourceId: id, data: toReplay(row, null) }, now)
}

/** An approved box of the court's area with its configuration. */
interface CandidateBox {
  id: string
  config: ReplayServerConfig
}

/**
 * The box and camera a replay of `courtId` is cut from: the named camera when it films the court,
 * else the first enabled camera that does. Null names what is missing.
 */
export function chooseCamera(
  boxes: readonly CandidateBox[],
  courtId: string,
  cameraId: string | undefined
): { replayServerId: string; cameraId: string } | { missing: string } {
  const filming = boxes.flatMap((box) =>
    box.config.cameras.filter((c) => c.isEnabled !== false && (c.courtIds ?? []).includes(courtId)).map((c) => ({ replayServerId: box.id, cameraId: c.id }))
  )
  if (cameraId !== undefined) {
    return filming.find((c) => c.cameraId === cameraId) ?? { missing: `camera ${quote(cameraId)} does not film court ${quote(courtId)}` }
  }
  return filming[0] ?? { missing: `no camera films court ${quote(courtId)}: name it in a camera's courtIds` }
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

/** Whether a box may move a replay from `current` to `next`: only forward, never out of a final status. */
export function transitionError(current: ReplayStatus, next: DeviceReplayStatusChange['status']): string | null {
  if (FINAL.includes(current)) return `the replay is ${current} already`
  // A box restarted mid-way begins again: EXPORTING after UPLOADING is allowed, as is repeating one.
  if (current === 'REQUESTED' && next === 'UPLOADING') return 'a replay is exported before it is uploaded'
  return null
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
  const boxes = await db
    .selectFrom('replay_servers')
    .select(['id', 'config'])
    .where('area_id', '=', court.area_id)
    .where('status', '=', 'APPROVED')
    .where('config', 'is not', null)
    .orderBy('created_at')
    .execute()
  const candidates = boxes.map((b) => ({ id: b.id, config: parseConfig(b.config)! }))
  const choice = chooseCamera(candidates, court.id, body.cameraId)
  if ('missing' in choice) throw new ConflictError(choice.missing)
  const filmed = candidates.find((b) => b.id === choice.replayServerId)!.config.cameras.find((c) => c.id === choice.cameraId)!.courtIds!
  await refuseDoNotFilm(db, filmed, start, end)

  const id = randomUUID()
  // The item that pays for it and the replay are written together: neither can exist without the other.
  // The only rule inside is the redemption's, kept by its package rows' locks (redemptions.ts).
  return rowLocked(db, async (tx) => {
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
      taken_down_reason: null
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

/** Gives back the package item an unfinished replay was paid with, in the transaction that ends it. */
async function giveBack(tx: DbOrTx, row: Pick<ReplaysTable, 'user_id' | 'package_id' | 'redemption_id'>, deps: ReplayDeps): Promise<void> {
  if (row.package_id === null || row.redemption_id === null || row.user_id === null) return
  // As the holder: the package is theirs, so it is visible to them.
  await returnUndeliveredIn(tx, row.package_id, row.redemption_id, { id: row.user_id, role: 'member' }, deps.redemption.clock)
}

/**
 * Fails the replays no box has started within REPLAY_REQUEST_TIMEOUT_SECONDS (box_unreachable) and
 * gives their items back. Run before every read and by a timer; each row changes once (the update
 * is conditional on its status), whichever process gets there first.
 */
export async function failUnansweredReplays(db: Db, deps: ReplayDeps): Promise<number> {
  const now = deps.clock.now()
  const before = new Date(now.getTime() - deps.settings.requestTimeoutSeconds * 1000).toISOString()
  const stale = await db
    .selectFrom('replays')
    .select(['id', 'user_id', 'package_id', 'redemption_id'])
    .where('status', '=', 'REQUESTED')
    .where('created_at', '<', before)
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

async function visibleReplay(db: DbOrTx, id: string, requester: Requester): Promise<ReplaysTable> {
  const row = await db.selectFrom('replays').selectAll().where('id', '=', id).executeTakeFirst()
  const visible = row && (isGuest(requester) ? row.guest_id === requester.guestId : row.user_id === requester.id || isStaff(requester))
  // Someone else's replay is "not found", not "forbidden": its existence is not theirs to learn.
  if (!visible) throw new NotFoundError(`no replay ${quote(id)}`)
  return row
}

/** A replay just asked for, as the requester sees it: not READY, so no link is issued. */
export function presentNewReplay(row: ReplaysTable, requester: Requester): Replay {
  return toReplay(row, requester)
}

/**
 * Replays as `viewer` sees them: a READY one with a fresh download link, and each link issued is a
 * look at footage, written to the log.
 */
async function presentReplays(db: Db, rows: readonly ReplaysTable[], viewer: Viewer, deps: ReplayDeps): Promise<Replay[]> {
  const now = deps.clock.now()
  const looks: FootageLook[] = []
  const replays = await Promise.all(
    rows.map(async (row) => {
      if (row.status !== 'READY' || row.location === null) return toReplay(row, viewer.who)
      const link = await deps.storage.downloadLink(row.id, row.location, now, deps.settings.urlTtlSeconds)
      looks.push({ purpose: 'DOWNLOAD_LINK', courtId: row.court_id, replayServerId: row.replay_server_id, cameraId: row.camera_id, replayId: row.id, start: row.start_at, end: row.end_at })
      return toReplay(row, viewer.who, link)
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
    filtered = filtered.where('user_id', '=', requester.id)
  } else if (query.user !== undefined) {
    filtered = filtered.where('user_id', '=', query.user)
  }
  if (query.court !== undefined) filtered = filtered.where('court_id', '=', query.court)
  if (query.status !== undefined) filtered = filtered.where('status', '=', query.status)
  const [rows, count] = await Promise.all([
    filtered.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(request.ipp).offset(request.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  const items = await presentReplays(db, rows, viewer, deps)
  return paged(items, Number(count.total), request, PATH, { court: query.court, status: query.status, user: query.user })
}

/**
 * The bucket a replay's clip was stored in: as recorded when it was reported READY, or (a replay made
 * READY before migration 0023) its box's bucket now; null when neither is known.
 */
async function clipBucket(db: DbOrTx, row: Pick<ReplaysTable, 'bucket' | 'replay_server_id'>): Promise<string | null> {
  if (row.bucket !== null || row.replay_server_id === null) return row.bucket
  const box = await db.selectFrom('replay_servers').select('config').where('id', '=', row.replay_server_id).executeTakeFirst()
  return parseConfig(box?.config ?? null)?.cloudStorageBucket ?? null
}

/** Deletes a replay's stored clip now, or a 502 that says the bucket would not (nothing else changed). */
async function removeClip(db: DbOrTx, row: Pick<ReplaysTable, 'id' | 'location' | 'bucket' | 'replay_server_id'>, deps: ReplayDeps): Promise<void> {
  if (row.location === null) return
  try {
    await deps.storage.remove(row.location, await clipBucket(db, row))
  } catch (err) {
    // The bucket's own words may name its credentials' account; only what kind of failure it was.
    const why = err instanceof BucketError ? err.message : (err as Error).name
    throw new BadGatewayError(`the clip of replay ${quote(row.id)} could not be deleted from its bucket now (${why}): try again`)
  }
}

/** Removes a replay: its stored clip first (a clip left behind would outlive its record), then the record. */
export async function deleteReplay(db: Db, id: string, requester: Requester, deps: ReplayDeps): Promise<void> {
  const row = await visibleReplay(db, id, requester)
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
 * Takes a replay down (staff, admins, or the command line when `by` is null): the row becomes
 * TAKEN_DOWN with who, when and why in one conditional update (a second takedown, or one racing it,
 * finds it done: 409), then its clip leaves the bucket. The status goes first so that no link is
 * given out from then on; a clip the bucket would not delete keeps its location for the next try.
 */
export async function takeDownReplay(db: Db, id: string, by: Actor | null, reason: string, deps: ReplayDeps): Promise<Replay> {
  const now = deps.clock.now().toISOString()
  const row = await db.transaction().execute(async (tx) => {
    const row = await tx.selectFrom('replays').selectAll().where('id', '=', id).executeTakeFirst()
    if (!row) throw new NotFoundError(`no replay ${quote(id)}`)
    // Taken down already, its clip gone: nothing to do. With its clip still there, this is the retry.
    if (row.status === 'TAKEN_DOWN') {
      if (row.location === null) throw new ConflictError(`replay ${quote(id)} was taken down already, on ${row.taken_down_at}`)
      return row
    }
    const set = { status: 'TAKEN_DOWN' as const, taken_down_at: now, taken_down_by: by?.id ?? null, taken_down_reason: reason.trim(), updated_at: now }
    const done = await tx.updateTable('replays').set(set).where('id', '=', row.id).where('status', '=', row.status).executeTakeFirst()
    if (Number(done.numUpdatedRows) !== 1) throw new ConflictError(`replay ${quote(id)} changed meanwhile: ask again`)
    // A replay the member never received gives its item back, as a deleted one does.
    if (IN_PROGRESS.includes(row.status)) await giveBack(tx, row, deps)
    return { ...row, ...set }
  })
  await removeClip(db, row, deps)
  await db.updateTable('replays').set({ location: null }).where('id', '=', row.id).where('location', '=', row.location).execute()
  return toReplay({ ...row, location: null }, by ?? null)
}

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

function toDeviceReplay(row: Pick<ReplaysTable, 'id' | 'status' | 'camera_id' | 'start_at' | 'end_at'>): DeviceReplay {
  return { id: row.id, status: row.status, cameraId: row.camera_id, start: row.start_at, end: row.end_at }
}

/** What a box must still cut or upload, oldest first. */
export async function listDeviceReplays(db: Db, replayServerId: string, deps: ReplayDeps): Promise<DeviceReplayCollection> {
  await failUnansweredReplays(db, deps)
  const rows = await db
    .selectFrom('replays')
    .select(['id', 'status', 'camera_id', 'start_at', 'end_at'])
    .where('replay_server_id', '=', replayServerId)
    .where('status', 'in', IN_PROGRESS)
    .orderBy('created_at')
    .orderBy('id')
    .execute()
  return collection(rows.map(toDeviceReplay), replayDeviceRoutes.list.url)
}

/**
 * Refuses, as a 400 naming why, a READY location outside the box's bucket: by its text for s3:// and
 * gs://, by where it really is for file:// (a symbolic link in the folder may point anywhere).
 */
async function checkReadyLocation(db: DbOrTx, replayServerId: string, location: string): Promise<string> {
  const box = await db.selectFrom('replay_servers').select('config').where('id', '=', replayServerId).executeTakeFirstOrThrow()
  const bucket = parseConfig(box.config)?.cloudStorageBucket
  if (bucket === undefined) throw new BadRequestError(`body.location is not in the box's cloudStorageBucket: it has none`)
  try {
    await checkLocation(bucket, location)
  } catch (err) {
    if (err instanceof BucketError) throw new BadRequestError(`body.location is not in the box's cloudStorageBucket: ${err.message}`)
    throw err
  }
  return bucket
}

/**
 * A clip a box stored for a replay its player deleted meanwhile (DELETE while UPLOADING): no row names
 * it any more, so neither a takedown nor replays/cleanup would ever delete it; it goes now. Only a
 * clip in the box's bucket (checked already) named after the replay (`<camera>/<id>.mp4`, as boxes
 * store them) of an id no replay has, so a box never makes the server delete anything else.
 */
async function removeOrphanClip(db: Db, id: string, location: string, bucket: string, deps: ReplayDeps): Promise<void> {
  let name: string | undefined
  try {
    name = decodeURIComponent(new URL(location).pathname).split('/').pop()
  } catch {
    return
  }
  if (name !== `${id}.mp4`) return
  if (await db.selectFrom('replays').select('id').where('id', '=', id).executeTakeFirst()) return
  await removeClip(db, { id, location, bucket, replay_server_id: null }, deps)
}

/** A box's report of a replay's progress. A failure gives the package item back. */
export async function setDeviceReplayStatus(db: Db, replayServerId: string, id: string, change: DeviceReplayStatusChange, deps: ReplayDeps): Promise<DeviceReplay> {
  const now = deps.clock.now().toISOString()
  // The server signs links to, serves and deletes whatever is here: only what lies in the box's own
  // bucket once decoded (`%2e%2e` is `..`) and resolved, checked before the transaction (file system work).
  const bucket = change.status === 'READY' ? await checkReadyLocation(db, replayServerId, change.location) : null
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
  return toDeviceReplay(row.row)
}

/**
 * The replays/cleanup job's work (the webhooks issue wires it): every replay older than
 * `retentionDays` loses its stored clip and becomes EXPIRED, and a taken-down replay's clip still
 * stored is deleted. A clip that cannot be deleted now keeps its replay as it is, for the next run.
 * Answers how many expired.
 */
export async function deleteExpiredReplays(db: Db, storage: Pick<ReplayStorage, 'remove'>, now: Date, retentionDays: number): Promise<number> {
  const before = new Date(now.getTime() - retentionDays * 86_400_000).toISOString()
  const rows = await db
    .selectFrom('replays')
    .select(['id', 'location', 'bucket', 'replay_server_id'])
    // A taken-down replay stays as it is: its record is what the takedown keeps.
    .where('status', 'not in', ['EXPIRED', 'TAKEN_DOWN'])
    .where('created_at', '<', before)
    .orderBy('created_at')
    .execute()
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
