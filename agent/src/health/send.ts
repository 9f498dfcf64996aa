// When a poll carries the box's health: a poll of a box that is fine carries none, so the server
// answers it from its cache; what an operator must learn soon (a camera's state or problem, a camera
// added or removed, the disk filling) goes with the next poll.
import type { BoxHealthReport } from '@club/contract'

/** At most this long between reports, so the server's numbers (disk, memory, uptime) stay fresh. */
export const HEALTH_HEARTBEAT_MS = 5 * 60_000
/** Free space moving by more than this share of the disk is news. */
export const DISK_CHANGE_SHARE = 0.01

/** The last report the server received (its poll was answered) and when, by the box's clock. */
export interface SentHealth {
  report: BoxHealthReport
  at: Date
}

/**
 * Whether the poll at `now` carries `current`: the first after the agent starts (nothing sent yet),
 * a camera's state or problem changed, a camera came or went or finished its first segment, free space moved by more than 1% of
 * the disk, or the heartbeat is due (also when the clock went back). A report whose poll failed was
 * never `previous`, so it is sent again with the next poll.
 */
export function healthToSend(previous: SentHealth | undefined, current: BoxHealthReport, now: Date): boolean {
  if (!previous) return true
  const elapsed = now.getTime() - previous.at.getTime()
  if (elapsed >= HEALTH_HEARTBEAT_MS || elapsed < 0) return true
  const before = previous.report.cameras
  if (before.length !== current.cameras.length) return true
  for (const [i, camera] of current.cameras.entries()) {
    const then = before[i]!
    if (then.id !== camera.id || then.state !== camera.state || then.problem !== camera.problem) return true
    // Its first segment: "recording, nothing finished yet" would otherwise stand until the heartbeat.
    if ((then.lastSegmentAt === null) !== (camera.lastSegmentAt === null)) return true
  }
  const total = Math.max(current.disk.totalBytes, previous.report.disk.totalBytes)
  return Math.abs(current.disk.freeBytes - previous.report.disk.freeBytes) > total * DISK_CHANGE_SHARE
}
