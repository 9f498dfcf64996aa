// The footage access log: a row for every look at footage of people, written by the code that hands
// the footage out (replays, download links, camera snapshots) in the same transaction where it can be,
// and read only by admins. The replays/cleanup job deletes it after FOOTAGE_LOG_RETENTION_DAYS; it is
// used for nothing else (the rate limits count elsewhere).
import { randomUUID } from 'node:crypto'
import type { FootageAccess, FootageAccessQuery, FootageNotice, FootagePurpose } from '@club/contract'
import type { Actor } from '../actor.js'
import type { Config } from '../config.js'
import type { Db, DbOrTx } from '../db/database.js'
import type { FootageAccessTable } from '../db/schema.js'
import { BadRequestError, quote } from '../errors.js'
import { paged, pageRequest } from '../paging.js'

const PATH = '/apis/v2/admin/footage-access'

/** Who looked, and from where: a user (as their role then) or a court page's guest. */
export interface Viewer {
  who: Actor | { guestId: string }
  address: string | null
}

/** One look: what was seen and why. */
export interface FootageLook {
  purpose: FootagePurpose
  reason?: string | null
  courtId: string | null
  replayServerId: string | null
  cameraId: string
  replayId?: string | null
  start: string
  end: string
}

function toRow(viewer: Viewer, look: FootageLook, at: string): FootageAccessTable {
  const guest = 'guestId' in viewer.who ? viewer.who.guestId : null
  return {
    id: randomUUID(),
    actor: 'guestId' in viewer.who ? 'guest' : viewer.who.role,
    user_id: 'guestId' in viewer.who ? null : viewer.who.id,
    guest_id: guest,
    purpose: look.purpose,
    reason: look.reason ?? null,
    court_id: look.courtId,
    replay_server_id: look.replayServerId,
    camera_id: look.cameraId,
    replay_id: look.replayId ?? null,
    start_at: look.start,
    end_at: look.end,
    address: viewer.address,
    created_at: at
  }
}

/** Writes the looks of one request (in the caller's transaction when it has one). */
export async function recordFootageAccess(db: DbOrTx, viewer: Viewer, looks: readonly FootageLook[], at: Date): Promise<void> {
  if (looks.length === 0) return
  await db.insertInto('footage_access').values(looks.map((look) => toRow(viewer, look, at.toISOString()))).execute()
}

/** A camera snapshot: one look per court the camera films (none named: one look of no court). */
export async function recordSnapshotAccess(db: DbOrTx, viewer: Viewer, camera: { replayServerId: string; cameraId: string; courtIds: readonly string[] }, at: Date): Promise<void> {
  const moment = at.toISOString()
  const courts = camera.courtIds.length > 0 ? camera.courtIds : [null]
  const looks = courts.map((courtId) => ({ purpose: 'SNAPSHOT' as const, courtId, replayServerId: camera.replayServerId, cameraId: camera.cameraId, start: moment, end: moment }))
  await recordFootageAccess(db, viewer, looks, at)
}

function toFootageAccess(row: FootageAccessTable): FootageAccess {
  return {
    id: row.id,
    date: row.created_at,
    actor: row.actor,
    user: row.user_id === null ? null : { id: row.user_id },
    guestSession: row.guest_id === null ? null : { id: row.guest_id },
    purpose: row.purpose,
    accessReason: row.reason,
    court: row.court_id === null ? null : { id: row.court_id },
    replayServer: row.replay_server_id === null ? null : { id: row.replay_server_id },
    camera: { id: row.camera_id },
    replay: row.replay_id === null ? null : { id: row.replay_id },
    start: row.start_at,
    end: row.end_at,
    address: row.address,
    _links: { self: { href: `${PATH}?${new URLSearchParams({ ...(row.court_id ? { court: row.court_id } : {}), from: row.start_at, to: row.end_at })}` } }
  }
}

/** An instant of the query as the stored text compares (ISO 8601 in UTC), or a 400 naming it. */
function instant(value: string | undefined, name: string): string | undefined {
  if (value === undefined) return undefined
  const date = new Date(value)
  if (Number.isNaN(date.getTime())) throw new BadRequestError(`querystring.${name} ${quote(value)} is not a date-time`)
  return date.toISOString()
}

/** The log, newest look first; `from`/`to` select looks whose footage overlaps that interval. */
export async function listFootageAccess(db: Db, query: FootageAccessQuery) {
  const request = pageRequest(query)
  const from = instant(query.from, 'from')
  const to = instant(query.to, 'to')
  if (from !== undefined && to !== undefined && from > to) throw new BadRequestError(`querystring.from ${quote(query.from)} is after querystring.to ${quote(query.to)}`)
  let filtered = db.selectFrom('footage_access')
  if (query.court !== undefined) filtered = filtered.where('court_id', '=', query.court)
  if (query.user !== undefined) filtered = filtered.where('user_id', '=', query.user)
  if (from !== undefined) filtered = filtered.where('end_at', '>=', from)
  if (to !== undefined) filtered = filtered.where('start_at', '<=', to)
  const [rows, count] = await Promise.all([
    filtered.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(request.ipp).offset(request.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  return paged(rows.map(toFootageAccess), Number(count.total), request, PATH, { court: query.court, user: query.user, from: query.from, to: query.to })
}

/** What the court page and the console tell people of the recording, from the settings. */
export function footageNotice(
  config: Pick<Config, 'REPLAY_MAX_AGE_SECONDS' | 'REPLAY_RETENTION_DAYS' | 'FOOTAGE_LOG_RETENTION_DAYS' | 'FOOTAGE_CONTACT'>
): FootageNotice {
  return {
    replayMaxAgeSeconds: config.REPLAY_MAX_AGE_SECONDS,
    replayRetentionDays: config.REPLAY_RETENTION_DAYS,
    footageLogRetentionDays: config.FOOTAGE_LOG_RETENTION_DAYS,
    contact: config.FOOTAGE_CONTACT
  }
}
