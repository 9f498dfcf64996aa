// A box's update: which version it is offered, where it fetches it, and when it may install it.
// The offer is made per poll (it depends on the version the poll reports and on the clock), only for
// the few boxes with an update pending, so the answers kept in memory stay those of idle boxes.
import { DateTime } from 'luxon'
import type { Interval, PendingUpdate } from '@club/contract'
import { findRelease, toReleaseDownload } from '../agent-releases/service.js'
import type { DbOrTx } from '../db/database.js'
import { parseConfig } from './service.js'
import { type PollRow } from './polls.js'

/** How far ahead a box is told of events on its courts. */
const BUSY_HORIZON_MS = 24 * 3_600_000

/**
 * The version an approved box should move to, or undefined: its target while the version it runs
 * differs, unless that very version already came back ROLLED_BACK or FAILED from it (offered again
 * only once an admin sets a target anew).
 */
export function updateTargetOf(
  row: Pick<PollRow, 'status' | 'area_id' | 'target_version' | 'version' | 'update_state' | 'update_version'>,
  reportedVersion: string | undefined
): string | undefined {
  if (row.status !== 'APPROVED' || row.area_id === null || row.target_version === null) return undefined
  if (row.target_version === (reportedVersion ?? row.version)) return undefined
  const gaveUp = row.update_state === 'ROLLED_BACK' || row.update_state === 'FAILED'
  if (gaveUp && row.update_version === row.target_version) return undefined
  return row.target_version
}

/**
 * The update window's current or next opening as instants: `02:00-05:00` at 03:00 is today's, at
 * 06:00 tomorrow's. A window over midnight (`22:00-04:00`) ends the next day.
 */
export function windowOpening(window: string, timezone: string, now: Date): Interval {
  const [from, to] = window.split('-') as [string, string]
  const [fromHour, fromMinute] = from.split(':').map(Number) as [number, number]
  const [toHour, toMinute] = to.split(':').map(Number) as [number, number]
  const local = DateTime.fromJSDate(now, { zone: timezone })
  const opening = (day: DateTime) => {
    const start = day.set({ hour: fromHour, minute: fromMinute, second: 0, millisecond: 0 })
    let end = day.set({ hour: toHour, minute: toMinute, second: 0, millisecond: 0 })
    if (end <= start) end = end.plus({ days: 1 })
    return { start, end }
  }
  for (const day of [local.minus({ days: 1 }), local, local.plus({ days: 1 })]) {
    const { start, end } = opening(day)
    if (end.toMillis() > now.getTime()) return { start: start.toUTC().toISO()!, end: end.toUTC().toISO()! }
  }
  // Unreachable: tomorrow's opening always ends after now.
  throw new Error(`no opening of the update window ${window}`)
}

/** The courts a box films, as its configuration names them. */
function courtsOf(row: Pick<PollRow, 'config'>): string[] {
  return [...new Set((parseConfig(row.config)?.cameras ?? []).flatMap((camera) => camera.courtIds ?? []))]
}

/**
 * Events under way or to come (within a day) on the box's courts: an event on one of its courts, on
 * the pod of one of them, or on its whole area. Soonest first, at most ten.
 */
export async function busyIntervals(db: DbOrTx, row: Pick<PollRow, 'area_id' | 'config'>, now: Date): Promise<Interval[]> {
  if (row.area_id === null) return []
  const courts = courtsOf(row)
  const areaId = row.area_id
  const rows = await db
    .selectFrom('events')
    .select(['start_at', 'end_at'])
    .where('end_at', '>', now.toISOString())
    .where('start_at', '<', new Date(now.getTime() + BUSY_HORIZON_MS).toISOString())
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('event_refs')
          .select('event_refs.event_id')
          .whereRef('event_refs.event_id', '=', 'events.id')
          .where((ref) =>
            ref.or([
              ref.and([ref('event_refs.kind', '=', 'area'), ref('event_refs.ref_id', '=', areaId)]),
              ...(courts.length > 0
                ? [
                    ref.and([ref('event_refs.kind', '=', 'court'), ref('event_refs.ref_id', 'in', courts)]),
                    ref.and([
                      ref('event_refs.kind', '=', 'pod'),
                      ref('event_refs.ref_id', 'in', ref.selectFrom('courts').select('pod_id').where('courts.id', 'in', courts).where('pod_id', 'is not', null))
                    ])
                  ]
                : [])
            ])
          )
      )
    )
    .orderBy('start_at')
    .limit(10)
    .execute()
  return rows.map((r) => ({ start: r.start_at, end: r.end_at }))
}

/**
 * What the poll answers as pendingUpdate: the target with its package (when the server holds one for
 * the box's architecture), the package of the version it runs now (to put back if the new one does
 * not come up), the events it must not cut, and its update window's opening when one is set.
 */
export async function pendingUpdateFor(
  db: DbOrTx,
  row: PollRow,
  target: string,
  reported: { version?: string; architecture?: string },
  now: Date,
  clubTimezone: string
): Promise<PendingUpdate> {
  const architecture = reported.architecture ?? row.architecture
  const running = reported.version ?? row.version
  const [release, current, busy, area] = await Promise.all([
    architecture ? findRelease(db, target, architecture) : undefined,
    architecture && running ? findRelease(db, running, architecture) : undefined,
    busyIntervals(db, row, now),
    row.update_window && row.area_id ? db.selectFrom('areas').select('timezone').where('id', '=', row.area_id).executeTakeFirst() : undefined
  ])
  return {
    version: target,
    ...(release ? { release: toReleaseDownload(release) } : {}),
    ...(current ? { rollback: toReleaseDownload(current) } : {}),
    ...(busy.length > 0 ? { busy } : {}),
    ...(row.update_window ? { window: windowOpening(row.update_window, area?.timezone ?? clubTimezone, now) } : {})
  }
}
