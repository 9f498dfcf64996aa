// Test support: a finished recording made in one go, as fast as ffmpeg encodes it rather than in real
// time: the segment files and CSV list the recorder writes (fragmented MP4, same muxer options), named
// by their start on a fixed clock, from a test pattern whose every frame can be made again on its own.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Camera, ReplayServerConfig } from '@club/contract'
import { createLogger } from '../log.js'
import { SEGMENT_FORMAT_OPTIONS } from '../recorder/pipeline.js'
import { FfmpegRunner } from '../recorder/runner.js'
import { listSegments, parseSegmentList } from '../recorder/segments.js'
import { ClipExporter, type ClipRequest } from './export.js'
import { SegmentLeases } from './leases.js'
import { execFileAsync } from './recording.fixture.js'

export interface Footage {
  seconds: number
  segmentSeconds: number
  size: string
  rate: number
  /** Frames between keyframes. */
  gop: number
  audio: boolean
  /** x264's preset: ultrafast has no B-frames, as most cameras; veryfast has them. */
  preset: 'ultrafast' | 'veryfast'
}

/** Where the recording begins: names say this second and the next ones. */
export const RECORDED_AT = Date.UTC(2026, 2, 1, 10, 0, 0)

/** The pattern's source: frame n of it is the same picture every time it is made. */
export const pattern = (footage: Pick<Footage, 'size' | 'rate'>) => `testsrc2=size=${footage.size}:rate=${footage.rate}`

/** Records `footage` into `dir`/recordings/cam-1 and answers an exporter over it. */
export async function recorded(dir: string, footage: Footage, options: { runner?: FfmpegRunner; backgroundRunner?: FfmpegRunner } = {}) {
  const folder = join(dir, 'recordings', 'cam-1')
  mkdirSync(folder, { recursive: true })
  mkdirSync(join(dir, 'clips'), { recursive: true })
  await execFileAsync('ffmpeg', [
    '-hide_banner', '-loglevel', 'error',
    '-f', 'lavfi', '-i', pattern(footage),
    ...(footage.audio ? ['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000'] : []),
    '-t', String(footage.seconds),
    '-map', '0:v', ...(footage.audio ? ['-map', '1:a', '-c:a', 'aac'] : []),
    '-c:v', 'libx264', '-preset', footage.preset, '-g', String(footage.gop), '-pix_fmt', 'yuv420p',
    '-f', 'segment', '-segment_time', String(footage.segmentSeconds), '-reset_timestamps', '1',
    '-segment_format', 'mp4', '-segment_format_options', SEGMENT_FORMAT_OPTIONS,
    '-segment_list', join(folder, 'list.csv'), '-segment_list_type', 'csv',
    join(folder, 'part%05d.mp4')
  ], { maxBuffer: 16 << 20 })
  // Renamed as the recorder names them (the second each begins); the list says their real lengths.
  const lines: string[] = []
  for (const [name, duration] of parseSegmentList(readFileSync(join(folder, 'list.csv'), 'utf8'))) {
    const start = Number(/\d+/.exec(name)![0]) * footage.segmentSeconds
    const stamped = `${new Date(RECORDED_AT + start * 1000).toISOString().replace(/[-:]/g, '').slice(0, 15)}Z_r1.mp4`
    renameSync(join(folder, name), join(folder, stamped))
    lines.push(`${stamped},${start.toFixed(6)},${(start + duration).toFixed(6)}`)
  }
  writeFileSync(join(folder, 'segments_r1.csv'), `${lines.join('\n')}\n`)
  const camera: Camera = { id: 'cam-1', feed: 'rtsp://camera/stream', isEnabled: true, audioCodec: footage.audio ? 'aac' : 'none' }
  const runner = options.runner ?? new FfmpegRunner({ ffmpegPath: 'ffmpeg', ffprobePath: 'ffprobe' })
  const exporter = new ClipExporter({
    runner,
    recordingsDir: join(dir, 'recordings'),
    clipsDir: join(dir, 'clips'),
    segmentSeconds: footage.segmentSeconds,
    maxClipSeconds: 3600,
    ...(options.backgroundRunner ? { backgroundRunner: options.backgroundRunner } : {}),
    leases: new SegmentLeases(),
    bucket: () => Promise.reject(new Error('no bucket in this test')),
    log: createLogger('silent')
  })
  return {
    camera,
    segments: () => listSegments(folder),
    /** Cuts seconds `from` to `to` of the recording; the clip's path. */
    async cut(from: number, to: number, options: { camera?: Camera; config?: Partial<ReplayServerConfig>; match?: ClipRequest['match'] } = {}) {
      const c = options.camera ?? camera
      const request: ClipRequest = { cameraId: c.id, start: new Date(RECORDED_AT + from * 1000), end: new Date(RECORDED_AT + to * 1000), whole: true, ...(options.match ? { match: options.match } : {}) }
      const clip = await exporter.export(request, c, { cameras: [c], ...options.config } as ReplayServerConfig, null)
      return new URL(clip.location).pathname
    }
  }
}
