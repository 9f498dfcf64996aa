// Camera settings → ffmpeg arguments. Pure: every decision about what ffmpeg is asked to do is here
// and unit-tested; the processes are run elsewhere.
//
// Recording is stream copy (about 0.001 CPU-s per second of video) because the full correction chain
// re-encoded costs more than a core per camera; corrections are applied where a picture is made
// (clip export, snapshot), so a configuration change also applies to footage already recorded.
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import type { Camera, VideoCodec, AudioCodec } from '@club/contract'

/** Socket timeout for network feeds, so a dead camera ends ffmpeg instead of hanging it. */
export const FEED_TIMEOUT_MICROSECONDS = 10_000_000

/**
 * A value inside a filtergraph: escaped once for the filter's option parser (`\ ' :`) and once more
 * for the graph parser (`\ ' [ ] , ;`), as ffmpeg-filters(1) "Notes on filtergraph escaping" describes.
 */
export function escapeFilterValue(value: string): string {
  const option = value.replace(/[\\':]/g, (c) => `\\${c}`)
  return option.replace(/[\\'[\],;]/g, (c) => `\\${c}`)
}

function num(value: number): string {
  return Number(value.toFixed(6)).toString()
}

/** Degrees (any sign, any turn) → [0, 360). */
export function normalizeDegrees(degrees: number): number {
  return ((degrees % 360) + 360) % 360
}

/**
 * The video filters that turn a camera's raw picture into the corrected one, in order, one filter per
 * setting. Snapshots use it (one frame: the per-filter cost does not matter, the smoother bilinear
 * rotation and bicubic scaling do); exports use `correctedVideo`, which moves each pixel once.
 */
export function correctionFilters(camera: Camera): string[] {
  return [...geometryFilters(camera), ...colourFilters(camera)]
}

/** Lens correction, rotation and scale, each its own filter. */
export function geometryFilters(camera: Camera): string[] {
  const filters: string[] = []
  const k1 = camera.distortion1 ?? 0
  const k2 = camera.distortion2 ?? 0
  if (k1 !== 0 || k2 !== 0) filters.push(`lenscorrection=k1=${num(k1)}:k2=${num(k2)}`)

  const rotation = normalizeDegrees(camera.rotation ?? 0)
  // Quarter turns are pixel moves (transpose, flips): nearly free, and they keep every pixel.
  if (rotation === 90) filters.push('transpose=clock')
  else if (rotation === 180) filters.push('hflip', 'vflip')
  else if (rotation === 270) filters.push('transpose=cclock')
  else if (rotation !== 0) filters.push(`rotate=${num((rotation * Math.PI) / 180)}:fillcolor=black`)

  const scale = camera.scale ?? 1
  // x264 and yuv420p need even sizes.
  if (scale !== 1) filters.push(`scale=trunc(iw*${num(scale)}/2)*2:trunc(ih*${num(scale)}/2)*2`)
  return filters
}

/** Vignette and LUT: what happens to the colours once every pixel is where it belongs. */
export function colourFilters(camera: Camera, options: { floatLut?: boolean } = {}): string[] {
  const filters: string[] = []
  if (camera.vignette !== undefined && camera.vignette > 0) filters.push(`vignette=angle=${num(camera.vignette)}`)
  // lut3d interpolates planar float with SIMD and 8-bit RGB one pixel at a time: about 4x apart here.
  if (camera.lutPath) filters.push(...(options.floatLut ? ['format=gbrpf32le'] : []), `lut3d=file=${escapeFilterValue(camera.lutPath)}`)
  return filters
}

/**
 * Input options for a map: one still picture that remap holds for every frame, read as that file
 * alone whatever its path holds (image2 would take a % in it for a numbered sequence).
 */
export const MAP_INPUT = ['-f', 'image2', '-pattern_type', 'none']

/** Graph labels of the two map inputs (`correctionMaps`' x and y as 16-bit PGM), e.g. `1:v`. */
export interface MapInputs {
  x: string
  y: string
}

/**
 * The camera's picture corrected, as filtergraph chains from `[source]` to `[label]`: `head` first
 * (frame rate, cut), then the geometry, the colours, then `tail`. With `maps` (needed whenever
 * `needsRemap(camera)`) lens, rotation and scale are one `remap`: it takes only 4:4:4 or RGB, so the
 * picture is widened to yuv444p for it and brought back to 4:2:0 at once, where the vignette has half
 * the chroma to darken (8% less CPU for the whole chain) and works on what it always did.
 */
export function correctedVideo(camera: Camera, source: string, label: string, head: string[], tail: string[], maps?: MapInputs): string[] {
  const colours = colourFilters(camera, { floatLut: true })
  if (!maps) return [`[${source}]${[...head, ...geometryFilters(camera), ...colours, ...tail].join(',') || 'null'}[${label}]`]
  return [
    `[${source}]${[...head, 'format=yuv444p'].join(',')}[${label}_src]`,
    `[${label}_src][${maps.x}][${maps.y}]${['remap', 'format=yuv420p', ...colours, ...tail].join(',')}[${label}]`
  ]
}

/** The picture's size after `correctionFilters(camera)`, from the camera's own size. */
export function correctedSize(camera: Camera, width: number, height: number): { width: number; height: number } {
  const rotation = normalizeDegrees(camera.rotation ?? 0)
  const [w, h] = rotation === 90 || rotation === 270 ? [height, width] : [width, height]
  const scale = camera.scale ?? 1
  if (scale === 1) return { width: w, height: h }
  // Same arithmetic as the scale filter's expression above.
  const even = (n: number) => Math.trunc((n * Number(num(scale))) / 2) * 2
  return { width: even(w), height: even(h) }
}

/** Options that must come before `-i` for a feed, by scheme. */
export function feedInputOptions(feed: string): { options: string[]; input: string } {
  const scheme = feed.slice(0, feed.indexOf(':')).toLowerCase()
  const timeout = String(FEED_TIMEOUT_MICROSECONDS)
  switch (scheme) {
    case 'rtsp':
    case 'rtsps':
      return { options: ['-rtsp_transport', 'tcp', '-timeout', timeout], input: feed }
    case 'http':
    case 'https':
      return { options: ['-rw_timeout', timeout], input: feed }
    case 'srt':
      return { options: ['-timeout', timeout], input: feed }
    case 'file':
      // A file stands in for a camera (tests, demos): read in real time, looped forever.
      return { options: ['-re', '-stream_loop', '-1'], input: fileURLToPath(feed) }
    default:
      return { options: [], input: feed }
  }
}

export interface RecordingPlan {
  camera: Camera
  feed: string
  /** The camera's folder; it must exist, the segment muxer does not create it. */
  dir: string
  segmentSeconds: number
  /** Distinguishes this run's files from an earlier run's started in the same second. */
  runId: string
}

export const SEGMENT_FORMAT_OPTIONS = 'movflags=+frag_keyframe+empty_moov+default_base_moof'

/** Continuous recording of one camera into wall-clock-aligned fragmented MP4 segments. */
export function recordingArgs(plan: RecordingPlan): string[] {
  const { options, input } = feedInputOptions(plan.feed)
  const audio = plan.camera.audioCodec === 'none'
    ? ['-an']
    // G.711 and most camera audio cannot go into MP4: AAC always can. The `?` keeps a silent camera valid.
    : ['-map', '0:a:0?', '-c:a', 'aac']
  return [
    '-hide_banner', '-loglevel', 'warning', '-nostats',
    ...options, '-i', input,
    '-map', '0:v:0', '-c:v', 'copy', ...audio,
    '-f', 'segment',
    '-segment_time', String(plan.segmentSeconds),
    '-segment_atclocktime', '1',
    '-reset_timestamps', '1',
    '-segment_format', 'mp4',
    '-segment_format_options', SEGMENT_FORMAT_OPTIONS,
    '-segment_list', join(plan.dir, `segments_${plan.runId}.csv`),
    '-segment_list_type', 'csv',
    // Names carry the UTC start time: the agent runs ffmpeg with TZ=UTC (strftime uses local time).
    '-strftime', '1',
    join(plan.dir, `%Y%m%dT%H%M%SZ_${plan.runId}.mp4`)
  ]
}

/** One JPEG of a recorded frame with the camera's corrections applied. */
export function snapshotArgs(camera: Camera, segmentPath: string, outputPath: string): string[] {
  const filters = correctionFilters(camera)
  return [
    '-hide_banner', '-loglevel', 'error',
    '-i', segmentPath,
    '-map', '0:v:0', '-frames:v', '1',
    ...(filters.length ? ['-vf', filters.join(',')] : []),
    '-q:v', '3', '-f', 'image2', '-c:v', 'mjpeg',
    outputPath
  ]
}

/** Encoder options for a picture made from the camera (a clip): a copy cannot be cut or corrected. */
export function videoEncoder(codec: VideoCodec | undefined, preset = 'veryfast'): string[] {
  return codec === 'hevc'
    ? ['-c:v', 'libx265', '-preset', preset, '-crf', '26', '-tag:v', 'hvc1', '-pix_fmt', 'yuv420p']
    : ['-c:v', 'libx264', '-preset', preset, '-crf', '23', '-pix_fmt', 'yuv420p']
}

export function audioEncoder(codec: AudioCodec | undefined): string[] {
  if (codec === 'none') return ['-an']
  return codec === 'opus' ? ['-c:a', 'libopus', '-b:a', '96k'] : ['-c:a', 'aac', '-b:a', '128k']
}
