// A box's health (issue 48): the report a signed status poll carries (BoxHealthReport), the clock
// offset the server measures from that poll, what is kept of both (migration 0037: the latest report,
// a bounded history of changes of state) and the admin's view of it with its problems. Polls without
// a report write nothing here: a report comes with the box's first poll, with each change of a
// camera's state or problem, and otherwise every few minutes.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import {
  BoxHealthReport,
  CLOCK_SKEW_LIMIT_SECONDS,
  type CameraHealth,
  type HealthProblem,
  type ReplayServerHealth,
  type ReplayServerStatusQuery
} from '@club/contract'
import { type Db, type DbOrTx } from '../db/database.js'
import { castToReal, jsonArrayElements } from '../db/sql.js'
import type { ReplayServerHealthTable } from '../db/schema.js'
import { BadRequestError } from '../errors.js'
import { valueValidator } from '../plugins/validation.js'

const reportShape = valueValidator(BoxHealthReport, 'querystring.health')

/** A poll's `health`, parsed and checked, or a 400 naming the field and what is wrong. */
export function parseHealthReport(text: string): BoxHealthReport {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new BadRequestError(`querystring.health: not JSON (${(err as Error).message})`)
  }
  const report = reportShape(value)
  const ids = new Set<string>()
  for (const camera of report.cameras) {
    if (ids.has(camera.id)) throw new BadRequestError(`querystring.health.cameras: camera ${camera.id} is reported twice`)
    ids.add(camera.id)
  }
  if (report.disk.freeBytes > report.disk.totalBytes) throw new BadRequestError('querystring.health.disk.freeBytes: more than totalBytes')
  return report
}

/**
 * A round trip longer than this makes a poll useless for measuring the clock: half of it is the
 * measure's error, and a box (or a lie) reporting a long one would move the offset by as much.
 * Such a poll keeps the last measure.
 */
export const MAX_ROUND_TRIP_MS = 10_000

/**
 * The box's clock minus the server's (ms), from a signed poll: the box signed `keyTimestamp` (its
 * clock) as it sent the poll, which arrived `receivedAt` (the server's clock) about half a round trip
 * later. The round trip is the box's previous poll's (`roundTripMs`; none: the first poll, taken as
 * 0). Null when the measure is unusable (no timestamp, or a round trip over MAX_ROUND_TRIP_MS).
 */
export function measuredClockOffsetMs(reported: Pick<ReplayServerStatusQuery, 'keyTimestamp' | 'roundTripMs'>, receivedAt: Date): number | null {
  if (reported.keyTimestamp === undefined) return null
  const signedAt = Date.parse(reported.keyTimestamp)
  const roundTrip = reported.roundTripMs ?? 0
  if (Number.isNaN(signedAt) || !(roundTrip >= 0 && roundTrip <= MAX_ROUND_TRIP_MS)) return null
  return signedAt - (receivedAt.getTime() - roundTrip / 2)
}

export const isSkewed = (offsetMs: number | null): boolean => offsetMs !== null && Math.abs(offsetMs) > CLOCK_SKEW_LIMIT_SECONDS * 1000

/** A stored camera: as reported, with since (the server's time its state was first reported). */
export type StoredCamera = CameraHealth

/** Changes of state kept per box: older ones go in the write that adds one. */
export const HEALTH_CHANGES_KEPT = 200

interface Change {
  subject: string
  state: string
  problem: string | null
}

/**
 * What a process last wrote of a box's health: its states (a later report with the same states only
 * updates the figures, in a batch: recordHealthFigures), each camera's since, and when.
 */
export interface WrittenHealth {
  states: string
  since: ReadonlyMap<string, string>
  offsetMs: number | null
  reportedAt: string
}

/** A report's states: each camera's state and problem, the disk's and the clock's. Equal text: nothing to tell, nothing for the history. */
export function healthStates(report: BoxHealthReport, offsetMs: number | null, diskFloorPercent: number): string {
  return JSON.stringify([report.cameras.map((c) => [c.id, c.state, c.problem]), diskLow(report.disk, diskFloorPercent), isSkewed(offsetMs)])
}

/**
 * Writes a report (and the clock offset measured with it; null keeps the last measure) as the box's
 * latest, its changes of state into the bounded history, in one transaction. `since` carries over
 * for each camera, the disk and the clock whose state did not change. Answers what it wrote.
 */
