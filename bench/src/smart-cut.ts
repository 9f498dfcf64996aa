// The plain cut against its physical limit: the agent's export of a clip with nothing added (a smart
// cut: the packets copied, the partial groups of pictures at the ends encoded again) beside a
// hand-written `ffmpeg -f concat -c copy` of the same interval of the same segments, timed in turns
// in the same run. A minute of 720p25 footage, and an hour.
import { spawnSync } from 'node:child_process'
import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { repoRoot } from './harness.js'

const SEGMENT_SECONDS = 10
/** Where each recording's names begin. */
const RECORDED_AT = Date.UTC(2026, 2, 1, 10, 0, 0)
/** The clips start 5.3 s in: mid-GOP (one keyframe every 2 s), so both ends are encoded. */
const CLIP_START = 5.3

export interface CutRow {
  clip: string
  footageSeconds: number
  /** Median wall seconds of the export (smart cut), and of the concat copy, over the repeats. */
  cutSeconds: number
  copySeconds: number
  timesRealTime: number
  /** Smart cut / concat copy. */
  ratio: number
  cutCpuSeconds: number
  copyCpuSeconds: number
  loadAverage: number
}

interface Exporter {
  export(request: { cameraId: string; start: Date; end: Date; match?: { chapters: [] } }, camera: unknown, config: unknown, correctionError: null): Promise<{ location: string; duration: number }>
}

/** cutime + cstime of this process: the CPU of the ffmpegs and ffprobes it started that have ended. */
export function childrenCpuSeconds(ticks: number): number {
  const stat = readFileSync('/proc/self/stat', 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[13]) + Number(fields[14])) / ticks
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits
const stamp = (ms: number) => `${new Date(ms).toISOString().replace(/[-:]/g, '').slice(0, 15)}Z_r1.mp4`

/**
 * 70 s of 720p25 test pattern with a sine tone (AAC), one keyframe every 2 s, in the recorder's
 * format (10 s fragmented MP4 segments and their CSV list): encoded once into `mediaDir`.
 */
export function cachedSegments(ffmpeg: string, mediaDir: string): Array<{ path: string; duration: number }> {
  const dir = join(mediaDir, 'segments-720p-v1')
  if (!existsSync(dir)) {
    const temporary = `${dir}.${process.pid}.tmp`
    rmSync(temporary, { recursive: true, force: true })
    mkdirSync(temporary, { recursive: true })
    const result = spawnSync(ffmpeg, [
      '-hide_banner', '-loglevel', 'error', '-y',
      '-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=25', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000',
      '-t', '70', '-map', '0:v', '-map', '1:a', '-c:v', 'libx264', '-preset', 'veryfast', '-g', '50', '-pix_fmt', 'yuv420p', '-c:a', 'aac',
      '-f', 'segment', '-segment_time', String(SEGMENT_SECONDS), '-reset_timestamps', '1', '-segment_format', 'mp4',
      '-segment_format_options', 'movflags=+frag_keyframe+empty_moov+default_base_moof',
      '-segment_list', join(temporary, 'list.csv'), '-segment_list_type', 'csv', join(temporary, 'part%05d.mp4')
    ], { stdio: ['ignore', 'ignore', 'pipe'] })
    if (result.status !== 0) throw new Error(`encoding the 720p segments failed: ${result.stderr?.toString()}`)
    renameSync(temporary, dir)
  }
  return readFileSync(join(dir, 'list.csv'), 'utf8').trim().split('\n').map((line) => {
    const [name, start, end] = line.split(',')
    return { path: join(dir, name!), duration: Number(end) - Number(start) }
  })
}

/**
 * A camera folder of `seconds` of footage: the cached segments hard-linked again and again under the
 * names the recorder would give them, with their CSV list (each a valid segment on its own, as its
 * timestamps start at 0). Answers the segments as the exporter will list them.
 */
export function cameraFolder(folder: string, parts: Array<{ path: string; duration: number }>, seconds: number) {
  mkdirSync(folder, { recursive: true })
  const lines: string[] = []
  const segments: Array<{ path: string; start: number; duration: number }> = []
  let at = 0
  for (let i = 0; at < seconds; i++) {
    const part = parts[i % parts.length]!
    // Names say the second each segment begins, as the recorder's do.
    const name = stamp(RECORDED_AT + Math.floor(at) * 1000)
    linkSync(part.path, join(folder, name))
    lines.push(`${name},${at.toFixed(6)},${(at + part.duration).toFixed(6)}`)
    segments.push({ path: join(folder, name), start: Math.floor(at), duration: part.duration })
    at += part.duration
  }
  writeFileSync(join(folder, 'segments_r1.csv'), `${lines.join('\n')}\n`)
  return segments
}

