import t from 'tap'
import { ManualClock } from './clock.js'
import { DecodersBusyError, admitExport, decideSnapshot, mayStartExport, type DecoderLimits, type DecoderState } from './decoders.js'
import { countingDecoders } from './decoders.fixture.js'

const limits: DecoderLimits = { maxDecoders: 2, maxExports: 1, maxQueuedExports: 2, snapshotReuseMs: 1000 }
const state = (extra: Partial<DecoderState> = {}): DecoderState => ({
  snapshotsRunning: new Set(), lastPictureAt: new Map(), exportsRunning: 0, exportsQueued: 0, ...extra
})

t.test('a snapshot: reuse a young picture, join a running process, start if a decoder is free, else refuse', async (t) => {
  const now = 10_000
  t.same(decideSnapshot(state({ lastPictureAt: new Map([['a', now - 999]]) }), 'a', now, limits), { action: 'reuse' })
  t.same(decideSnapshot(state({ lastPictureAt: new Map([['a', now - 1000]]) }), 'a', now, limits), { action: 'start' }, 'a second old is too old')
  t.same(decideSnapshot(state({ snapshotsRunning: new Set(['a', 'b']) }), 'a', now, limits), { action: 'join' }, 'joining needs no decoder')
  t.same(decideSnapshot(state({ snapshotsRunning: new Set(['b']) }), 'a', now, limits), { action: 'start' })
  t.same(decideSnapshot(state({ snapshotsRunning: new Set(['b']), exportsRunning: 1 }), 'a', now, limits), { action: 'refuse', retryAfterSeconds: 1 })
  t.same(decideSnapshot(state({ exportsQueued: 1 }), 'a', now, limits), { action: 'refuse', retryAfterSeconds: 1 }, 'a waiting export goes first')
})

t.test('exports: in order, one at a time, within the box-wide cap, and a bounded queue', async (t) => {
  t.same(admitExport(state(), limits), { action: 'queue', position: 1 })
  t.same(admitExport(state({ exportsQueued: 1 }), limits), { action: 'queue', position: 2 })
  t.same(admitExport(state({ exportsQueued: 2 }), limits), { action: 'refuse', retryAfterSeconds: 30 })
  t.ok(mayStartExport(state({ exportsQueued: 1 }), limits))
  t.notOk(mayStartExport(state({ exportsQueued: 1, exportsRunning: 1 }), limits), 'one at a time')
  t.notOk(mayStartExport(state({ exportsQueued: 1, snapshotsRunning: new Set(['a', 'b']) }), limits), 'the cap holds')
  t.notOk(mayStartExport(state(), limits), 'nothing waits')
})

t.test('30 requests for one camera start one process and all get its picture', async (t) => {
  const { decoders, counts, pendingSnapshots, clock } = countingDecoders()
  const requests = Array.from({ length: 30 }, () => decoders.snapshot('cam-1'))
  t.equal(counts.snapshots, 1)
  const picture = Buffer.from('jpeg-1')
  pendingSnapshots.get('cam-1')!.resolve(picture)
  const pictures = await Promise.all(requests)
  t.ok(pictures.every((p) => p === picture), 'the same picture')
  clock.advance(999)
  t.equal(await decoders.snapshot('cam-1'), picture, 'younger than a second: served again')
  t.equal(counts.snapshots, 1)
  clock.advance(1)
  void decoders.snapshot('cam-1')
  t.equal(counts.snapshots, 2, 'older: a new process')
})

t.test('across cameras never more processes than the cap; a failure is shared and not kept', async (t) => {
  const { decoders, counts, pendingSnapshots } = countingDecoders()
  const results = ['a', 'b', 'c', 'd', 'a', 'b', 'c'].map((id) => decoders.snapshot(id).then((p) => p.toString(), (e: Error) => e))
  t.equal(counts.snapshots, 2)
  t.equal(counts.mostAtOnce, 2)
  pendingSnapshots.get('a')!.resolve(Buffer.from('A'))
  pendingSnapshots.get('b')!.reject(new Error('no frame'))
  const settled = await Promise.all(results)
  t.same(settled.map((r) => (r instanceof DecodersBusyError ? 429 : r instanceof Error ? r.message : r)), ['A', 'no frame', 429, 429, 'A', 'no frame', 429])
  t.equal((settled[2] as DecodersBusyError).retryAfterSeconds, 1)
  void decoders.snapshot('b')
  t.equal(counts.snapshots, 3, 'a failed picture is not served again')
})

t.test('an export queued behind another reports its place; snapshots wait for the queue', async (t) => {
  const { decoders, counts, pendingExports } = countingDecoders()
  const first = decoders.submitExport({ cameraId: 'a' })
  const second = decoders.submitExport({ cameraId: 'b' })
  t.match(first.job, { state: 'running', position: null })
  t.match(second.job, { state: 'queued', position: 1 })
  const third = decoders.submitExport({ cameraId: 'c' })
  t.equal(third.job.position, 2)
  t.throws(() => decoders.submitExport({ cameraId: 'd' }), DecodersBusyError, 'the queue is full')
  t.equal(counts.exports, 1, 'one at a time')
  await t.rejects(decoders.snapshot('x'), DecodersBusyError, 'exports wait: no snapshot jumps the queue')
  t.same(decoders.listJobs().map((j) => [j.cameraId, j.state, j.position]), [['a', 'running', null], ['b', 'queued', 1], ['c', 'queued', 2]])

  pendingExports[0]!.resolve({ cameraId: 'a' })
  t.same(await first.finished, { cameraId: 'a' })
  await new Promise((r) => setImmediate(r))
  t.match(decoders.job(first.job.id), { state: 'done', clip: { cameraId: 'a' } })
  t.match(decoders.job(second.job.id), { state: 'running', position: null })
  t.match(decoders.job(third.job.id), { state: 'queued', position: 1 }, 'moved up')
  pendingExports[1]!.reject(new Error('ffmpeg failed'))
  await t.rejects(second.finished, /ffmpeg failed/)
  await new Promise((r) => setImmediate(r))
  t.match(decoders.job(second.job.id), { state: 'failed', error: { statusCode: 500 } })
  t.equal(counts.mostAtOnce, 1)
})