export async function recordHealth(
  db: Db,
  replayServerId: string,
  report: BoxHealthReport,
  offsetMs: number | null,
  now: Date,
  diskFloorPercent: number
): Promise<WrittenHealth> {
  const at = now.toISOString()
  return db.transaction().execute(async (tx) => {
    const before = await tx.selectFrom('replay_server_health').selectAll().where('replay_server_id', '=', replayServerId).executeTakeFirst()
    const previous = new Map((before ? (JSON.parse(before.cameras) as StoredCamera[]) : []).map((c) => [c.id, c]))
    const changes: Change[] = []
    const cameras: StoredCamera[] = report.cameras.map((camera) => {
      const last = previous.get(camera.id)
      if (last?.state !== camera.state) changes.push({ subject: `camera:${camera.id}`, state: camera.state, problem: camera.problem })
      return { ...camera, since: last?.state === camera.state ? last.since : at }
    })
    const offset = offsetMs ?? before?.clock_offset_ms ?? null
    const diskState = diskLow(report.disk, diskFloorPercent) ? 'LOW' : 'OK'
    const clockState = isSkewed(offset) ? 'SKEWED' : 'OK'
    if (diskState !== (before?.disk_state ?? 'OK')) changes.push({ subject: 'disk', state: diskState, problem: null })
    if (clockState !== (before?.clock_state ?? 'OK')) changes.push({ subject: 'clock', state: clockState, problem: null })
    const { cameras: _cameras, ...rest } = report
    const row: ReplayServerHealthTable = {
      replay_server_id: replayServerId,
      reported_at: at,
      report: JSON.stringify(rest),
      cameras: JSON.stringify(cameras),
      failed_cameras: cameras.filter((c) => c.state === 'FAILED').length,
      clock_offset_ms: offset,
      disk_state: diskState,
      disk_since: before?.disk_state === diskState ? before.disk_since : at,
      clock_state: clockState,
      clock_since: before?.clock_state === clockState ? before.clock_since : at
    }
    const { replay_server_id: _id, ...columns } = row
    await tx.insertInto('replay_server_health').values(row).onConflict((oc) => oc.column('replay_server_id').doUpdateSet(columns)).execute()
    await recordChanges(tx, replayServerId, changes, at)
    return { states: healthStates(report, offset, diskFloorPercent), since: new Map(cameras.map((c) => [c.id, c.since])), offsetMs: offset, reportedAt: at }
  })
}

/** A report whose states are those last written (WrittenHealth): only its figures are new. */
export interface HealthFigures {
  replayServerId: string
  report: BoxHealthReport
  offsetMs: number | null
  at: Date
  written: WrittenHealth
}

/**
 * Writes a batch of reports that change no state (the disk's bytes, the last segments, memory,
 * uptime) in one statement, as the sightings are. Each applies only while the stored report is the
 * one this process wrote last (another process may have written a change since: then this one is
 * dropped, and the box's next report goes the whole way). Answers the boxes written.
 */
export async function recordHealthFigures(db: Db, batch: readonly HealthFigures[]): Promise<Set<string>> {
  if (batch.length === 0) return new Set()
  const rows = JSON.stringify(
    batch.map(({ replayServerId, report, offsetMs, at, written }) => {
      const { cameras, ...rest } = report
      const stored: StoredCamera[] = cameras.map((c) => ({ ...c, since: written.since.get(c.id) ?? written.reportedAt }))
      return [replayServerId, JSON.stringify(rest), JSON.stringify(stored), at.toISOString(), offsetMs, written.reportedAt]
    })
  )
  const { rows: done } = await sql<{ replay_server_id: string }>`
    update replay_server_health
    set report = s.value ->> 1, cameras = s.value ->> 2, reported_at = s.value ->> 3,
      clock_offset_ms = coalesce(${castToReal(db, sql`s.value ->> 4`)}, replay_server_health.clock_offset_ms)
    from ${jsonArrayElements(db, rows, 's')}
    where replay_server_health.replay_server_id = s.value ->> 0 and replay_server_health.reported_at = s.value ->> 5
    returning replay_server_health.replay_server_id`.execute(db)
  return new Set(done.map((row) => row.replay_server_id))
}

/**
 * A clock offset measured by a poll without a report that moves the clock across
 * CLOCK_SKEW_LIMIT_SECONDS: written at once (the admin's view, the list's filter and the teller read
 * it). A box that has not reported yet has nothing to write it to: its first report carries it.
 */
