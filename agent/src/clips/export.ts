// Cuts a replay clip from the recorded segments: the camera's corrections, the logo, the postroll.
import { randomUUID } from 'node:crypto'
import { access, constants, mkdir, rename, rm, stat, statfs, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Bucket } from '@club/storage'
import type { Camera, Chapter, LogoPlacement, ReplayServerConfig } from '@club/contract'
import { systemClock, type Clock } from '../clock.js'
import type { Logger } from '../log.js'
import { audioEncoder, correctedSize, correctedVideo, MAP_INPUT, videoEncoder } from '../recorder/pipeline.js'
import { correctionMapFiles } from '../recorder/correction-map-files.js'
import { needsRemap } from '../recorder/correction-maps.js'
import type { FfmpegRunner } from '../recorder/runner.js'
import { footageInPackets, listSegments, secondsUntilWritten, segmentsCovering, unfinishedLength, wholeInterval, type ClipSource, type Segment } from '../recorder/segments.js'
import type { SegmentLeases } from './leases.js'
import { readKeyframes } from './keyframes.js'
import { audioConcatList, isPlainCut, joinArgs, matchingEncoder, parseKeyframes, piecesArgs, planSmartCut, videoConcatList } from './smart-cut.js'

/** An export refused for a reason the caller can act on; `statusCode` is the HTTP answer. */
export class ClipError extends Error {
  override name = 'ClipError'
  /** With a 503: when the footage asked for should be readable, for the Retry-After header. */
  constructor(readonly statusCode: 400 | 404 | 410 | 422 | 502 | 503, message: string, readonly retryAfterSeconds?: number) {
    super(message)
  }
}

export interface ClipPlan {
  sources: ClipSource[]
  /** Seconds into the first source where the clip starts. */
  offset: number
  /** Seconds of camera footage in the clip (the postroll comes on top). */
  duration: number
  camera: Camera
  /** The camera's picture as recorded: its size and frame rate (ffprobe's r_frame_rate, e.g. 15/1). */
  picture: { width: number; height: number; frameRate: string }
  withAudio: boolean
  logo?: { path: string; placement: LogoPlacement }
  postroll?: { path: string; duration: number; hasAudio: boolean }
  /** The camera's geometry as remap's maps (16-bit PGM files), when it needs them: see `needsRemap`. */
  maps?: { x: string; y: string }
  /** Threads for the filters' slices: the box's cores. */
  filterThreads?: number
  /**
   * A match encoded whole (a corrected camera): on one core, decoding, filters and encoder alike, with
   * x264's superfast, so the hours of footage take one core of the box's two at most, and the recordings
   * and a player's replay keep the other (its nice 19 gives them the first too).
   */
  oneCore?: boolean
  concatListPath: string
  outputPath: string
}

/** ffconcat list with each segment's real duration, so the timeline (and the cut) is exact. */
export function concatList(sources: readonly ClipSource[]): string {
  const quote = (p: string) => `'${p.replace(/'/g, "'\\''")}'`
  return ['ffconcat version 1.0', ...sources.flatMap((s) => [`file ${quote(s.path)}`, `duration ${s.duration.toFixed(6)}`]), ''].join('\n')
}

const MARGIN = 16
export function overlayPosition(placement: LogoPlacement): string {
  switch (placement) {
    case 'top-left': return `${MARGIN}:${MARGIN}`
    case 'top-right': return `W-w-${MARGIN}:${MARGIN}`
    case 'bottom-left': return `${MARGIN}:H-h-${MARGIN}`
    case 'bottom-right': return `W-w-${MARGIN}:H-h-${MARGIN}`
    case 'center': return '(W-w)/2:(H-h)/2'
  }
}

const AUDIO_FORMAT = 'aformat=sample_rates=48000:channel_layouts=stereo'

/** x264's preset for a match encoded whole: about half veryfast's CPU per second at 720p, for a somewhat larger file. */
const MATCH_PRESET = 'superfast'

