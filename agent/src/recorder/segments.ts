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
 * The length on the timeline of a segment not yet in ffmpeg's list: what the clock says it can hold
 * (at most one segment length), bounded by `written`, the seconds of it readable on disk once measured.
 * ffmpeg flushes a segment in buffer-sized chunks, so for its first seconds (all of a short one at a
 * low bitrate) the file holds no frame at all, and the last segment of a killed run may never hold one.
 */
export function unfinishedLength(segment: Segment, now: number, segmentSeconds: number, written?: number): number {
  const clock = Math.min(Math.max(0, (now - segment.start.getTime()) / 1000), segmentSeconds + 1)
  return written === undefined ? clock : Math.min(clock, written)
}

/**
 * Seconds of whole footage in a segment still being written, from ffprobe's `pts_time,duration_time`
 * lines of its video packets. The last packet read may be cut short (the file ends mid-fragment), so
 * the footage ends where that packet begins.
 */
export function footageInPackets(csv: string): number {
  const packets = csv.split('\n').map((line) => line.split(',').slice(0, 2).map(Number)).filter((p) => p.length === 2 && p.every(Number.isFinite))
  return packets.slice(0, -1).reduce((end, [pts, duration]) => Math.max(end, pts! + duration!), 0)
}

/**
 * When [start, end) reaches into the segment ffmpeg is writing (the newest, not yet in its list): the
 * seconds until it should be finished and its footage readable, at least 1. Otherwise undefined; so
 * too when the newest is unlisted for twice a segment's length: a run that ended without finishing it.
 */
export function secondsUntilWritten(segments: readonly Segment[], end: Date, now: number, segmentSeconds: number): number | undefined {
  const newest = segments.at(-1)
  if (!newest || newest.duration !== undefined || newest.start.getTime() >= end.getTime()) return undefined
  const finished = newest.start.getTime() + (segmentSeconds + 1) * 1000
  if (now >= finished + segmentSeconds * 1000) return undefined
  return Math.max(1, Math.ceil((finished - now) / 1000))
}

/** The recording run a segment belongs to: the suffix of its name (one ffmpeg process), '' without one. */
export function segmentRun(path: string): string {
  return /Z_([0-9a-z]+)\.mp4$/.exec(basename(path))?.[1] ?? ''
}

/** Whether the footage up to an interval's end is on disk, for a caller that takes the whole interval or nothing. */
export type WholeInterval =
  | { action: 'cut' }
  | { action: 'wait'; retryAfterSeconds: number }
  /** The recording ended before the interval's end and nothing more of it will come; `footageEnd` is where it stops. */
  | { action: 'ended'; footageEnd: Date | null }

/**
 * A finished segment with nothing after it is the end of its run only once it has been quiet this
 * long: ffmpeg lists a segment a moment before it opens the next, and a look in between sees no next.
 */
const SUCCESSOR_GRACE_MS = 2_000

/**
 * How short of the interval's end a recording may stop and the interval still count as whole. A name
 * says the second its segment began, not its first frame (up to a keyframe interval later), so the
 * footage's end reckoned from it can be short by about a second when nothing is missing.
 */
const END_TOLERANCE_MS = 1_000

/**
 * Whether the footage of an interval ending at `end` is on disk up to its end (cut), still being
 * written (wait, and when to ask again), or will never be (ended: the recording stopped inside the
 * interval). The segment holding the end decides: finished and reaching it, or followed by more of
 * its run (a split a keyframe off the boundary), it is there; being written, its readable part
 * (`unfinishedLength`) may reach it, else it is waited for as `secondsUntilWritten` says, which gives
 * up on a segment unlisted for twice a segment's length, so the wait is bounded.
 */
export function wholeInterval(
  segments: readonly Segment[],
  end: Date,
  now: number,
  segmentSeconds: number,
  unfinishedLength: (segment: Segment) => number
): WholeInterval {
  const index = segments.findLastIndex((s) => s.start.getTime() < end.getTime())
  const holding = segments[index]
  if (!holding) return { action: 'ended', footageEnd: null }
  const finished = holding.duration !== undefined
  const footageEnd = holding.start.getTime() + (holding.duration ?? unfinishedLength(holding)) * 1000
  if (footageEnd >= end.getTime()) return { action: 'cut' }
  if (!finished) {
    const retryAfterSeconds = index === segments.length - 1 ? secondsUntilWritten(segments, end, now, segmentSeconds) : undefined
    if (retryAfterSeconds !== undefined) return { action: 'wait', retryAfterSeconds }
  } else {
    const run = segmentRun(holding.path)
    if (segments.slice(index + 1).some((s) => segmentRun(s.path) === run)) return { action: 'cut' }
    if (now - holding.mtimeMs < SUCCESSOR_GRACE_MS) return { action: 'wait', retryAfterSeconds: 1 }
  }
  if (footageEnd >= end.getTime() - END_TOLERANCE_MS) return { action: 'cut' }
  return { action: 'ended', footageEnd: new Date(footageEnd) }
}

/**
 * The segments that hold [start, end), with the offset of `start` in the first one. A segment's
 * length is its listed duration, else (still being written) `unfinishedLength`'s; a segment of no
 * length holds nothing and is left out.
 */
export function segmentsCovering(
  segments: readonly Segment[],
  start: Date,
  end: Date,
  unfinishedLength: (segment: Segment) => number
): { sources: ClipSource[]; offset: number } {
  const sources: ClipSource[] = []
  for (const segment of segments) {
    const duration = segment.duration ?? unfinishedLength(segment)
    const segEnd = segment.start.getTime() + duration * 1000
    if (segEnd <= start.getTime() || segment.start.getTime() >= end.getTime() || duration <= 0) continue
    sources.push({ path: segment.path, duration, start: segment.start })
  }
  const offset = sources.length ? Math.max(0, (start.getTime() - sources[0]!.start.getTime()) / 1000) : 0
  return { sources, offset }
}
