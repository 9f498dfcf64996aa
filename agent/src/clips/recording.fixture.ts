// Test support: a camera recorded as the agent records it (real ffmpeg, fragmented MP4 segments from a
// camera stand-in), an exporter over its folder, and bounded waits for what the recording does.
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import type { Camera, ReplayServerConfig } from '@club/contract'
import { ManualClock, type Clock } from '../clock.js'
import { createLogger } from '../log.js'
import { recordingArgs } from '../recorder/pipeline.js'
import { FfmpegRunner } from '../recorder/runner.js'
import { listSegments, type Segment } from '../recorder/segments.js'
import { tempDir } from '../temp-dir.fixture.js'
import { ClipExporter } from './export.js'
import { SegmentLeases } from './leases.js'

export const execFileAsync = promisify(execFile)
export const SEGMENT_SECONDS = 2
// ffmpeg names segments by the local time (strftime): the agent runs with TZ=UTC, and so do these tests.
process.env.TZ = 'UTC'

/** Polls `check` every 20 ms until it answers a value; fails naming `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

/** A picture for a camera stand-in: its size, frame rate (one keyframe a second) and x264 quality options. */
export interface TestPicture {
  size: string
  rate: number
  quality: string[]
}

/** A low bitrate (about 70 kB/s, the e2e test's camera): a 2 s segment stays below ffmpeg's 256 KiB write buffer, so none of it is readable until it is finished. */
export const LOW_BITRATE: TestPicture = { size: '320x240', rate: 15, quality: [] }

/** Camera cam-1, a stand-in whose feed is a 4 s file of `picture` in `dir` (the recorder loops it). */
export async function testCamera(dir: string, picture: TestPicture): Promise<Camera> {
  const feed = join(dir, 'camera.mp4')
  await execFileAsync('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc2=size=${picture.size}:rate=${picture.rate}`,
    '-t', '4', '-c:v', 'libx264', '-preset', 'ultrafast', ...picture.quality, '-g', String(picture.rate), '-pix_fmt', 'yuv420p', feed
  ])
  return { id: 'cam-1', feed: pathToFileURL(feed).href, isEnabled: true, audioCodec: 'none' }
}

/** The box's exporter over `dir`'s recordings and clips folders, for `camera`, on `clock` (the system's by default). */
function exporterIn(dir: string, camera: Camera, runner: FfmpegRunner, clock?: Clock) {
  mkdirSync(join(dir, 'clips'), { recursive: true })
  const exporter = new ClipExporter({
    runner,
    recordingsDir: join(dir, 'recordings'),
    clipsDir: join(dir, 'clips'),
    segmentSeconds: SEGMENT_SECONDS,
    maxClipSeconds: 30,
    leases: new SegmentLeases(),
    bucket: () => Promise.reject(new Error('no bucket in this test')),
    log: createLogger('silent'),
    ...(clock ? { clock } : {})
  })
  const config = { cameras: [camera] } as ReplayServerConfig
  return (start: Date, end: Date, whole?: boolean) =>
    exporter.export({ cameraId: camera.id, start, end, ...(whole ? { whole } : {}) }, camera, config, null)
}

const newRunner = () => new FfmpegRunner({ ffmpegPath: 'ffmpeg', ffprobePath: 'ffprobe', stopStepMs: 2_000 })

/** A camera recorded as the agent records it, from a file of `size` at `rate`; stopped when the test ends. */
export async function recording(t: { teardown(fn: () => unknown): void }, picture: TestPicture) {
  const dir = tempDir(t)
  const camera = await testCamera(dir, picture)
  const segmentsDir = join(dir, 'recordings', camera.id)
  mkdirSync(segmentsDir, { recursive: true })
  const runner = newRunner()
  const recorder = runner.start(recordingArgs({ camera, feed: camera.feed, dir: segmentsDir, segmentSeconds: SEGMENT_SECONDS, runId: 'live' }))
  t.teardown(() => recorder.stop())
  return {
    runner,
    camera,
    segments: () => listSegments(segmentsDir),
    export: exporterIn(dir, camera, runner),
    /** Stops the recording as the agent does (ffmpeg finishes and lists its last segment). */
    stop: () => recorder.stop()
  }
}

/** A segment's file name as the recorder writes it (the UTC second it began, then the run). */
function segmentName(start: Date, runId: string): string {
  return `${start.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')}_${runId}.mp4`
}

/** The top-level boxes of an MP4 file: type, offset and size. */
export function mp4Boxes(file: Buffer): { type: string; offset: number; size: number }[] {
  const boxes: { type: string; offset: number; size: number }[] = []
  for (let offset = 0; offset + 8 <= file.length;) {
    const size = file.readUInt32BE(offset)
    boxes.push({ type: file.toString('latin1', offset + 4, offset + 8), offset, size })
    if (size < 8) break
    offset += size
  }
  return boxes
}

