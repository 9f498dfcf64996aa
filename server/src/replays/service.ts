// Replays: a player asks for the last seconds of a court; the box whose camera films it cuts the clip,
// uploads it and reports its progress; the player downloads it through a short-lived link. Rules and
// SQL live here; the routes map HTTP to these functions.
import { randomUUID } from 'node:crypto'
import type {
  DeviceReplay,
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
import type { ReplaysTable } from '../db/schema.js'
import { BadRequestError, ConflictError, HttpError, NotFoundError, PaymentRequiredError, quote } from '../errors.js'
import { cancelRedemptionIn, redeemFromAnyIn, type RedemptionDeps } from '../packages/redemptions.js'
import { paged, pageRequest } from '../paging.js'
import { parseConfig } from '../replay-servers/service.js'
import { locationInBucket } from '@club/storage'
import type { ReplayStorage } from './storage.js'

export interface ReplaySettings {
  defaultSeconds: number
  maxSeconds: number
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
export type Requester = Actor | { guestId: string }

const isGuest = (requester: Requester): requester is { guestId: string } => 'guestId' in requester

const PATH = '/apis/v2/replays'
/** Statuses a box still has work to do in. */
const IN_PROGRESS: ReplayStatus[] = ['REQUESTED', 'EXPORTING', 'UPLOADING']
const FINAL: ReplayStatus[] = ['READY', 'FAILED', 'EXPIRED']

/** The one row → API shape mapping; the download link is added by the caller when READY. */
function toReplay(row: ReplaysTable, link?: { url: string; expiresAt: Date }): Replay {
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
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: `${PATH}/${row.id}` } }
  }
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

/** Whether a box may move a replay from `current` to `next`: only forward, never out of a final status. */
export function transitionError(current: ReplayStatus, next: DeviceReplayStatusChange['status']): string | null {
  if (FINAL.includes(current)) return `the replay is ${current} already`
  // A box restarted mid-way begins again: EXPORTING after UPLOADING is allowed, as is repeating one.
  if (current === 'REQUESTED' && next === 'UPLOADING') return 'a replay is exported before it is uploaded'
  return null
}

export async function createReplay(db: Db, body: ReplayRequest, requester: Requester, deps: ReplayDeps): Promise<ReplaysTable> {
  const now = deps.clock.now()
  const { start, end } = replayInterval(body, now, deps.settings)
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
  const choice = chooseCamera(
    boxes.map((b) => ({ id: b.id, config: parseConfig(b.config)! })),
    court.id,
    body.cameraId
  )
  if ('missing' in choice) throw new ConflictError(choice.missing)

  const id = randomUUID()
  // The item that pays for it and the replay are written together: neither can exist without the other.
  return db.transaction().execute(async (tx) => {
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
      updated_at: now.toISOString()
    }
    await tx.insertInto('replays').values(row).execute()
    return row
  })
}

