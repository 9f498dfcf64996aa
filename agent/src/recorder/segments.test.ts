import t from 'tap'
import {
  footageInPackets, parseSegmentList, secondsUntilWritten, segmentRun, segmentStart, segmentsCovering, unfinishedLength, wholeInterval, type Segment
} from './segments.js'

t.test('segment names carry their UTC start', async (t) => {
  t.equal(segmentStart('20260301T101502Z_mx1.mp4')?.toISOString(), '2026-03-01T10:15:02.000Z')
  t.equal(segmentStart('20260301T101502Z.mp4')?.toISOString(), '2026-03-01T10:15:02.000Z')
  t.equal(segmentStart('segments_mx1.csv'), undefined)
})

t.test("ffmpeg's CSV list gives each segment's real duration", async (t) => {
  const list = parseSegmentList('20260301T101500Z_a.mp4,0.000000,2.127083\n/rec/cam/20260301T101502Z_a.mp4,2.128060,4.127083\nbroken\n')
  t.same([...list.entries()].map(([k, v]) => [k, Number(v.toFixed(4))]), [['20260301T101500Z_a.mp4', 2.1271], ['20260301T101502Z_a.mp4', 1.999]])
})

t.test('the segments covering an interval, and the offset into the first', async (t) => {
  const seg = (s: number, duration?: number): Segment => ({
    path: `/s${s}`, start: new Date(Date.UTC(2026, 2, 1, 10, 0, s)), duration, size: 1, mtimeMs: 0
  })
  const segments = [seg(0, 2), seg(2, 2.1), seg(4, 2), seg(6)]
  const at = (s: number) => new Date(Date.UTC(2026, 2, 1, 10, 0, 0) + s * 1000)
  const covering = segmentsCovering(segments, at(2.5), at(5), () => 1.5)
  t.same(covering.sources.map((s) => [s.path, s.duration]), [['/s2', 2.1], ['/s4', 2]])
  t.equal(covering.offset, 0.5)
  const live = segmentsCovering(segments, at(6.2), at(7), () => 1.5)
  t.same(live.sources.map((s) => [s.path, s.duration]), [['/s6', 1.5]], 'the segment being written counts with its estimate')
  t.same(segmentsCovering(segments, at(60), at(70), () => 1.5).sources, [])
})

const at = (s: number) => new Date(Date.UTC(2026, 2, 1, 10, 0, 0) + s * 1000)
const segment = (s: number, duration?: number): Segment => ({ path: `/s${s}`, start: at(s), duration, size: 28, mtimeMs: 0 })

t.test('a segment being written is as long as the clock says, never more than is readable of it', async (t) => {
  const writing = segment(4)
  t.equal(unfinishedLength(writing, at(5.5).getTime(), 2), 1.5, 'not measured: the clock')
  t.equal(unfinishedLength(writing, at(60).getTime(), 2), 3, 'the clock, within one segment length')
  t.equal(unfinishedLength(writing, at(5.5).getTime(), 2, 0.8), 0.8, 'measured: what ffprobe can read of it')
  t.equal(unfinishedLength(writing, at(5.5).getTime(), 2, 0), 0, 'just opened: nothing yet')
  t.equal(unfinishedLength(writing, at(4.5).getTime(), 2, 1.2), 0.5, 'never past the clock')
})

t.test('a segment being written with nothing readable yet is left out, and the interval starts in the one before', async (t) => {
  const segments = [segment(0, 2), segment(2, 2), segment(4)]
  const now = at(5.5).getTime()
  const nothingYet = (s: Segment) => unfinishedLength(s, now, 2, 0)
  t.same(segmentsCovering(segments, at(4.2), at(5.5), nothingYet).sources, [], 'only the segment being written: no source at all')
  const reaching = segmentsCovering(segments, at(3), at(5.5), nothingYet)
  t.same(reaching.sources.map((s) => [s.path, s.duration]), [['/s2', 2]], 'up to the last finished segment')
  t.equal(reaching.offset, 1)
  const someWritten = segmentsCovering(segments, at(3), at(5.5), (s) => unfinishedLength(s, now, 2, 0.96))
  t.same(someWritten.sources.map((s) => [s.path, s.duration]), [['/s2', 2], ['/s4', 0.96]], 'and what is readable of the one being written')
})

t.test("the footage readable in a segment being written ends where its last packet read begins", async (t) => {
  t.equal(footageInPackets(''), 0, 'ffprobe could read nothing (no index yet)')
  t.equal(footageInPackets('0.000000,0.066667\n'), 0, 'one packet, maybe cut short: nothing whole')
  t.equal(Number(footageInPackets('0.000000,0.066667\n0.066667,0.066667\n0.133333,0.066667\n').toFixed(6)), 0.133334)
  t.equal(Number(footageInPackets('0.000000,0.040000,\n0.040000,0.040000,\nN/A,N/A\n0.080000,0.040000\n').toFixed(6)), 0.08, 'lines without a time are skipped')
})

