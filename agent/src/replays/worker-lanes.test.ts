// The replay worker's two lanes over a real recording and real ffmpeg: a player's clip asked while a
// corrected match is being encoded (at the lowest priority, in the match lane) is cut at once and is
// READY before the match, as fast as the clip lane can, never behind it.
import t from 'tap'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { DeviceReplay, DeviceReplayStatusChange } from '@club/contract'
import { openBucket } from '@club/storage'
import { RECORDED_AT, recorded } from '../clips/segments.fixture.js'
import { waitFor } from '../clips/recording.fixture.js'
import { createLogger } from '../log.js'
import { FfmpegRunner } from '../recorder/runner.js'
import { tempDir } from '../temp-dir.fixture.js'
import { ReplayWorker } from './worker.js'

const at = (seconds: number) => new Date(RECORDED_AT + seconds * 1000).toISOString()

t.test("a clip asked while a corrected match encodes is cut at once and READY before the match", async (t) => {
  const dir = tempDir(t)
  mkdirSync(join(dir, 'bucket'))
  const footage = await recorded(dir, { seconds: 60, segmentSeconds: 2, size: '640x360', rate: 15, gop: 15, audio: false, preset: 'ultrafast' }, {
    backgroundRunner: new FfmpegRunner({ ffmpegPath: 'ffmpeg', ffprobePath: 'ffprobe', lowestPriority: true })
  })
  // A camera that is turned a little: its match is encoded whole, which takes far longer than a clip's copy.
  const corrected = { ...footage.camera, rotation: 3 }
  const match: DeviceReplay = { id: 'match-1', kind: 'MATCH', status: 'REQUESTED', cameraId: 'cam-1', start: at(0), end: at(60), chapters: [{ at: 20, label: 'Replay 10:00:20' }] }
  const clip: DeviceReplay = { id: 'clip-1', kind: 'CLIP', status: 'REQUESTED', cameraId: 'cam-1', start: at(40), end: at(45) }

  const events: Array<{ what: string; at: number }> = []
  const seen = (what: string) => events.push({ what, at: performance.now() })
  const when = (what: string) => events.find((e) => e.what === what)?.at
  // The same clip asked once alone first: its time without a match beside it, for comparison.
  const alone: DeviceReplay = { ...clip, id: 'clip-alone' }
  const listed = new Map<string, DeviceReplay>([[alone.id, alone]])
  const abort = new AbortController()
  t.teardown(() => abort.abort())
  let worker!: ReplayWorker
  let beingCut: number | undefined
  worker = new ReplayWorker({
    client: {
      waiting: async () => [...listed.values()],
      report: async (id, change: DeviceReplayStatusChange) => {
        seen(`${id} ${change.status}`)
        const replay = listed.get(id)!
        if (change.status === 'READY' || change.status === 'FAILED') listed.delete(id)
        else listed.set(id, { ...replay, status: change.status })
      }
    },
    cut: async (replay) => {
      seen(`${replay.id} cut`)
      if (replay.kind === 'MATCH') {
        // The player asks for a replay now, while the match is being encoded: the server lists it and
        // tells the box (a pick-up).
        beingCut = worker.matchesBeingCut
        listed.set(clip.id, clip)
        seen('clip listed')
        void worker.pickUp()
        const path = await footage.cut(0, 60, { camera: corrected, match: { chapters: replay.chapters ?? [] } })
        seen(`${replay.id} cut done`)
        return { path, duration: 60 }
      }
      const path = await footage.cut(40, 45)
      seen(`${replay.id} cut done`)
      return { path, duration: 5 }
    },
    bucket: () => openBucket(pathToFileURL(join(dir, 'bucket')).href),
    stateDir: join(dir, 'state'),
    uploadAttempts: 1,
    flushSeconds: 0,
    log: createLogger('silent'),
    signal: abort.signal
  })
  seen('clip-alone listed')
  await worker.pickUp()
  t.ok(when('clip-alone READY'), 'the clip alone is READY')
  listed.set(match.id, match)
  await worker.pickUp()
  await waitFor('the match READY', () => when('match-1 READY'), 240_000)
  await worker.matchesDone()
  t.comment(events.map((e) => `${(e.at - events[0]!.at).toFixed(0)} ms ${e.what}`).join('\n'))

  t.equal(beingCut, 1, "the match being cut is what the box's update waits for")
  t.equal(worker.matchesBeingCut, 0, 'and nothing once it is stored')
  t.ok(when('clip-1 READY'), 'the clip is READY')
  t.ok(when('clip-1 cut')! < when('match-1 cut done')!, "the clip's cut started while the match was still being encoded: the clip lane never waits for the match lane")
  t.ok(when('clip-1 READY')! < when('match-1 READY')!, 'the clip is READY before the match')
  // A generous bound, whatever the machine: listing, a report and the flush wait, nothing of the match's.
  t.ok(when('clip-1 cut')! - when('clip listed')! < 5_000, `the clip's cut started ${(when('clip-1 cut')! - when('clip listed')!).toFixed(0)} ms after it was listed`)
  t.comment(`the clip: ${(when('clip-alone READY')! - when('clip-alone listed')!).toFixed(0)} ms from listed to READY alone, ${(when('clip-1 READY')! - when('clip listed')!).toFixed(0)} ms beside the match; the match: ${(when('match-1 cut done')! - when('match-1 cut')!).toFixed(0)} ms to encode`)
})