export function clipArgs(plan: ClipPlan): string[] {
  const inputs = [...(plan.oneCore ? ['-threads', '1'] : []), '-f', 'concat', '-safe', '0', '-i', plan.concatListPath]
  const graph: string[] = []
  let next = 1
  const input = (path: string, options: string[] = []) => {
    inputs.push(...options, '-i', path)
    return next++
  }
  const trim = [`trim=start=${plan.offset.toFixed(3)}:duration=${plan.duration.toFixed(3)}`, 'setpts=PTS-STARTPTS']
  // One frame rate on both sides of the join: the concat filter gives a stream without one otherwise,
  // and the encoder then duplicates frames without end. Before the trim, so the trim counts whole frames.
  const fps = `fps=${plan.picture.frameRate}`
  const maps = plan.maps && { x: `${input(plan.maps.x, MAP_INPUT)}:v`, y: `${input(plan.maps.y, MAP_INPUT)}:v` }
  graph.push(...correctedVideo(plan.camera, '0:v', 'main', [fps, ...trim], ['setsar=1', 'format=yuv420p'], maps))
  let video = 'main'
  if (plan.logo) {
    const l = input(plan.logo.path)
    graph.push(`[${video}][${l}:v]overlay=${overlayPosition(plan.logo.placement)}:eof_action=repeat[logo]`)
    video = 'logo'
  }
  let audio: string | undefined
  if (plan.withAudio) {
    graph.push(`[0:a]atrim=start=${plan.offset.toFixed(3)}:duration=${plan.duration.toFixed(3)},asetpts=PTS-STARTPTS,${AUDIO_FORMAT}[a]`)
    audio = 'a'
  }
  if (plan.postroll) {
    const p = input(plan.postroll.path)
    // The postroll takes the clip's size, whatever its own (letterboxed), so the two can be joined.
    const { width, height } = correctedSize(plan.camera, plan.picture.width, plan.picture.height)
    graph.push(
      `[${p}:v]scale=${width}:${height}:force_original_aspect_ratio=decrease:force_divisible_by=2,` +
        `pad=${width}:${height}:(ow-iw)/2:(oh-ih)/2,setsar=1,${fps},format=yuv420p[post]`
    )
    if (audio) {
      graph.push(plan.postroll.hasAudio
        ? `[${p}:a]${AUDIO_FORMAT}[pa]`
        : `anullsrc=r=48000:cl=stereo,atrim=duration=${plan.postroll.duration.toFixed(3)}[pa]`)
      graph.push(`[${video}][${audio}][post][pa]concat=n=2:v=1:a=1[out][aout]`)
      audio = 'aout'
    } else {
      graph.push(`[${video}][post]concat=n=2:v=1:a=0[out]`)
    }
    video = 'out'
  }
  return [
    '-hide_banner', '-loglevel', 'error',
    ...inputs,
    ...(plan.oneCore ? ['-filter_complex_threads', '1'] : plan.filterThreads ? ['-filter_complex_threads', String(plan.filterThreads)] : []),
    '-filter_complex', graph.join(';'),
    '-map', `[${video}]`,
    ...(audio ? ['-map', `[${audio}]`] : []),
    ...(plan.oneCore ? [...videoEncoder(plan.camera.videoCodec, MATCH_PRESET), '-threads', '1'] : videoEncoder(plan.camera.videoCodec)),
    ...(audio ? audioEncoder(plan.camera.audioCodec) : ['-an']),
    '-movflags', '+faststart',
    plan.outputPath
  ]
}

export interface ClipRequest {
  cameraId: string
  start: Date
  end: Date
  /**
   * The whole interval or nothing (a replay): while the footage up to `end` is being written, a 503
   * with when to ask again instead of a clip of the part on disk; a recording that ended before `end`,
   * a 410. Without it (the local API's clips), the part on disk is cut: "the last seconds".
   */
  whole?: boolean
  /**
   * A MATCH (a booking's whole interval, hours long): up to MAX_MATCH_SECONDS whatever the local API's
   * maxClipSeconds; no logo nor postroll (they would mean encoding hours of footage), ffmpeg at the
   * lowest priority, its chapters written into the MP4; refused with a 503 while the clips folder
   * has no room for it.
   */
  match?: { chapters: readonly Chapter[] }
}

/** The longest match the box cuts: a four-hour booking, with room to spare. */
export const MAX_MATCH_SECONDS = 6 * 3600

/** Free space kept on the clips folder's disk beyond a match's clip: the recordings go on meanwhile. */
const MATCH_DISK_RESERVE_BYTES = 1024 ** 3

