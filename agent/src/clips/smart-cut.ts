// A plain clip (no correction, no logo, no postroll) cut at the speed of the disk: the recorded
// packets are copied, and only the partial group of pictures at each end is encoded again, so the cut
// is still frame-accurate (a "smart cut", as LosslessCut and Avidemux make them). Pure: the decisions
// (whether a clip can be cut so, which ranges are encoded and which copied, the concat lists and the
// arguments) are here and unit-tested; export.ts runs them.
import type { Camera } from '@club/contract'
import { correctionFilters } from '../recorder/pipeline.js'
import type { ClipSource } from '../recorder/segments.js'

/** A keyframe of a segment: presentation and decoding time, in seconds on the file's timeline (0 = its start). */
export interface Keyframe {
  pts: number
  dts: number
}

/** What ffprobe says of a recording's video stream, as far as the encoder of the ends must match it. */
export interface SourceVideo {
  codec_name?: string
  profile?: string
  level?: number
  pix_fmt?: string
  time_base?: string
}

/**
 * A range of one segment, in seconds on its timeline: copied packet for packet from `from` (a
 * keyframe, or before the segment's first one) up to `to`, the next keyframe (its decoding time is
 * `stopDts`, where the copy stops) or the segment's end; or encoded again.
 */
export type CutPiece =
  | { kind: 'copy'; path: string; from: number; to: number; stopDts?: number }
  | { kind: 'encode'; path: string; from: number; to: number }

/** Under a millisecond apart, two times are the same instant: far under any frame's duration. */
const SAME = 0.001

/**
 * The encoder options that make the re-encoded ends a continuation of the recording (same codec,
 * profile, level, pixel format, timescale), so the copied packets and the new ones join in one
 * stream; undefined when the recording is not something libx264 can continue (HEVC, 10-bit, 4:2:2):
 * such a clip is encoded whole as before.
 */
export function matchingEncoder(video: SourceVideo): string[] | undefined {
  if (video.codec_name !== 'h264') return undefined
  const profile = { 'Constrained Baseline': 'baseline', Baseline: 'baseline', Main: 'main', High: 'high' }[video.profile ?? '']
  if (!profile || (video.pix_fmt !== 'yuv420p' && video.pix_fmt !== 'yuvj420p')) return undefined
  const timescale = /^1\/(\d+)$/.exec(video.time_base ?? '')?.[1]
  return [
    // A lower CRF than a whole export's: these frames sit between copied ones and should not look worse.
    // ultrafast: at most a group of pictures each end, where decoding from the keyframe before the
    // start already costs as much as the encoding; veryfast spent 0.55 CPU-s an end at 720p, this 0.45
    // (bench/README, "Plain cuts by copy"). Its lack of CABAC is allowed in every profile.
    '-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '18', '-profile:v', profile,
    ...(video.level && video.level > 0 ? ['-level:v', String(video.level)] : []),
    '-pix_fmt', video.pix_fmt,
    // No B-frames: a piece's first frame is then its first in decoding order too, at time 0 of its
    // file with no edit list to read, so it lands where the concat list puts it.
    '-bf', '0',
    // Each frame keeps its recorded time: no frame dropped or repeated to make a constant rate.
    '-fps_mode', 'passthrough',
    ...(timescale ? ['-video_track_timescale', timescale] : [])
  ]
}

/**
 * Whether a clip of this camera with this configuration is a plain cut: nothing to draw on the
 * picture, no postroll, an H.264 clip asked for and the sound (if any) kept as recorded (AAC).
 */
export function isPlainCut(camera: Camera, extras: { logo: boolean; postroll: boolean }): boolean {
  return !extras.logo && !extras.postroll && correctionFilters(camera).length === 0 &&
    camera.videoCodec !== 'hevc' && camera.audioCodec !== 'opus'
}

/**
 * The pieces of a cut of `duration` seconds from `offset` into the first of `sources`. `keyframes`
 * holds the keyframes of the first and the last source (the others are copied whole: a recorded
 * segment begins on a keyframe, as the segment muxer splits a copied stream only there). In the first
 * and last source, what lies before the first keyframe in the interval is encoded (the head), what
 * follows the last keyframe up to the end (the tail) too, and everything between is copied. An
 * interval with no keyframe inside is encoded whole: it is shorter than a group of pictures.
 */