export interface HeldBoundary {
  /** How many bytes of the segment being written ffmpeg has flushed: by default only its first box (ftyp). */
  writtenBytes?: (segment: Buffer) => number
  /** How long after the boundary the clock stands; half a second by default. */
  afterMs?: number
}

/**
 * A camera's folder as the recorder leaves it just after a segment boundary, written by the test and
 * held as long as it needs, with a clock stopped `afterMs` after the boundary: a finished segment of
 * the camera's footage (listed), and the next one, unlisted, holding what ffmpeg has flushed of it;
 * by default only the ftyp box it writes first, as a real segment at a low bitrate until it is
 * finished. A real recording's boundary is gone on a loaded machine before a test can ask about it.
 */
export async function justOpenedFolder(
  segmentsDir: string,
  camera: Camera,
  { writtenBytes = (segment) => segment.readUInt32BE(0), afterMs = 500 }: HeldBoundary = {}
): Promise<{ clock: ManualClock; openedAt: number; writing: Segment; finished: Segment }> {
  const clock = new ManualClock()
  const openedAt = clock.now().getTime()
  clock.advance(afterMs)
  mkdirSync(segmentsDir, { recursive: true })
  const finishedName = segmentName(new Date(openedAt - SEGMENT_SECONDS * 1000), 'held')
  const finishedPath = join(segmentsDir, finishedName)
  const writingPath = join(segmentsDir, segmentName(new Date(openedAt), 'held'))
  // Cut from the camera's feed as the recorder cuts: copied, fragmented, one fragment per keyframe.
  await execFileAsync('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-i', fileURLToPath(camera.feed), '-t', String(SEGMENT_SECONDS), '-map', '0:v:0', '-c:v', 'copy',
    '-movflags', '+frag_keyframe+empty_moov+default_base_moof', '-f', 'mp4', finishedPath
  ])
  const segment = readFileSync(finishedPath)
  writeFileSync(writingPath, segment.subarray(0, writtenBytes(segment)))
  writeFileSync(join(segmentsDir, 'segments_held.csv'), `${finishedName},0.000000,${SEGMENT_SECONDS}.000000\n`)
  // Their times on the test's clock, for the rules that read a file's age.
  utimesSync(finishedPath, new Date(openedAt), new Date(openedAt))
  utimesSync(writingPath, clock.now(), clock.now())
  const [finished, writing] = listSegments(segmentsDir)
  return { clock, openedAt, finished: finished!, writing: writing! }
}

/** A camera's folder held just after a boundary (justOpenedFolder), with the box's exporter on its clock. */
export async function heldBoundary(t: { teardown(fn: () => unknown): void }, picture: TestPicture, held: HeldBoundary = {}) {
  const dir = tempDir(t)
  const camera = await testCamera(dir, picture)
  const runner = newRunner()
  const folder = await justOpenedFolder(join(dir, 'recordings', camera.id), camera, held)
  return { ...folder, runner, camera, export: exporterIn(dir, camera, runner, folder.clock) }
}

/** The segment being written, once ffmpeg has just opened it: the newest, unlisted, after a finished one. */
export function justOpened(segments: Segment[], test: (writing: Segment) => boolean): { writing: Segment; finished: Segment } | undefined {
  const writing = segments.at(-1)
  const finished = segments.at(-2)
  return writing && finished?.duration !== undefined && writing.duration === undefined && test(writing) ? { writing, finished } : undefined
}

/**
 * Waits for a segment boundary and answers it as it happens: a file newer than the last look's newest,
 * seen within a second of its opening. Its name says only its second, and ffmpeg opens it at the
 * camera's first keyframe after the boundary, up to a second later (one keyframe a second here, at a
 * phase set by when ffmpeg started): a window reckoned from the name could be a few ms wide at every
 * boundary, and a loaded machine missed all of them.
 */
export async function boundary(camera: { segments(): Segment[] }): Promise<{ openedAt: number; writing: Segment; finished: Segment }> {
  let newest: string | undefined
  let openedAt: number | undefined
  const opened = await waitFor('a segment boundary', () => {
    const segments = camera.segments()
    const path = segments.at(-1)?.path
    if (path !== newest) {
      // The first look only learns which file is newest.
      openedAt = newest === undefined ? undefined : Date.now()
      newest = path
    }
    return openedAt !== undefined && Date.now() - openedAt < 1_000 && justOpened(segments, () => true)
  })
  return { openedAt: openedAt!, ...opened }
}