export async function recordClockOffset(db: Db, replayServerId: string, offsetMs: number, now: Date): Promise<void> {
  const at = now.toISOString()
  const clockState = isSkewed(offsetMs) ? 'SKEWED' : 'OK'
  await db.transaction().execute(async (tx) => {
    const before = await tx.selectFrom('replay_server_health').select(['clock_state']).where('replay_server_id', '=', replayServerId).executeTakeFirst()
    if (!before) return
    const moved = before.clock_state !== clockState
    await tx
      .updateTable('replay_server_health')
      .set({ clock_offset_ms: offsetMs, clock_state: clockState, ...(moved ? { clock_since: at } : {}) })
      .where('replay_server_id', '=', replayServerId)
      .execute()
    if (moved) await recordChanges(tx, replayServerId, [{ subject: 'clock', state: clockState, problem: null }], at)
  })
}

/** Adds changes to a box's history and drops what is beyond HEALTH_CHANGES_KEPT, in the same write. */
async function recordChanges(tx: DbOrTx, replayServerId: string, changes: readonly Change[], at: string): Promise<void> {
  if (changes.length === 0) return
  await tx
    .insertInto('replay_server_health_changes')
    .values(changes.map((change) => ({ id: randomUUID(), replay_server_id: replayServerId, at, ...change })))
    .execute()
  const kept = tx
    .selectFrom('replay_server_health_changes')
    .select('id')
    .where('replay_server_id', '=', replayServerId)
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(HEALTH_CHANGES_KEPT)
  await tx
    .deleteFrom('replay_server_health_changes')
    .where('replay_server_id', '=', replayServerId)
    // Wrapped: MySQL-style "limit in subquery" aside, both databases take a derived table here.
    .where('id', 'not in', tx.selectFrom(kept.as('k')).select('k.id'))
    .execute()
}

/** Under the floor: less than diskFloorPercent of the disk free. */
export function diskLow(disk: { freeBytes: number; totalBytes: number }, diskFloorPercent: number): boolean {
  return disk.totalBytes > 0 && disk.freeBytes * 100 < disk.totalBytes * diskFloorPercent
}

/** The admin's view of a stored report; `online`: the box polled within three intervals. */
export function toHealth(row: ReplayServerHealthTable, online: boolean, approved: boolean): ReplayServerHealth {
  const rest = JSON.parse(row.report) as Omit<BoxHealthReport, 'cameras'>
  const cameras = JSON.parse(row.cameras) as StoredCamera[]
  const problems: HealthProblem[] = []
  if (row.failed_cameras > 0) problems.push('CAMERA_FAILED')
  if (row.disk_state === 'LOW') problems.push('DISK_LOW')
  if (row.clock_state === 'SKEWED') problems.push('CLOCK_SKEWED')
  if (approved && !online) problems.push('OFFLINE')
  return {
    reportedAt: row.reported_at,
    cameras,
    disk: rest.disk,
    clockOffsetSeconds: row.clock_offset_ms === null ? null : Math.round(row.clock_offset_ms) / 1000,
    temperatureCelsius: rest.temperatureCelsius,
    memoryBytes: rest.memoryBytes,
    uptimeSeconds: rest.uptimeSeconds,
    problems
  }
}

/** The latest health rows of these boxes, by box id. */
export async function healthRowsOf(db: DbOrTx, ids: readonly string[]): Promise<Map<string, ReplayServerHealthTable>> {
  if (ids.length === 0) return new Map()
  const rows = await db.selectFrom('replay_server_health').selectAll().where('replay_server_id', 'in', [...ids]).execute()
  return new Map(rows.map((row) => [row.replay_server_id, row]))
}

/**
 * The SQL of "a problem" for the list's health filter and the fleet's withProblems, over
 * replay_servers (approved) left-joined with replay_server_health as h: the same rules as toHealth,
 * never null (a box that never reported has only OFFLINE to be).
 */
export const hasProblem = (onlineSinceIso: string) =>
  sql<boolean>`(coalesce(h.failed_cameras, 0) > 0 or coalesce(h.disk_state, 'OK') = 'LOW' or coalesce(h.clock_state, 'OK') = 'SKEWED' or replay_servers.last_seen_at is null or replay_servers.last_seen_at < ${onlineSinceIso})`