export function planSmartCut(
  sources: readonly ClipSource[],
  offset: number,
  duration: number,
  keyframes: ReadonlyMap<string, readonly Keyframe[]>,
  frameSeconds = 0
): CutPiece[] {
  const pieces: CutPiece[] = []
  forEachPart(sources, offset, duration, (source, from, to, i) => {
    const last = i === sources.length - 1
    const whole = i > 0 && !last && to >= source.duration - SAME
    pieces.push(...(whole ? [{ kind: 'copy' as const, path: source.path, from, to }] : cutOne(source, from, to, keyframes.get(source.path) ?? [], last, frameSeconds)))
  })
  return pieces
}

/** Calls `part` with each source's share of the clip: seconds `from` to `to` on its own timeline. */
function forEachPart(sources: readonly ClipSource[], offset: number, duration: number, part: (source: ClipSource, from: number, to: number, index: number) => void): void {
  let elapsed = 0
  sources.forEach((source, i) => {
    const from = i === 0 ? offset : 0
    const to = micro(Math.min(source.duration, from + duration - elapsed))
    elapsed += to - from
    if (to - from > SAME) part(source, from, to, i)
  })
}

function cutOne(source: ClipSource, from: number, to: number, keyframes: readonly Keyframe[], newest: boolean, frameSeconds: number): CutPiece[] {
  const path = source.path
  // The newest segment may still be growing: its copy always stops at a keyframe, never at its end.
  const toEnd = !newest && to >= source.duration - SAME
  const firstIndex = keyframes.findIndex((k) => k.pts >= from - SAME)
  const first = keyframes[firstIndex]
  // No keyframe before the end (the next one may be the next segment's first): all of it anew.
  if (!first || first.pts >= to - SAME) return [{ kind: 'encode', path, from, to }]
  const pieces: CutPiece[] = []
  // Before the segment's first keyframe there is no frame: the copy may begin at `from` itself.
  const copyFrom = firstIndex === 0 ? Math.min(from, first.pts) : first.pts
  // Less than a frame before the keyframe holds no frame: the clip starts with the keyframe, under a frame late.
  if (copyFrom - from > SAME && copyFrom - from >= frameSeconds - SAME) pieces.push({ kind: 'encode', path, from, to: copyFrom })
  if (toEnd) {
    pieces.push({ kind: 'copy', path, from: copyFrom, to })
    return pieces
  }
  const last = keyframes.findLast((k) => k.pts <= to + SAME)!
  if (last.pts - first.pts > SAME) pieces.push({ kind: 'copy', path, from: copyFrom, to: last.pts, stopDts: last.dts })
  // The tail begins at the last keyframe, or where the copy would have begun when it holds no frame.
  const tailFrom = last.pts - first.pts > SAME ? last.pts : copyFrom
  if (to - tailFrom > SAME) pieces.push({ kind: 'encode', path, from: tailFrom, to })
  return pieces
}

/**
 * The keyframes in ffprobe's JSON of a file's video packets (`packet=pts_time,dts_time,flags`,
 * `format=start_time`), on the file's timeline, and where that timeline starts on its clock.
 */
export function parseKeyframes(json: string): { start: number; keyframes: Keyframe[] } {
  let parsed: { packets?: Array<{ pts_time?: string; dts_time?: string; flags?: string }>; format?: { start_time?: string } }
  try {
    parsed = JSON.parse(json) as typeof parsed
  } catch {
    // Unreadable (a file ffprobe gave up on): no keyframe known, so the part is encoded whole.
    return { start: 0, keyframes: [] }
  }
  const start = Number(parsed.format?.start_time ?? 0) || 0
  const keyframes: Keyframe[] = []
  for (const p of parsed.packets ?? []) {
    const pts = Number(p.pts_time)
    const dts = p.dts_time === undefined ? pts : Number(p.dts_time)
    if (p.flags?.startsWith('K') && Number.isFinite(pts) && Number.isFinite(dts)) keyframes.push({ pts: micro(pts - start), dts: micro(dts - start) })
  }
  return { start, keyframes: keyframes.sort((a, b) => a.pts - b.pts) }
}

const seconds = (n: number) => n.toFixed(6)
/** ffprobe's precision: a microsecond. */
const micro = (n: number) => Math.round(n * 1e6) / 1e6
const quote = (p: string) => `'${p.replace(/'/g, "'\\''")}'`

/**
 * ffmpeg arguments encoding every piece's video (the head and the tail) in one process, piece `i`
 * into `outputPaths[i]`, each from its first frame at or after its `from`: each ffmpeg started costs
 * 0.08 CPU-s before it reads a byte (its libraries), as much as a keyframe probe. One thread each
 * for decoding and encoding: for a group of pictures at most, threads cost more than they give
 * (both 720p ends: 0.46 CPU-s and 0.47 s with one, 0.6 and 0.62 s with ffmpeg's default, bench/README).
 */
