// The replay worker's decisions, pure: which waiting replays to take up, what to do with each, how
// long to wait before uploading again, which reason a failure is reported with.
import type { DeviceReplay } from '@club/contract'

/** What to do for a replay the server lists: cut it (again), or only upload the clip already cut. */
export type ReplayStep = { kind: 'export'; replay: DeviceReplay } | { kind: 'upload'; replay: DeviceReplay; clipPath: string }

/**
 * The steps for the replays the server lists, oldest first (the worker runs one pick-up at a time, so
 * none of them is being worked on). A replay UPLOADING whose clip this box still holds (it restarted
 * mid-upload) is uploaded again; any other is cut again (its clip, if any, was lost with the restart).
 */
export function planReplays(waiting: readonly DeviceReplay[], pendingUploads: ReadonlyMap<string, string>): ReplayStep[] {
  return waiting.map((replay) => {
    const clipPath = pendingUploads.get(replay.id)
    return replay.status === 'UPLOADING' && clipPath !== undefined ? { kind: 'upload', replay, clipPath } : { kind: 'export', replay }
  })
}

/** Delay before upload attempt `attempt + 1` (attempt 1, 2, ...): doubling from 1 s, at most 30 s, ±10%. */
export function uploadRetryDelay(attempt: number, random: () => number): number {
  const ms = Math.min(1000 * 2 ** Math.max(0, attempt - 1), 30_000)
  return Math.round(ms * (0.9 + 0.2 * random()))
}

/**
 * The reason a failed export is reported with: no footage (the export's 404), a recording that ended
 * before the replay's end (410: the clip would be short, so none is made), or a camera's problem.
 */
export function exportFailureReason(statusCode: number | undefined): 'no_footage' | 'recording_ended' | 'camera_error' {
  if (statusCode === 404) return 'no_footage'
  return statusCode === 410 ? 'recording_ended' : 'camera_error'
}

/**
 * Seconds to wait before asking for a replay's clip again, when its export said to (429: the export
 * queue is full; 503: the footage up to the replay's end is still being written), with the Retry-After
 * the local API would answer; undefined when the failure is final. The exporter's 503 gives up on its
 * own on footage that will never be finished, so waiting as told is bounded.
 */
export function askAgainAfterSeconds(err: unknown): number | undefined {
  const { statusCode, retryAfterSeconds, headers } = (err ?? {}) as { statusCode?: unknown; retryAfterSeconds?: unknown; headers?: Record<string, unknown> }
  if (statusCode !== 429 && statusCode !== 503) return undefined
  const seconds = Number(retryAfterSeconds ?? headers?.['retry-after'])
  return Number.isFinite(seconds) && seconds > 0 ? seconds : undefined
}

/**
 * When a replay can be cut: the recording writes a fragment at each keyframe, so footage up to `end`
 * is on disk only a keyframe interval later. Cutting at once would give a clip short by that much.
 */
export function cutNotBefore(replay: Pick<DeviceReplay, 'end'>, marginSeconds: number): number {
  return Date.parse(replay.end) + marginSeconds * 1000
}

/**
 * The two lanes of a pick-up: a player's CLIPs, in the order listed, cut and uploaded as they come;
 * the MATCHes the match lane has not taken yet (it works on one at a time, after or beside the clips).
 * A CLIP never waits behind a MATCH: hours of footage would hold a replay asked a minute ago. A replay
 * of no kind (a server from before matches) is a CLIP.
 */
export function laneSteps(steps: readonly ReplayStep[], matchesTaken: ReadonlySet<string>): { clips: ReplayStep[]; matches: ReplayStep[] } {
  const isMatch = (step: ReplayStep) => step.replay.kind === 'MATCH'
  return {
    clips: steps.filter((s) => !isMatch(s)),
    matches: steps.filter((s) => isMatch(s) && !matchesTaken.has(s.replay.id))
  }
}

/**
 * The upload attempt that comes next, after attempt `attempt` failed: a resumable upload that got
 * further (the store acknowledged more) starts counting again, so a long upload over a poor uplink
 * is given up only when attempts in a row make no progress; undefined when none is left.
 */
export function nextUploadAttempt(attempt: number, progressed: boolean, attempts: number): number | undefined {
  if (progressed) return 2
  return attempt < attempts ? attempt + 1 : undefined
}