/** The hand-written anchor: the interval's segments joined by the concat demuxer, every packet copied (keyframe-accurate at best). */
function concatCopy(ffmpeg: string, segments: Array<{ path: string; start: number; duration: number }>, from: number, to: number, work: string): void {
  const inside = segments.filter((s) => s.start + s.duration > from && s.start < to)
  const lines = ['ffconcat version 1.0']
  inside.forEach((s, i) => {
    lines.push(`file '${s.path}'`)
    if (i === 0) lines.push(`inpoint ${(from - s.start).toFixed(6)}`)
    if (i === inside.length - 1) lines.push(`outpoint ${(to - s.start).toFixed(6)}`)
  })
  const list = join(work, 'anchor.ffconcat')
  writeFileSync(list, `${lines.join('\n')}\n`)
  const output = join(work, 'anchor.mp4')
  const result = spawnSync(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'concat', '-safe', '0', '-i', list, '-map', '0', '-c', 'copy', '-movflags', '+faststart', output], { stdio: ['ignore', 'ignore', 'pipe'] })
  if (result.status !== 0) throw new Error(`the concat copy failed: ${result.stderr?.toString()}`)
  rmSync(output, { force: true })
}

/** The agent's own exporter and what it needs, from its build (agent/dist). */
async function agentModules() {
  const agentDist = join(repoRoot, 'agent', 'dist')
  const load = async <T>(path: string) => (await import(pathToFileURL(join(agentDist, path)).href)) as T
  return {
    ...(await load<{ ClipExporter: new (options: unknown) => Exporter }>('clips/export.js')),
    ...(await load<{ SegmentLeases: new () => unknown }>('clips/leases.js')),
    ...(await load<{ FfmpegRunner: new (options: unknown) => unknown }>('recorder/runner.js')),
    ...(await load<{ createLogger: (level: string) => unknown }>('log.js'))
  }
}

/**
 * Both rows: a plain 60 s cut of the 720p footage and a plain 60-minute one (the 70 s looped by
 * hard links), each timed `repeat` times in turns with its concat copy; medians.
 */
export async function smartCutRows(options: { ffmpeg: string; mediaDir: string; workDir: string; repeat: number; clockTicks: number; log(line: string): void }): Promise<CutRow[]> {
  const { ffmpeg, mediaDir, workDir, repeat, clockTicks, log } = options
  const { ClipExporter, SegmentLeases, FfmpegRunner, createLogger } = await agentModules()

  const parts = cachedSegments(ffmpeg, mediaDir)
  const rows: CutRow[] = []
  for (const [clip, seconds] of [['plain 60 s cut, 720p25 + AAC', 60], ['plain 60-minute cut, 720p25 + AAC', 3600]] as const) {
    const cameraId = `cam-${seconds}`
    const segments = cameraFolder(join(workDir, 'recordings', cameraId), parts, seconds + CLIP_START + SEGMENT_SECONDS)
    const clipsDir = join(workDir, 'clips')
    mkdirSync(clipsDir, { recursive: true })
    const exporter = new ClipExporter({
      runner: new FfmpegRunner({ ffmpegPath: ffmpeg, ffprobePath: ffmpeg.replace(/ffmpeg$/, 'ffprobe') }),
      recordingsDir: join(workDir, 'recordings'),
      clipsDir,
      segmentSeconds: SEGMENT_SECONDS,
      maxClipSeconds: 4 * 3600,
      leases: new SegmentLeases(),
      bucket: () => Promise.reject(new Error('no bucket in the bench')),
      log: createLogger('silent')
    })
    const camera = { id: cameraId, feed: 'rtsp://bench/stream', isEnabled: true, audioCodec: 'aac' }
    const from = CLIP_START
    const to = CLIP_START + seconds
    const loadAverage = loadavg()[0]!
    const cut: number[] = []
    const copy: number[] = []
    const cutCpu: number[] = []
    const copyCpu: number[] = []
    for (let i = 0; i < repeat; i++) {
      let cpu = childrenCpuSeconds(clockTicks)
      let t = performance.now()
      const made = await exporter.export({ cameraId, start: new Date(RECORDED_AT + from * 1000), end: new Date(RECORDED_AT + to * 1000) }, camera, { cameras: [camera] }, null)
      cut.push((performance.now() - t) / 1000)
      cutCpu.push(childrenCpuSeconds(clockTicks) - cpu)
      if (Math.abs(made.duration - seconds) > 0.1) throw new Error(`the ${clip} lasts ${made.duration} s`)
      rmSync(new URL(made.location).pathname, { force: true })

      cpu = childrenCpuSeconds(clockTicks)
      t = performance.now()
      concatCopy(ffmpeg, segments, from, to, workDir)
      copy.push((performance.now() - t) / 1000)
      copyCpu.push(childrenCpuSeconds(clockTicks) - cpu)
    }
    const row: CutRow = {
      clip,
      footageSeconds: seconds,
      cutSeconds: round(median(cut)),
      copySeconds: round(median(copy)),
      timesRealTime: round(seconds / median(cut), 1),
      ratio: round(median(cut) / median(copy)),
      cutCpuSeconds: round(median(cutCpu)),
      copyCpuSeconds: round(median(copyCpu)),
      loadAverage: round(loadAverage)
    }
    log(`  ${JSON.stringify({ ...row, cut: cut.map((s) => round(s)), copy: copy.map((s) => round(s)) })}`)
    rows.push(row)
    rmSync(join(workDir, 'recordings', cameraId), { recursive: true, force: true })
  }
  return rows
}

