// Replays over a live recording, through real ffmpeg: the replay worker cuts with the box's exporter
// (its whole-interval mode, as the agent asks for replays) and stores in a file:// bucket, and what it
// reports to the server is checked. The recordings are the ones that used to give short READY clips:
// a replay ending in the segment still being written, and a camera stopped before a replay's end.
import t from 'tap'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Writable } from 'node:stream'
import type { DeviceReplay, DeviceReplayStatusChange } from '@club/contract'
import { openBucket } from '@club/storage'
import { boundary, LOW_BITRATE, recording, waitFor } from '../clips/recording.fixture.js'
import { createLogger } from '../log.js'
import { tempDir } from '../temp-dir.fixture.js'
import { ReplayWorker } from './worker.js'

/** One replay [start, end) of the recorded camera, taken up by a worker; answers what it reported and logged. */
async function takeUp(t: { teardown(fn: () => unknown): void }, camera: Awaited<ReturnType<typeof recording>>, start: number, end: number) {
  const dir = tempDir(t)
  mkdirSync(join(dir, 'bucket'))
  const replay: DeviceReplay = { id: 'replay-1', kind: 'CLIP', status: 'REQUESTED', cameraId: camera.camera.id, start: new Date(start).toISOString(), end: new Date(end).toISOString() }
  const reports: DeviceReplayStatusChange[] = []
  let logs = ''
  const abort = new AbortController()
  t.teardown(() => abort.abort())
  const worker = new ReplayWorker({
    client: { waiting: async () => (reports.length ? [] : [replay]), report: async (_id, change) => void reports.push(change) },
    cut: async (r) => {
      const clip = await camera.export(new Date(r.start), new Date(r.end), true)
      return { path: fileURLToPath(clip.location), duration: clip.duration }
    },
    bucket: () => openBucket(`file://${join(dir, 'bucket')}`),
    stateDir: join(dir, 'state'),
    uploadAttempts: 1,
    // Cut soon after the end, while the segment holding it is still being written.
    flushSeconds: 0.1,
    log: createLogger('info', new Writable({ write: (chunk, _e, done) => ((logs += chunk.toString()), done()) })),
    signal: abort.signal
  })
  await worker.pickUp()
  return { reports, logs }
}

t.test('a replay ending in the segment being written waits for it, and comes out with its whole duration', async (t) => {
  const camera = await recording(t, LOW_BITRATE)
  const { writing } = await boundary(camera)
  // Its end a second into the segment just opened, cut 0.1 s after: that segment is finished only
  // at its slot's end (2 s) plus up to a keyframe interval.
  const end = writing.start.getTime() + 1_000
  const asked = 2.5
  const { reports, logs } = await takeUp(t, camera, end - asked * 1000, end)
  t.same(reports.map((r) => r.status), ['EXPORTING', 'UPLOADING', 'READY'])
  const ready = reports.at(-1) as Extract<DeviceReplayStatusChange, { status: 'READY' }>
  t.ok(Math.abs(ready.durationSeconds - asked) < 0.15, `the whole interval: ${ready.durationSeconds} s of ${asked} s`)
  const stored = await camera.runner.probe(fileURLToPath(ready.location))
  t.ok(Math.abs((stored.duration ?? 0) - asked) < 0.15, `the stored clip as ffprobe reads it: ${stored.duration} s`)
  t.comment(logs.includes('a replay cannot be cut yet; asking again') ? 'the worker waited for the segment' : 'the segment was finished before the first cut (a slow machine)')
})

t.test('a camera stopped before the replay ends: the replay is reported failed, not READY with a short clip', async (t) => {
  const camera = await recording(t, LOW_BITRATE)
  await waitFor('a finished segment', () => camera.segments().some((s) => s.duration !== undefined))
  await camera.stop()
  // Half its interval is on disk, the other half never will be: reckoned from where the footage ends,
  // not from when the stop returned (a loaded machine takes seconds to stop ffmpeg).
  const last = camera.segments().findLast((s) => s.duration !== undefined)!
  const footageEnd = last.start.getTime() + last.duration! * 1000
  const { reports, logs } = await takeUp(t, camera, footageEnd - 1_500, footageEnd + 1_500)
  t.same(reports.map((r) => r.status), ['EXPORTING', 'FAILED'])
  t.match(reports.at(-1), {
    status: 'FAILED',
    reason: 'recording_ended',
    message: /^the recording of camera cam-1 ended at .*, before the end of the interval \(.*\): its footage up to .* will never be on disk$/
  })
  t.match(logs, /a replay could not be cut/)
})
