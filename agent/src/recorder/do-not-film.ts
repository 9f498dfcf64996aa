// Which cameras record now, given the courts the server said are not to be filmed ("do not film"
// intervals in the status answer) and the box's clock. Pure: the agent applies what it answers and
// asks again at nextChangeAt.
import type { Camera, DoNotFilm } from '@club/contract'

export interface FilmingPlan {
  /** The configuration's cameras, those not to record now marked isEnabled: false (still known for exports of earlier footage). */
  cameras: Camera[]
  /** Enabled cameras held off now because they film a court in an interval. */
  paused: string[]
  /** The next start or end of an interval after `now`: when to decide again; null when none is to come. */
  nextChangeAt: Date | null
}

/**
 * A camera films every court of its courtIds, so it stops when any of them is in an interval (the
 * interval includes its start, not its end). Intervals whose dates do not parse hold nothing off.
 */
export function camerasToRecord(cameras: readonly Camera[], doNotFilm: readonly DoNotFilm[], now: Date): FilmingPlan {
  const at = now.getTime()
  const intervals = doNotFilm.map((i) => ({ court: i.court.id, start: Date.parse(i.start), end: Date.parse(i.end) }))
  const quiet = new Set(intervals.filter((i) => i.start <= at && at < i.end).map((i) => i.court))
  const paused = cameras.filter((c) => c.isEnabled !== false && (c.courtIds ?? []).some((id) => quiet.has(id))).map((c) => c.id)
  const upcoming = intervals.flatMap((i) => [i.start, i.end]).filter((t) => t > at)
  return {
    cameras: cameras.map((c) => (paused.includes(c.id) ? { ...c, isEnabled: false } : c)),
    paused,
    nextChangeAt: upcoming.length > 0 ? new Date(Math.min(...upcoming)) : null
  }
}