export function cutTable(rows: CutRow[]): Array<Record<string, string | number>> {
  return rows.map((r) => ({
    clip: r.clip,
    'smart cut s': r.cutSeconds,
    'x real time': r.timesRealTime,
    'concat copy s': r.copySeconds,
    'cut / copy': r.ratio,
    'CPU s cut / copy': `${r.cutCpuSeconds} / ${r.copyCpuSeconds}`,
    'load (1 min) at start': r.loadAverage
  }))
}

export interface MatchRow {
  footageSeconds: number
  exportSeconds: number
  cpuSeconds: number
  /** CPU seconds per second of footage: what a 60-minute match costs per second, whatever the load. */
  cpuPerFootageSecond: number
  /** CPU seconds / wall seconds: how much of a core the export held. */
  coresUsed: number
  timesRealTime: number
  loadAverage: number
}

/**
 * A corrected camera's match, `seconds` of the 720p footage (a stand-in for its 60 minutes, which
 * would take half an hour of a core to measure): the exporter's whole re-encode (lens, rotation,
 * scale, vignette, LUT) with one filter thread, every ffmpeg under `nice -n 19` (a wrapper that
 * execs it), as a match export runs beside the recorders and the players' replays.
 */
export async function correctedMatch(options: { ffmpeg: string; mediaDir: string; workDir: string; lut: string; seconds: number; clockTicks: number }): Promise<MatchRow> {
  const { ffmpeg, mediaDir, workDir, lut, seconds, clockTicks } = options
  const { ClipExporter, SegmentLeases, FfmpegRunner, createLogger } = await agentModules()
  const cameraId = 'cam-match'
  cameraFolder(join(workDir, 'recordings', cameraId), cachedSegments(ffmpeg, mediaDir), seconds + CLIP_START + SEGMENT_SECONDS)
  mkdirSync(join(workDir, 'clips'), { recursive: true })
  const niced = join(workDir, 'nice-ffmpeg')
  writeFileSync(niced, `#!/bin/sh\nexec nice -n 19 ${ffmpeg} "$@"\n`, { mode: 0o755 })
  const exporter = new ClipExporter({
    runner: new FfmpegRunner({ ffmpegPath: niced, ffprobePath: ffmpeg.replace(/ffmpeg$/, 'ffprobe') }),
    recordingsDir: join(workDir, 'recordings'),
    clipsDir: join(workDir, 'clips'),
    segmentSeconds: SEGMENT_SECONDS,
    maxClipSeconds: 4 * 3600,
    filterThreads: 1,
    leases: new SegmentLeases(),
    bucket: () => Promise.reject(new Error('no bucket in the bench')),
    log: createLogger('silent')
  })
  const camera = { id: cameraId, feed: 'rtsp://bench/stream', isEnabled: true, audioCodec: 'aac', distortion1: 0.12, distortion2: 0.04, rotation: 3, scale: 0.9, vignette: 0.5, lutPath: lut }
  const loadAverage = loadavg()[0]!
  const cpu = childrenCpuSeconds(clockTicks)
  const t = performance.now()
  // As the box asks for a match: its path (one core, superfast), no chapters to write.
  const made = await exporter.export({ cameraId, start: new Date(RECORDED_AT + CLIP_START * 1000), end: new Date(RECORDED_AT + (CLIP_START + seconds) * 1000), match: { chapters: [] } }, camera, { cameras: [camera] }, null)
  const wall = (performance.now() - t) / 1000
  const used = childrenCpuSeconds(clockTicks) - cpu
  if (Math.abs(made.duration - seconds) > 0.5) throw new Error(`the corrected match lasts ${made.duration} s`)
  rmSync(new URL(made.location).pathname, { force: true })
  rmSync(join(workDir, 'recordings', cameraId), { recursive: true, force: true })
  return {
    footageSeconds: seconds,
    exportSeconds: round(wall),
    cpuSeconds: round(used, 1),
    cpuPerFootageSecond: round(used / seconds, 3),
    coresUsed: round(used / wall),
    timesRealTime: round(seconds / wall),
    loadAverage: round(loadAverage)
  }
}