/** Gives back the package item an unfinished replay was paid with, in the transaction that ends it. */
async function giveBack(tx: DbOrTx, row: Pick<ReplaysTable, 'user_id' | 'package_id' | 'redemption_id'>, deps: ReplayDeps): Promise<void> {
  if (row.package_id === null || row.redemption_id === null || row.user_id === null) return
  // As the holder: the package is theirs, so it is visible to them.
  await cancelRedemptionIn(tx, row.package_id, row.redemption_id, { id: row.user_id, role: 'member' }, deps.redemption)
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

/** The replay as its owner sees it: with a fresh download link when READY. */
export async function presentReplay(row: ReplaysTable, deps: ReplayDeps): Promise<Replay> {
  if (row.status !== 'READY' || row.location === null) return toReplay(row)
  return toReplay(row, await deps.storage.downloadLink(row.id, row.location, deps.clock.now(), deps.settings.urlTtlSeconds))
}

export async function getReplay(db: Db, id: string, requester: Requester, deps: ReplayDeps): Promise<Replay> {
  await failUnansweredReplays(db, deps)
  return presentReplay(await visibleReplay(db, id, requester), deps)
}

export async function listReplays(db: Db, query: ReplayListQuery, requester: Requester, deps: ReplayDeps) {
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
  const items = await Promise.all(rows.map((row) => presentReplay(row, deps)))
  return paged(items, Number(count.total), request, PATH, { court: query.court, status: query.status, user: query.user })
}

/** Removes a replay: its stored clip first (a clip left behind would outlive its record), then the record. */
export async function deleteReplay(db: Db, id: string, requester: Requester, deps: ReplayDeps): Promise<void> {
  const row = await visibleReplay(db, id, requester)
  if (row.location !== null) await deps.storage.remove(row.location)
  await db.transaction().execute(async (tx) => {
    const deleted = await tx.deleteFrom('replays').where('id', '=', row.id).returning('status').executeTakeFirst()
    // Only a replay still being made gives its item back: a delivered one (READY, or EXPIRED since) was
    // paid for, and a FAILED one gave it back when it failed.
    if (deleted && IN_PROGRESS.includes(deleted.status)) await giveBack(tx, row, deps)
  })
}

/** The file of a READY file:// replay, when the link's signature and expiry hold. */
export async function replayDownloadFile(db: Db, id: string, expires: number, signature: string, deps: ReplayDeps): Promise<string> {
  if (!deps.storage.checkFileLink(id, expires, signature, deps.clock.now())) {
    throw new HttpError(403, 'this download link is not valid or has expired: ask for the replay again to get a fresh one')
  }
  const row = await db.selectFrom('replays').select(['status', 'location']).where('id', '=', id).executeTakeFirst()
  if (!row || row.status !== 'READY' || !row.location?.startsWith('file://')) throw new NotFoundError(`no stored clip of replay ${quote(id)}`)
  return deps.storage.filePath(row.location)
}

function toDeviceReplay(row: Pick<ReplaysTable, 'id' | 'status' | 'camera_id' | 'start_at' | 'end_at'>): DeviceReplay {
  return { id: row.id, status: row.status, cameraId: row.camera_id, start: row.start_at, end: row.end_at }
}

/** What a box must still cut or upload, oldest first. */
export async function listDeviceReplays(db: Db, replayServerId: string, deps: ReplayDeps): Promise<DeviceReplay[]> {
  await failUnansweredReplays(db, deps)
  const rows = await db
    .selectFrom('replays')
    .select(['id', 'status', 'camera_id', 'start_at', 'end_at'])
    .where('replay_server_id', '=', replayServerId)
    .where('status', 'in', IN_PROGRESS)
    .orderBy('created_at')
    .orderBy('id')
    .execute()
  return rows.map(toDeviceReplay)
}

/** A box's report of a replay's progress. A failure gives the package item back. */
export async function setDeviceReplayStatus(db: Db, replayServerId: string, id: string, change: DeviceReplayStatusChange, deps: ReplayDeps): Promise<DeviceReplay> {
  const now = deps.clock.now().toISOString()
  const row = await db.transaction().execute(async (tx) => {
    const row = await tx.selectFrom('replays').selectAll().where('id', '=', id).where('replay_server_id', '=', replayServerId).executeTakeFirst()
    if (!row) throw new NotFoundError(`this box has no replay ${quote(id)}`)
    const problem = transitionError(row.status, change.status)
    if (problem) throw new ConflictError(`replay ${row.id}: ${problem}`)
    let set: Partial<ReplaysTable> = { status: change.status, updated_at: now }
    if (change.status === 'READY') {
      const box = await tx.selectFrom('replay_servers').select('config').where('id', '=', replayServerId).executeTakeFirstOrThrow()
      const bucket = parseConfig(box.config)?.cloudStorageBucket
      // The server signs links to, serves and deletes whatever is here: only what lies in the box's own
      // bucket once decoded (`%2e%2e` is `..`), and only a location that parses at all.
      if (bucket === undefined || !locationInBucket(bucket, change.location)) throw new BadRequestError(`body.location is not in the box's cloudStorageBucket`)
      set = { ...set, location: change.location, duration_seconds: change.durationSeconds, size_bytes: change.sizeBytes, sha256: change.sha256 }
    }
    if (change.status === 'FAILED') set = { ...set, reason: change.reason }
    // Conditional on the status read: a cancelled redemption gives its replay up at the same moment
    // from another process (packages/redemptions.ts), and the item and the replay never both stay.
    const written = await tx.updateTable('replays').set(set).where('id', '=', row.id).where('status', '=', row.status).executeTakeFirst()
    if (Number(written.numUpdatedRows) !== 1) throw new ConflictError(`replay ${row.id} changed meanwhile; ask for its status again`)
    if (change.status === 'FAILED') await giveBack(tx, row, deps)
    return { ...row, ...set } as ReplaysTable
  })
  return toDeviceReplay(row)
}

/**
 * The replays/cleanup job's work (the webhooks issue wires it): every replay older than
 * `retentionDays` loses its stored clip and becomes EXPIRED. A clip that cannot be deleted now keeps
 * its replay as it is, for the next run. Answers how many expired.
 */
export async function deleteExpiredReplays(db: Db, storage: Pick<ReplayStorage, 'remove'>, now: Date, retentionDays: number): Promise<number> {
  const before = new Date(now.getTime() - retentionDays * 86_400_000).toISOString()
  const rows = await db
    .selectFrom('replays')
    .select(['id', 'location'])
    .where('status', '!=', 'EXPIRED')
    .where('created_at', '<', before)
    .orderBy('created_at')
    .execute()
  let expired = 0
  for (const row of rows) {
    try {
      if (row.location !== null) await storage.remove(row.location)
    } catch {
      continue
    }
    await db.updateTable('replays').set({ status: 'EXPIRED', location: null, updated_at: now.toISOString() }).where('id', '=', row.id).execute()
    expired++
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