export function piecesArgs(pieces: readonly CutPiece[], encoder: readonly string[], outputPaths: readonly string[]): string[] {
  return [
    '-hide_banner', '-loglevel', 'error',
    ...pieces.flatMap((piece) => ['-threads', '1', '-ss', seconds(piece.from), '-i', piece.path]),
    ...pieces.flatMap((piece, i) => [
      '-t', seconds(piece.to - piece.from),
      '-map', `${i}:v:0`, '-an', '-sn', '-dn',
      ...encoder, '-threads', '1',
      outputPaths[i]!
    ])
  ]
}

/**
 * The ffconcat list of the clip's picture: the encoded pieces (`encoded`, their files in plan order)
 * and the copied ranges, each with its duration so the timeline is the recording's. A file's start
 * is its format start time (`start`, seconds, 0 for the recorder's segments): inpoint and outpoint
 * are read on the file's own clock. An encoded piece is read from 0, so a first frame a little after
 * its `from` keeps its place.
 */
export function videoConcatList(pieces: readonly CutPiece[], encoded: readonly string[], start: (path: string) => number = () => 0): string {
  let next = 0
  const lines = ['ffconcat version 1.0']
  for (const piece of pieces) {
    if (piece.kind === 'encode') {
      lines.push(`file ${quote(encoded[next++]!)}`, 'inpoint 0.000000')
    } else {
      const s = start(piece.path)
      lines.push(`file ${quote(piece.path)}`)
      if (piece.from > 0) lines.push(`inpoint ${seconds(s + piece.from)}`)
      // The concat demuxer ends the file at the first packet whose decoding time reaches the outpoint:
      // the next keyframe's, so every frame shown before it (B-frames too) is kept, and none after.
      // The recorder's fragments hold a group of pictures each, its picture before its sound, so
      // no packet of sound past the keyframe is read before the last picture ahead of it.
      if (piece.stopDts !== undefined) lines.push(`outpoint ${seconds(s + piece.stopDts)}`)
    }
    lines.push(`duration ${seconds(piece.to - piece.from)}`)
  }
  return [...lines, ''].join('\n')
}

/**
 * The ffconcat list of the clip's sound, copied whole packets from the one holding the clip's start
 * (an AAC packet is 21 ms at 48 kHz), on the same timeline as the picture. No outpoint: the concat
 * demuxer ends a file at the first packet of any stream past it, and the picture's packets, read
 * ahead of the sound's, would end the sound early; the join stops it at the clip's duration instead.
 */
export function audioConcatList(sources: readonly ClipSource[], offset: number, duration: number, start: (path: string) => number = () => 0): string {
  const lines = ['ffconcat version 1.0']
  forEachPart(sources, offset, duration, (source, from, to) => {
    const s = start(source.path)
    lines.push(`file ${quote(source.path)}`)
    if (from > 0) lines.push(`inpoint ${seconds(s + from)}`)
    lines.push(`duration ${seconds(to - from)}`)
  })
  return [...lines, ''].join('\n')
}

/** ffmpeg arguments joining the picture's list (and the sound's) into the clip of `duration` seconds, every packet copied. */
export function joinArgs(videoList: string, audioList: string | undefined, duration: number, outputPath: string): string[] {
  return [
    '-hide_banner', '-loglevel', 'error',
    // Both lists are on the clip's timeline (0 = its start): kept as they are, not each moved to 0.
    '-copyts',
    '-f', 'concat', '-safe', '0', '-i', videoList,
    ...(audioList ? ['-f', 'concat', '-safe', '0', '-i', audioList] : []),
    '-map', '0:v:0', ...(audioList ? ['-map', '1:a:0'] : []),
    // The concat demuxer gives the sound from the keyframe before its inpoint, up to a group of
    // pictures early, at times before 0. Without -copyts ffmpeg moved that earlier start to 0, and
    // the sound played up to a group of pictures ahead of the picture (0.3 s in the test); now the
    // packets before 0 are dropped (copypriorss 0), and the sound starts within a packet of the clip.
    '-c', 'copy', ...(audioList ? ['-copypriorss:a', '0'] : []), '-t', seconds(duration), '-avoid_negative_ts', 'make_zero',
    '-movflags', '+faststart',
    outputPath
  ]
}