/**
 * Whether a match's clip fits in the clips folder's free space: its footage's size (a copy is that
 * size; an encode of it about as much), twice over when chapters are written (a second copy is made,
 * then the first removed), plus a reserve for the recordings. When not, the match waits.
 */
export function matchFits(footageBytes: number, withChapters: boolean, freeBytes: number): boolean {
  return footageBytes * (withChapters ? 2 : 1) + MATCH_DISK_RESERVE_BYTES <= freeBytes
}

/** Seconds before a match refused for room is asked again: the cleanup and the uploads free space meanwhile. */
const MATCH_ROOM_RETRY_SECONDS = 300

/**
 * A match's chapters as an FFMETADATA file (ffmpeg's own format): each from its mark to the next, the
 * last to the clip's end, a "Start" chapter before the first mark, in milliseconds; marks at or past the end are left out, since a player
 * cannot jump there.
 */
export function chapterMetadata(chapters: readonly Chapter[], durationSeconds: number): string {
  // A title is one line: control characters (a carriage return too, which ffmpeg's reader may take
  // for a line's end and so for a line of the file's own) become spaces; its own specials are escaped.
  const escape = (text: string) => text.replace(/[\x00-\x1f\x7f]/g, ' ').replace(/[\\=;#]/g, (c) => `\\${c}`)
  const end = Math.round(durationSeconds * 1000)
  const marks = chapters.map((c) => ({ at: Math.max(0, Math.round(c.at * 1000)), label: c.label })).filter((c) => c.at < end).sort((a, b) => a.at - b.at)
  // An MP4's chapters tile its timeline from 0 (a player reads the first as starting there whatever
  // its START): a first mark later than 0 gets a chapter of its own before it.
  if (marks.length && marks[0]!.at > 0) marks.unshift({ at: 0, label: MATCH_START_CHAPTER })
  const lines = [';FFMETADATA1']
  marks.forEach((mark, i) => {
    lines.push('[CHAPTER]', 'TIMEBASE=1/1000', `START=${mark.at}`, `END=${marks[i + 1]?.at ?? end}`, `title=${escape(mark.label)}`)
  })
  return `${lines.join('\n')}\n`
}

/** The chapter before a match's first mark. */
export const MATCH_START_CHAPTER = 'Start'

/** ffmpeg's arguments writing `chaptersPath`'s chapters into a copy of `inputPath` (no stream encoded again). */
export function chapterArgs(inputPath: string, chaptersPath: string, outputPath: string): string[] {
  return [
    '-hide_banner', '-loglevel', 'error',
    '-i', inputPath, '-f', 'ffmetadata', '-i', chaptersPath,
    '-map', '0', '-map_metadata', '0', '-map_chapters', '1', '-c', 'copy',
    '-movflags', '+faststart',
    outputPath
  ]
}

export interface Clip {
  id: string
  cameraId: string
  start: string
  end: string
  duration: number
  location: string
}

export interface ClipExporterOptions {
  runner: FfmpegRunner
  recordingsDir: string
  clipsDir: string
  segmentSeconds: number
  maxClipSeconds: number
  /** Runs a match's ffmpeg at the lowest priority (FfmpegRunner's lowestPriority); `runner` when absent. */
  backgroundRunner?: FfmpegRunner
  /** Threads for ffmpeg's filter slices (the box's cores). */
  filterThreads?: number
  leases: SegmentLeases
  /**
   * The configured cloudStorageBucket, opened through @club/storage (file://, s3:// or gs://, as the
   * replays' uploads): the same driver, credentials and checks for both.
   */
  bucket(): Promise<Bucket>
  log: Logger
  /** What "now" is for a segment still being written (how much it can hold, when to ask again); the system's by default. */
  clock?: Clock
}

export class ClipExporter {
  constructor(private readonly options: ClipExporterOptions) {}

  /** The checks that need no file: run before an export waits in the queue, so a bad request fails at once. */
  check(request: ClipRequest, camera: Camera | undefined, correctionError: string | null): asserts camera is Camera {
    const seconds = (request.end.getTime() - request.start.getTime()) / 1000
    if (!(seconds > 0)) throw new ClipError(400, 'end must be after start')
    // The local API's limit is for clips people ask for; a match lasts its booking.
    const longest = request.match ? MAX_MATCH_SECONDS : this.options.maxClipSeconds
    if (seconds > longest) throw new ClipError(400, `a ${request.match ? 'match' : 'clip'} may last at most ${longest} s; this one asks for ${seconds} s`)
    if (!camera) throw new ClipError(404, `there is no camera ${request.cameraId}`)
    if (correctionError) throw new ClipError(422, correctionError)
  }

  async export(request: ClipRequest, camera: Camera | undefined, given: ReplayServerConfig, correctionError: string | null): Promise<Clip> {
    const { leases, log, segmentSeconds } = this.options
    const runner = request.match ? (this.options.backgroundRunner ?? this.options.runner) : this.options.runner
    // A match is the footage as recorded (corrected where the camera needs it): a logo or a postroll
    // would mean encoding hours of it, the very cost a copy avoids.
    const config = request.match ? { ...given, logoPath: undefined, postrollPath: undefined } : given
    this.check(request, camera, correctionError)
    const seconds = (request.end.getTime() - request.start.getTime()) / 1000
    for (const [what, path] of [['logo', config.logoPath], ['postroll', config.postrollPath]] as const) {
      if (path && !(await readable(path))) throw new ClipError(422, `the ${what} file ${path} cannot be read`)
    }

    // Opened before any footage is cut: a bucket the box cannot use is refused at once. None configured:
    // the clip stays in the clips folder, and that is its location.
    let bucket: Bucket | undefined
    try {
      bucket = config.cloudStorageBucket ? await this.options.bucket() : undefined
    } catch (err) {
      throw new ClipError(422, (err as Error).message)
    }

    const now = (this.options.clock ?? systemClock).now().getTime()
    const segments = listSegments(join(this.options.recordingsDir, camera.id))
    // A segment ffmpeg has not finished holds less than the clock says, often nothing yet: the ones
    // the clock puts in the interval are measured, and count for what ffprobe can read of them.
    const written = new Map<string, number>()
    for (const source of segmentsCovering(segments, request.start, request.end, (s) => unfinishedLength(s, now, segmentSeconds)).sources) {
      if (segments.some((s) => s.path === source.path && s.duration === undefined)) written.set(source.path, footageInPackets(await runner.videoPackets(source.path)))
    }
    const readableLength = (s: Segment) => unfinishedLength(s, now, segmentSeconds, written.get(s.path) ?? 0)
    const { sources, offset } = segmentsCovering(segments, request.start, request.end, readableLength)
    // Footage not yet recorded is not footage being written: an interval that begins more than a
    // segment's length from now is a 404, whatever the newest segment, or a client whose clock runs
    // ahead would be told to wait for ever. One that begins sooner is the segment being written's.
    const recordedSoon = request.start.getTime() < now + segmentSeconds * 1000
    const retryAfter = recordedSoon ? secondsUntilWritten(segments, request.end, now, segmentSeconds) : undefined
    if (sources.length === 0) {
      const interval = `between ${request.start.toISOString()} and ${request.end.toISOString()}`
      if (retryAfter !== undefined) throw new ClipError(503, `the footage of camera ${camera.id} ${interval} is still being written: ask again in ${retryAfter} s`, retryAfter)
      throw new ClipError(404, `no footage of camera ${camera.id} ${interval}`)
    }
    if (request.whole) {
      const whole = wholeInterval(segments, request.end, now, segmentSeconds, readableLength)
      const upTo = `up to ${request.end.toISOString()}`
      if (whole.action === 'wait') {
        throw new ClipError(503, `the footage of camera ${camera.id} ${upTo} is still being written: ask again in ${whole.retryAfterSeconds} s`, whole.retryAfterSeconds)
      }
      if (whole.action === 'ended') {
        throw new ClipError(410, `the recording of camera ${camera.id} ended at ${whole.footageEnd?.toISOString() ?? 'its start'}, before the end of the interval (${request.end.toISOString()}): its footage ${upTo} will never be on disk`)
      }
    }
    const available = sources.reduce((sum, s) => sum + s.duration, 0) - offset
    const duration = Math.min(seconds, available)
    if (request.match) {
      const footageBytes = (await Promise.all(sources.map((s) => stat(s.path).then((st) => st.size, () => 0)))).reduce((a, b) => a + b, 0)
      const disk = await statfs(this.options.clipsDir)
      if (!matchFits(footageBytes, request.match.chapters.length > 0, disk.bavail * disk.bsize)) {
        throw new ClipError(503, `the clips folder has no room for the match of camera ${camera.id} (${Math.ceil(footageBytes / 1024 ** 2)} MiB of footage): asking again in ${MATCH_ROOM_RETRY_SECONDS} s`, MATCH_ROOM_RETRY_SECONDS)
      }
    }

    const id = randomUUID()
    const work = join(this.options.clipsDir, `.work-${id}`)
    const release = leases.hold(sources.map((s) => s.path))
    try {
      await mkdir(work, { recursive: true })
      const first = await runner.probe(sources[0]!.path)
      const hasAudio = first.streams.some((s) => s.codec_type === 'audio')
      const video = first.streams.find((s) => s.codec_type === 'video')
      if (!video?.width || !video.height) throw new ClipError(422, `the recording of camera ${camera.id} has no readable video`)
      const picture = { width: video.width, height: video.height, frameRate: usableRate(video.r_frame_rate) }
      let postroll: ClipPlan['postroll']
      if (config.postrollPath) {
        const probe = await runner.probe(config.postrollPath)
        postroll = { path: config.postrollPath, duration: probe.duration ?? 0, hasAudio: probe.streams.some((s) => s.codec_type === 'audio') }
      }
      const plan: ClipPlan = {
        sources, offset, duration, camera, picture,
        withAudio: hasAudio && camera.audioCodec !== 'none',
        ...(config.logoPath ? { logo: { path: config.logoPath, placement: config.logoPlacement ?? 'top-right' } } : {}),
        ...(postroll ? { postroll } : {}),
        ...(needsRemap(camera) ? { maps: await correctionMapFiles(this.options.recordingsDir, camera, picture.width, picture.height) } : {}),
        ...(this.options.filterThreads ? { filterThreads: this.options.filterThreads } : {}),
        ...(request.match ? { oneCore: true } : {}),
        concatListPath: join(work, 'segments.ffconcat'),
        outputPath: join(this.options.clipsDir, `${id}.mp4`)
      }
      // A plain clip is a copy of the recorded packets but for its two ends; anything drawn on the
      // picture, a postroll or a recording libx264 cannot continue means encoding all of it.
      const audio = first.streams.find((s) => s.codec_type === 'audio')
      const encoder = isPlainCut(camera, { logo: !!plan.logo, postroll: !!postroll }) && (!plan.withAudio || audio?.codec_name === 'aac')
        ? matchingEncoder(video)
        : undefined
      log.info({ clipId: id, cameraId: camera.id, segments: sources.length, duration, copy: !!encoder, match: !!request.match }, 'exporting clip')
      const encodeWhole = async () => {
        await writeFile(plan.concatListPath, concatList(sources))
        await runner.run(clipArgs(plan), Math.max(60_000, (duration + (postroll?.duration ?? 0)) * 10_000))
      }
      try {
        if (encoder) {
          try {
            await this.cutByCopy(runner, plan, encoder, work)
          } catch (err) {
            // The copy is a shortcut: footage it cannot continue (keyframes ffprobe cannot read, an end
            // ffmpeg refuses to join) is encoded whole, as every clip was before, and the reason logged.
            log.warn({ err, clipId: id, cameraId: camera.id }, 'cutting the clip by copy failed; encoding it whole')
            await encodeWhole()
          }
        } else {
          await encodeWhole()
        }
      } catch (err) {
        // Whatever ffmpeg wrote is no clip: a match's half-written hours are not left on the disk.
        await rm(plan.outputPath, { force: true })
        // Footage measured a moment ago and still being written is the one thing here that can change
        // under ffmpeg: that failure is the caller's to retry, and ffmpeg's own words go to the log.
        if (retryAfter === undefined || !written.has(sources.at(-1)!.path)) throw err
        log.warn({ err, clipId: id, cameraId: camera.id }, 'export over footage still being written failed')
        throw new ClipError(503, `the footage of camera ${camera.id} could not be read while it is being written: ask again in ${retryAfter} s`, retryAfter)
      }
      if (request.match?.chapters.length) await this.writeChapters(runner, plan.outputPath, request.match.chapters, duration, work)
      const result = await runner.probe(plan.outputPath)
      const location = bucket ? await upload(bucket, plan.outputPath, `${camera.id}/${id}.mp4`, log) : pathToFileURL(plan.outputPath).href
      return { id, cameraId: camera.id, start: request.start.toISOString(), end: request.end.toISOString(), duration: result.duration ?? duration, location }
    } finally {
      release()
      await rm(work, { recursive: true, force: true })
    }
  }

  /** Writes a match's chapters into its clip: a copy with them (no stream encoded again), renamed over it. */
  private async writeChapters(runner: FfmpegRunner, clipPath: string, chapters: readonly Chapter[], duration: number, work: string): Promise<void> {
    const metadata = join(work, 'chapters.ffmetadata')
    const withChapters = join(work, 'with-chapters.mp4')
    await writeFile(metadata, chapterMetadata(chapters, duration))
    try {
      await runner.run(chapterArgs(clipPath, metadata, withChapters), Math.max(60_000, duration * 1_000))
      await rename(withChapters, clipPath)
    } catch (err) {
      await rm(clipPath, { force: true })
      throw err
    }
  }

  /** The smart cut of a plain clip: the ends encoded to match the recording, the rest copied. */
  private async cutByCopy(runner: FfmpegRunner, plan: ClipPlan, encoder: readonly string[], work: string): Promise<void> {
    const { sources, offset, duration } = plan
    // Only the first and last segment can be cut inside: the others are copied whole.
    // Their keyframes come from their fragment headers (ffprobe only for a file that has none), and
    // the head and the tail are encoded by one ffmpeg: each process started costs 0.08 CPU-s.
    const ends = [...new Set([sources[0]!.path, sources.at(-1)!.path])]
    const probed = new Map(await Promise.all(ends.map(async (path) => [path, (await readKeyframes(path)) ?? parseKeyframes(await runner.videoPacketFlags(path))] as const)))
    const [frames, seconds] = plan.picture.frameRate.split('/').map(Number)
    const keyframes = new Map([...probed].map(([path, p]) => [path, p.keyframes]))
    const pieces = planSmartCut(sources, offset, duration, keyframes, (seconds ?? 1) / frames!)
    const toEncode = pieces.filter((p) => p.kind === 'encode')
    const encoded = toEncode.map((_, i) => join(work, `piece-${i}.mp4`))
    // A piece is at most a group of pictures (a segment when the keyframes are unknown).
    if (toEncode.length) await runner.run(piecesArgs(toEncode, encoder, encoded), Math.max(60_000, toEncode.reduce((sum, p) => sum + p.to - p.from, 0) * 10_000))
    const start = (path: string) => probed.get(path)?.start ?? 0
    const videoList = join(work, 'video.ffconcat')
    await writeFile(videoList, videoConcatList(pieces, encoded, start))
    let audioList: string | undefined
    if (plan.withAudio) {
      audioList = join(work, 'audio.ffconcat')
      await writeFile(audioList, audioConcatList(sources, offset, duration, start))
    }
    // Copying reads and writes each byte once: a minute of footage takes about a second.
    await runner.run(joinArgs(videoList, audioList, duration, plan.outputPath), Math.max(60_000, duration * 1_000))
  }
}

/** Stores the cut clip; a store that does not take it is a 502 naming the bucket (the SDK's error is logged). */
async function upload(bucket: Bucket, path: string, key: string, log: Logger): Promise<string> {
  try {
    return await bucket.upload(path, key)
  } catch (err) {
    log.error({ err, bucket: bucket.url, key }, 'clip upload failed')
    throw new ClipError(502, `the clip was cut but the bucket ${bucket.url} did not take it`)
  }
}

async function readable(path: string): Promise<boolean> {
  try {
    await access(path, constants.R_OK)
    return true
  } catch {
    return false
  }
}

/** ffprobe's r_frame_rate when it is a real rate, else 25. */
export function usableRate(rate: string | undefined): string {
  const [n, d] = (rate ?? '').split('/').map(Number)
  return n && d && n / d > 0 && n / d <= 240 ? `${n}/${d}` : '25'
}