t.test('an interval reaching into the segment being written: when to ask again', async (t) => {
  const segments = [segment(0, 2), segment(2)]
  t.equal(secondsUntilWritten(segments, at(3), at(2.4).getTime(), 2), 3, 'finished by its start plus a segment length and a second')
  t.equal(secondsUntilWritten(segments, at(3), at(4.9).getTime(), 2), 1, 'at least a second')
  t.equal(secondsUntilWritten(segments, at(2), at(2.4).getTime(), 2), undefined, 'the interval ends before it')
  t.equal(secondsUntilWritten([segment(0, 2), segment(2, 2)], at(3), at(4.5).getTime(), 2), undefined, 'finished')
  t.equal(secondsUntilWritten(segments, at(3), at(8).getTime(), 2), undefined, 'unlisted long after its end: a run that ended without finishing it')
  t.equal(secondsUntilWritten([], at(3), at(2.4).getTime(), 2), undefined)
})

t.test('the run a segment belongs to is the suffix of its name', async (t) => {
  t.equal(segmentRun('/rec/cam-1/20260301T101502Z_mx1.mp4'), 'mx1')
  t.equal(segmentRun('/rec/cam-1/20260301T101502Z.mp4'), '')
})

t.test('a whole interval: cut once the footage up to its end is on disk, wait while it is being written, fail once it never will be', async (t) => {
  // 10 s segments of run r1, as a box records them; mtime: when ffmpeg last wrote the file.
  const seg = (s: number, duration?: number, run = 'r1', mtime = s + (duration ?? 0)): Segment =>
    ({ path: `/rec/${at(s).toISOString().replace(/[-:]/g, '').slice(0, 15)}Z_${run}.mp4`, start: at(s), duration, size: 28, mtimeMs: at(mtime).getTime() })
  const nothingReadable = () => 0
  const whole = (segments: Segment[], end: number, now: number, readable: (s: Segment) => number = nothingReadable) =>
    wholeInterval(segments, at(end), at(now).getTime(), 10, readable)

  // The bug: a replay [5, 15) cut 2.5 s after its end, its end in the segment being written.
  const writing = [seg(0, 10), seg(10)]
  t.same(whole(writing, 15, 17.5), { action: 'wait', retryAfterSeconds: 4 }, 'its end in the segment being written, none of it readable: wait until it is finished')
  t.same(whole(writing, 15, 17.5, () => 5.2), { action: 'cut' }, 'its readable part reaches the end (a high bitrate): cut now')
  t.same(whole(writing, 15, 17.5, () => 3), { action: 'wait', retryAfterSeconds: 4 }, 'readable, but short of the end: wait')
  t.same(whole([seg(0, 10), seg(10, 10), seg(20)], 15, 21.2), { action: 'cut' }, 'finished: cut')

  t.same(whole([seg(0, 10), seg(10, 9.4), seg(20, undefined, 'r1', 20)], 19.8, 22.3), { action: 'cut' },
    'the holding segment is 0.4 s short of its slot, but its run went on: a split a keyframe off the boundary, nothing is missing')
  t.same(whole([seg(0, 10), seg(10, 4, 'r1', 14)], 18, 20.5), { action: 'ended', footageEnd: at(14) },
    'the camera stopped at 14 s (its last segment finished short, nothing after it): ended, not a short clip')
  t.same(whole([seg(0, 10), seg(10, 4, 'r1', 14), seg(16, 10, 'r2')], 18, 30), { action: 'cut' },
    'a new run began before the end: the end is on disk (the gap inside is the run change\'s)')
  t.same(whole([seg(0, 10), seg(10, 4, 'r1', 19.5)], 18, 20.5), { action: 'wait', retryAfterSeconds: 1 },
    'finished a moment ago with nothing after it yet: its successor may be about to appear, ask again in a second')
  t.same(whole([seg(0, 10), seg(10, 7.6, 'r1', 17.6)], 18, 20.5), { action: 'cut' }, 'stopped within a second of the end: whole as far as the names can tell')

  // A run killed mid-segment: its last segment is never listed. The wait ends with secondsUntilWritten's.
  const killed = [seg(0, 10), seg(10)]
  const answers = [17.5, 21, 25, 29, 30.9, 31, 40].map((now) => [now, whole(killed, 15, now, (s) => unfinishedLength(s, at(now).getTime(), 10, 2))])
  t.same(answers, [
    [17.5, { action: 'wait', retryAfterSeconds: 4 }],
    [21, { action: 'wait', retryAfterSeconds: 1 }],
    [25, { action: 'wait', retryAfterSeconds: 1 }],
    [29, { action: 'wait', retryAfterSeconds: 1 }],
    [30.9, { action: 'wait', retryAfterSeconds: 1 }],
    [31, { action: 'ended', footageEnd: at(12) }],
    [40, { action: 'ended', footageEnd: at(12) }]
  ], 'bounded: unlisted twice a segment length after it should have been finished, it is the end of a killed run')
  t.same(whole([seg(0, 10), seg(10), seg(16, 10, 'r2')], 15, 26, () => 2), { action: 'ended', footageEnd: at(12) },
    'an unlisted segment followed by another run is a killed run\'s: nothing to wait for')
  t.same(whole([seg(20, 10)], 15, 40), { action: 'ended', footageEnd: null }, 'no segment begins before the end')
})
