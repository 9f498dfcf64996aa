// The box's health report (BoxHealthReport), decided from what the agent already knows: the
// recorder's facts per camera, the configuration, the "do not film" plan, the disk. Pure: the agent
// gathers the facts (health/gather.ts) and the poller sends what healthToSend says.
import type { BoxHealthReport, Camera, CameraHealthReport, DiskHealth } from '@club/contract'
import { HEALTH_REPORT_MAX_LENGTH } from '@club/contract'
import type { RecorderFacts } from '../recorder/supervisor.js'
import { PROBLEM_MAX_LENGTH, summariseFfmpegError, trimTo } from './problem.js'

const HOUR_MS = 3_600_000

/**
 * The longest `health` a poll carries once URL-encoded (JSON's quotes, colons and braces take three
 * characters each): the poll is a GET, and Node's HTTP server refuses a request whose line and headers
 * pass 16 KiB (its default maxHeaderSize) with 431; the rest of a signed poll takes about 1 KiB.
 */
export const HEALTH_QUERY_MAX_LENGTH = 14_000

/**
 * A camera's state for the report:
 * - DISABLED: `isEnabled: false` in the configuration; PAUSED: a "do not film" interval holds it off;
 * - RECORDING: its ffmpeg runs and has written video since it started;
 * - FAILED: its last ffmpeg run ended without recording (it could not open or read the feed, or wrote
 *   nothing for three segment lengths and the watchdog stopped it), and the run after it has written
 *   nothing yet; `problem` says why, from ffmpeg's stderr. It is RECORDING again at the first video
 *   a restarted ffmpeg writes (the supervisor keeps restarting it, every 30 s at most);
 * - STARTING: ffmpeg was started (first start, a configuration change, or a restart after a run that
 *   had recorded) and has written nothing yet.
 */
export function cameraHealth(camera: Camera, paused: boolean, facts: RecorderFacts | undefined, now: number): CameraHealthReport {
  const newest = facts?.finished.at(-1)
  const base = {
    id: camera.id,
    lastSegmentAt: newest ? new Date(newest.mtimeMs).toISOString() : null,
    restarts: facts ? facts.restartTimes.filter((at) => now - at < HOUR_MS).length : 0
  }
  if (camera.isEnabled === false) return { ...base, state: 'DISABLED', problem: null }
  if (paused) return { ...base, state: 'PAUSED', problem: null }
  if (facts?.running && facts.wroteThisRun) return { ...base, state: 'RECORDING', problem: null }
  if (facts && facts.failuresInRow > 0 && facts.lastExit) {
    const { stderr, stalled, code } = facts.lastExit
    const problem = stalled ? 'no video from the camera' : (summariseFfmpegError(stderr, code === 0) ?? 'ffmpeg exited without recording')
    return { ...base, state: 'FAILED', problem }
  }
  return { ...base, state: 'STARTING', problem: null }
}

/** Bytes per hour a camera records at, from its newest finished segments; 0 when it has none. */
export function recordingRate(facts: RecorderFacts | undefined): number {
  const finished = facts?.finished ?? []
  const seconds = finished.reduce((sum, s) => sum + (s.duration ?? 0), 0)
  const bytes = finished.reduce((sum, s) => sum + s.size, 0)
  return seconds > 0 ? (bytes / seconds) * 3600 : 0
}

/**
 * The disk in the report: `hoursKept` is how long the free space and what the recordings take now
 * (cleanup frees it oldest first) hold the recording cameras at `bytesPerHour`; null when nothing records.
 */
export function diskHealth(space: { freeBytes: number; totalBytes: number }, recordingsBytes: number, bytesPerHour: number): DiskHealth {
  const hours = bytesPerHour > 0 ? (space.freeBytes + recordingsBytes) / bytesPerHour : null
  return {
    freeBytes: wholeBytes(space.freeBytes),
    totalBytes: wholeBytes(space.totalBytes),
    recordingsBytes: wholeBytes(recordingsBytes),
    hoursKept: hours === null ? null : Math.min(Math.round(hours * 10) / 10, 1_000_000)
  }
}

function wholeBytes(n: number): number {
  return Number.isFinite(n) ? Math.min(Math.max(Math.round(n), 0), Number.MAX_SAFE_INTEGER) : 0
}

/** The problem lengths tried in turn until the report fits its budget. */
const PROBLEM_BUDGETS = [PROBLEM_MAX_LENGTH, 100, 50, 24, 0]

/**
 * The report as the poll's `health`: JSON within HEALTH_REPORT_MAX_LENGTH and, URL-encoded, within
 * HEALTH_QUERY_MAX_LENGTH. 64 cameras each FAILED with a 200-character problem do not fit, so every
 * problem is shortened alike until it does (to nothing at worst: the state says FAILED anyway);
 * null when even that is too long (64 cameras with ids near 100 characters), and the poll goes without.
 */
export function encodeHealth(report: BoxHealthReport): string | null {
  for (const budget of PROBLEM_BUDGETS) {
    const cameras = report.cameras.map((c) => (c.problem === null || c.problem.length <= budget ? c : { ...c, problem: budget === 0 ? null : trimTo(c.problem, budget) }))
    const json = JSON.stringify({ ...report, cameras })
    if (json.length <= HEALTH_REPORT_MAX_LENGTH && new URLSearchParams({ health: json }).toString().length - 'health='.length <= HEALTH_QUERY_MAX_LENGTH) return json
  }
  return null
}
