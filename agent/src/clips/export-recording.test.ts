// Exports over footage still being written, through real ffmpeg: a recording runs as the agent runs it
// (fragmented MP4 segments from a camera stand-in), and clips are asked for at the moments that used
// to fail: right after a segment boundary, and while the segment being written holds part of a fragment.
import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import type { Camera, ReplayServerConfig } from '@club/contract'
import { createLogger } from '../log.js'
import { recordingArgs } from '../recorder/pipeline.js'
import { FfmpegRunner } from '../recorder/runner.js'
import { listSegments, type Segment } from '../recorder/segments.js'
import { tempDir } from '../temp-dir.fixture.js'
import { ClipExporter } from './export.js'
import { SegmentLeases } from './leases.js'

const execFileAsync = promisify(execFile)
const SEGMENT_SECONDS = 2
// ffmpeg names segments by the local time (strftime): the agent runs with TZ=UTC, and so does this test.
process.env.TZ = 'UTC'

/** Polls `check` every 20 ms until it answers a value; fails naming `what` after `timeoutMs`. */
async function waitFor<T>(what: string, check: () => T | undefined | false, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

/** A camera recorded as the agent records it, from a file of `size` at `rate`; stopped when the test ends. */
async function recording(t: { teardown(fn: () => unknown): void }, picture: { size: string; rate: number; quality: string[] }) {
  const dir = tempDir(t)
  const feed = join(dir, 'camera.mp4')
  await execFileAsync('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc2=size=${picture.size}:rate=${picture.rate}`,
    '-t', '4', '-c:v', 'libx264', '-preset', 'ultrafast', ...picture.quality, '-g', String(picture.rate), '-pix_fmt', 'yuv420p', feed
  ])
  const camera: Camera = { id: 'cam-1', feed: pathToFileURL(feed).href, isEnabled: true, audioCodec: 'none' }
  const segmentsDir = join(dir, 'recordings', camera.id)
  mkdirSync(segmentsDir, { recursive: true })
  mkdirSync(join(dir, 'clips'))
  const runner = new FfmpegRunner({ ffmpegPath: 'ffmpeg', ffprobePath: 'ffprobe', stopStepMs: 2_000 })
  const recorder = runner.start(recordingArgs({ camera, feed: camera.feed, dir: segmentsDir, segmentSeconds: SEGMENT_SECONDS, runId: 'live' }))
  t.teardown(() => recorder.stop())
  const exporter = new ClipExporter({
    runner,
    recordingsDir: join(dir, 'recordings'),
    clipsDir: join(dir, 'clips'),
    segmentSeconds: SEGMENT_SECONDS,
    maxClipSeconds: 30,
    leases: new SegmentLeases(),
    bucket: () => Promise.reject(new Error('no bucket in this test')),
    log: createLogger('silent')
  })
  const config = { cameras: [camera] } as ReplayServerConfig
  return {
    runner,
    segments: () => listSegments(segmentsDir),
    export: (start: Date, end: Date) => exporter.export({ cameraId: camera.id, start, end }, camera, config, null)
  }
}

/** The segment being written, once ffmpeg has just opened it: the newest, unlisted, after a finished one. */
function justOpened(segments: Segment[], test: (writing: Segment) => boolean): { writing: Segment; finished: Segment } | undefined {
  const writing = segments.at(-1)
  const finished = segments.at(-2)
  return writing && finished?.duration !== undefined && writing.duration === undefined && test(writing) ? { writing, finished } : undefined
}

t.test('right after a segment boundary the segment being written holds no frame yet', async (t) => {
  // The e2e test's camera: about 70 kB/s, so a 2 s segment stays below ffmpeg's 256 KiB write buffer
  // and its file holds only the ftyp box until it is finished.
  const camera = await recording(t, { size: '320x240', rate: 15, quality: [] })
  // A boundary is seen as it happens: a file newer than the last look's newest. Its name says only
  // its second, and ffmpeg opens it at the camera's first keyframe after the boundary, up to a second
  // later (one keyframe a second here, at a phase set by when ffmpeg started): a window reckoned from
  // the name could be a few ms wide at every boundary, and a loaded machine missed all of them.
  let newest: string | undefined
  let openedAt: number | undefined
  const { finished } = await waitFor('a segment boundary', () => {
    const segments = camera.segments()
    const path = segments.at(-1)?.path
    if (path !== newest) {
      // The first look only learns which file is newest.
      openedAt = newest === undefined ? undefined : Date.now()
      newest = path
    }
    return openedAt !== undefined && Date.now() - openedAt < 1_000 && justOpened(segments, () => true)
  })
  const since = openedAt!

  const refused = await camera.export(new Date(since + 100), new Date(since + 1_500)).then(
    (clip) => clip,
    (err: unknown) => err
  )
  t.match(refused, {
    name: 'ClipError',
    statusCode: 503,
    message: /^the footage of camera cam-1 between .* is still being written: ask again in \d s$/
  }, 'an interval wholly in it: 503')
  const retryAfter = (refused as { retryAfterSeconds?: number }).retryAfterSeconds ?? 0
  t.ok(retryAfter >= 1 && retryAfter <= SEGMENT_SECONDS + 1, `and when to ask again: when it should be finished (${retryAfter} s)`)

  // "The last few seconds": cut up to the footage on disk, the end of the finished segment.
  const start = new Date(finished.start.getTime() + 500)
  const clip = await camera.export(start, new Date(Date.now()))
  const onDisk = finished.duration! - 0.5
  t.ok(Math.abs(clip.duration - onDisk) < 0.2, `the clip holds the finished footage (${clip.duration} s, ${onDisk.toFixed(3)} s on disk)`)
  const { stderr } = await execFileAsync('ffmpeg', ['-v', 'error', '-i', new URL(clip.location).pathname, '-f', 'null', '-'])
  t.equal(stderr.trim(), '', 'the clip decodes cleanly')
})

t.test('a segment being written that holds part of a fragment: cut up to what is readable', async (t) => {
  // About 0.5 MB/s: ffmpeg writes the segment in 256 KiB chunks, so the file ends in the middle of a
  // fragment (one per keyframe, every second) most of the time.
  const camera = await recording(t, { size: '640x360', rate: 25, quality: ['-qp', '0'] })
  const { writing } = await waitFor('a segment being written with a chunk on disk', () =>
    justOpened(camera.segments(), (s) => s.size > 256 * 1024))
  const asked = 1.9
  const clip = await camera.export(writing.start, new Date(writing.start.getTime() + asked * 1000))
  t.ok(clip.duration > 0.1 && clip.duration <= asked + 0.05, `a clip of the footage on disk (${clip.duration} s of ${asked} s asked)`)
  const { stderr } = await execFileAsync('ffmpeg', ['-v', 'error', '-i', new URL(clip.location).pathname, '-f', 'null', '-'])
  t.equal(stderr.trim(), '', 'the clip decodes cleanly')
})
