// Desired cameras vs running recorders → the steps that get from one to the other. Pure.
import type { Camera } from '@club/contract'

/** What a recording process depends on; a change of anything else (corrections) restarts nothing. */
export function recordingInputs(camera: Camera): string {
  return JSON.stringify({ feed: camera.feed, feed2: camera.feed2 ?? null, audio: camera.audioCodec === 'none' ? 'none' : 'aac' })
}

export interface ReconcilePlan {
  start: Camera[]
  stop: string[]
  restart: Camera[]
  /** Running cameras whose settings changed without touching the recording: swap the settings only. */
  update: Camera[]
}

export function planReconcile(running: readonly Camera[], desired: readonly Camera[]): ReconcilePlan {
  const plan: ReconcilePlan = { start: [], stop: [], restart: [], update: [] }
  const wanted = new Map(desired.filter((c) => c.isEnabled !== false).map((c) => [c.id, c]))
  for (const current of running) {
    const next = wanted.get(current.id)
    if (!next) plan.stop.push(current.id)
    else if (recordingInputs(next) !== recordingInputs(current)) plan.restart.push(next)
    else if (JSON.stringify(next) !== JSON.stringify(current)) plan.update.push(next)
  }
  const runningIds = new Set(running.map((c) => c.id))
  for (const camera of wanted.values()) if (!runningIds.has(camera.id)) plan.start.push(camera)
  return plan
}
