import t from 'tap'
import { parseSegmentList, segmentStart, segmentsCovering, type Segment } from './segments.js'

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
