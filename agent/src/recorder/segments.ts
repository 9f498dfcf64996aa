// The recorded segments of a camera: names carry the UTC start, ffmpeg's CSV lists carry the real
// duration of each finished segment. Exports and cleanup read them from here.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { basename, join } from 'node:path'

export interface Segment {
  path: string
  start: Date
  /** Seconds; undefined while ffmpeg is still writing it (not yet in its list). */
  duration?: number
  size: number
  mtimeMs: number
}

const NAME = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z(?:_[0-9a-z]+)?\.mp4$/

export function segmentStart(name: string): Date | undefined {
  const m = NAME.exec(name)
  if (!m) return undefined
  const [, y, mo, d, h, mi, s] = m
  return new Date(Date.UTC(+y!, +mo! - 1, +d!, +h!, +mi!, +s!))
}

/** `name,start,end` lines of ffmpeg's CSV segment list → duration by file name. */
export function parseSegmentList(text: string): Map<string, number> {
  const durations = new Map<string, number>()
  for (const line of text.split('\n')) {
    const cells = line.trim().split(',')
    if (cells.length < 3) continue
    const end = Number(cells.pop())
    const start = Number(cells.pop())
    const name = basename(cells.join(',').replace(/^"|"$/g, ''))
    if (Number.isFinite(start) && Number.isFinite(end) && end >= start) durations.set(name, end - start)
  }
  return durations
}

/** Every segment in a camera's folder, oldest first. */
export function listSegments(dir: string): Segment[] {
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return []
  }
  const durations = new Map<string, number>()
  for (const name of names) {
    if (!/^segments_.*\.csv$/.test(name)) continue
    for (const [file, d] of parseSegmentList(readFileSync(join(dir, name), 'utf8'))) durations.set(file, d)
  }
  const segments: Segment[] = []
  for (const name of names.sort()) {
    const start = segmentStart(name)
    if (!start) continue
    const stat = statSync(join(dir, name), { throwIfNoEntry: false })
    if (!stat) continue
    segments.push({ path: join(dir, name), start, duration: durations.get(name), size: stat.size, mtimeMs: stat.mtimeMs })
  }
  return segments
}

export interface ClipSource {
  path: string
  /** Seconds of this segment that belong to the timeline before the next one starts. */
  duration: number
  start: Date
}

/**
 * The segments that hold [start, end), with the offset of `start` in the first one. A segment's
 * length is its listed duration, else (still being written) what the clock says it can hold.
 */
export function segmentsCovering(
  segments: readonly Segment[],
  start: Date,
  end: Date,
  fallbackDuration: (segment: Segment) => number
): { sources: ClipSource[]; offset: number } {
  const sources: ClipSource[] = []
  for (const segment of segments) {
    const duration = segment.duration ?? fallbackDuration(segment)
    const segEnd = segment.start.getTime() + duration * 1000
    if (segEnd <= start.getTime() || segment.start.getTime() >= end.getTime() || duration <= 0) continue
    sources.push({ path: segment.path, duration, start: segment.start })
  }
  const offset = sources.length ? Math.max(0, (start.getTime() - sources[0]!.start.getTime()) / 1000) : 0
  return { sources, offset }
}
