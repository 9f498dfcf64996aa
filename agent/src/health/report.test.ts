// The report's decisions: each camera's state from the supervisor's facts, the disk's numbers from a
// folder of segments as ffmpeg leaves them, and a report of 64 failing cameras that fits a poll.
import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Value } from 'typebox/value'
import { BoxHealthReport, HEALTH_REPORT_MAX_LENGTH, type Camera } from '@club/contract'
import { recordingsBytes } from '../cleanup.js'
import { idleFacts, type RecorderFacts } from '../recorder/supervisor.js'
import { tempDir } from '../temp-dir.fixture.js'
import { diskSpace } from './gather.js'
import { cameraHealth, diskHealth, encodeHealth, HEALTH_QUERY_MAX_LENGTH, recordingRate } from './report.js'

const now = Date.parse('2026-03-01T10:00:00.000Z')
const camera: Camera = { id: 'cam-1', feed: 'rtsp://admin:s3cret@10.0.0.9/stream', isEnabled: true, audioCodec: 'none' }
const facts = (over: Partial<RecorderFacts> = {}): RecorderFacts => ({
  running: true, wroteThisRun: false, failuresInRow: 0, lastExit: null, restartTimes: [], finished: [], ...over
})
const refused = { at: now - 1_000, code: 1, stderr: 'rtsp://admin:s3cret@10.0.0.9/stream: Connection refused', stalled: false }

t.test("a camera's state from what its supervisor saw", async (t) => {
  const state = (f: RecorderFacts | undefined, cam: Camera = camera, paused = false) => {
    const { state, problem } = cameraHealth(cam, paused, f, now)
    return { state, problem }
  }
  t.same(state(facts()), { state: 'STARTING', problem: null }, 'ffmpeg started, nothing written yet')
  t.same(state(facts({ wroteThisRun: true })), { state: 'RECORDING', problem: null }, 'video written since it started')
  t.same(state(facts({ running: false, failuresInRow: 1, lastExit: refused })), { state: 'FAILED', problem: 'connection refused' }, 'its run ended without recording')
  t.same(state(facts({ failuresInRow: 3, lastExit: refused })), { state: 'FAILED', problem: 'connection refused' }, 'restarted, still nothing written')
  t.same(state(facts({ wroteThisRun: true, failuresInRow: 3, lastExit: refused })), { state: 'RECORDING', problem: null }, 'mended: the restarted run writes')
  t.same(state(facts({ running: false, failuresInRow: 0, lastExit: refused })), { state: 'STARTING', problem: null }, 'a run that had recorded dropped: restarting')
  t.same(
    state(facts({ failuresInRow: 1, lastExit: { at: now, code: 255, stderr: 'video:0kB audio:0kB', stalled: true } })),
    { state: 'FAILED', problem: 'no video from the camera' },
    'stopped by the watchdog, nothing written'
  )
  t.same(state(facts({ failuresInRow: 1, lastExit: { at: now, code: 1, stderr: '', stalled: false } })), { state: 'FAILED', problem: 'ffmpeg exited without recording' })
  // A camera that cut its stream soon after a start: ffmpeg ends normally, its last line a warning of the run.
  const ended = { at: now, code: 0, stderr: '[aac @ 0x55f1] Too many bits 8832.000000 > 6144 per frame requested, clamping to max', stalled: false }
  t.same(state(facts({ running: false, failuresInRow: 1, lastExit: ended })), { state: 'FAILED', problem: 'the camera ended its stream' }, 'the stream ended, not a warning of the run')
  t.same(
    state(facts({ running: false, failuresInRow: 1, lastExit: { ...ended, stderr: 'http://cam/x: Connection reset by peer' } })),
    { state: 'FAILED', problem: 'the camera closed the connection' },
    'a known reason still wins'
  )
  t.same(state(undefined, { ...camera, isEnabled: false }), { state: 'DISABLED', problem: null })
  t.same(state(idleFacts('/nonexistent'), camera, true), { state: 'PAUSED', problem: null }, 'held off by a "do not film" interval')
  t.same(state(undefined), { state: 'STARTING', problem: null }, 'configured, its recorder not started yet')
})

t.test('restarts count the last hour only; lastSegmentAt is when the newest finished segment was written', async (t) => {
  const segment = { path: 'x', start: new Date(now - 12_000), duration: 10, size: 1, mtimeMs: now - 2_000 }
  const report = cameraHealth(camera, false, facts({ wroteThisRun: true, restartTimes: [now - 3_700_000, now - 3_500_000, now - 10_000], finished: [segment] }), now)
  t.equal(report.restarts, 2)
  t.equal(report.lastSegmentAt, new Date(now - 2_000).toISOString())
})

t.test("the disk: free and total of the recordings' filesystem, what the segments take, the hours it holds at the cameras' rate", async (t) => {
  const dir = tempDir(t)
  const folder = join(dir, 'cam-1')
  mkdirSync(folder)
  // Three finished 10 s segments of 1 MB (in ffmpeg's list) and the one being written.
  const names = ['20260301T100000Z_r1.mp4', '20260301T100010Z_r1.mp4', '20260301T100020Z_r1.mp4', '20260301T100030Z_r1.mp4']
  for (const name of names) writeFileSync(join(folder, name), Buffer.alloc(1_000_000))
  writeFileSync(join(folder, 'segments_r1.csv'), names.slice(0, 3).map((n, i) => `${n},${i * 10}.000000,${i * 10 + 10}.000000`).join('\n') + '\n')
  const idle = idleFacts(folder)
  t.equal(idle.finished.length, 3, 'the finished segments, from ffmpeg\'s list')
  t.equal(recordingRate(idle), 360_000_000, '1 MB per 10 s: 360 MB an hour')

  const space = (await diskSpace(dir))!
  const { stdout } = await promisify(execFile)('df', ['-B1', '--output=avail,size', dir])
  const [avail, size] = stdout.trim().split('\n')[1]!.trim().split(/\s+/).map(Number) as [number, number]
  t.equal(space.totalBytes, size, "total: df's size")
  // Others write to the same disk meanwhile: free is df's to within 1% of it.
  t.ok(Math.abs(space.freeBytes - avail) <= size * 0.01, `free ${space.freeBytes} is df's ${avail}`)

  const disk = diskHealth(space, recordingsBytes(dir), recordingRate(idle))
  t.equal(disk.recordingsBytes, 4_000_000, 'every segment, the one being written too')
  t.equal(disk.hoursKept, Math.round(((space.freeBytes + 4_000_000) / 360_000_000) * 10) / 10, '(free + recordings) / bytes per hour')
  t.equal(diskHealth(space, 4_000_000, 0).hoursKept, null, 'nothing records: null')
})

t.test('64 cameras each FAILED with a 200-character problem fit a poll: problems shortened alike', async (t) => {
  const problem = `Nonmatching transport ${'y'.repeat(200)}`.slice(0, 200)
  const report: BoxHealthReport = {
    cameras: Array.from({ length: 64 }, (_, i) => ({ id: `court-${i + 1}-main`, state: 'FAILED', lastSegmentAt: new Date(now).toISOString(), restarts: 59, problem })),
    disk: { freeBytes: 1e12, totalBytes: 2e12, recordingsBytes: 9e11, hoursKept: 1234.5 },
    temperatureCelsius: 71.5,
    memoryBytes: 123_456_789,
    uptimeSeconds: 86_400
  }
  t.ok(JSON.stringify(report).length > HEALTH_REPORT_MAX_LENGTH, 'whole, it would not fit')
  const encoded = encodeHealth(report)!
  t.ok(encoded.length <= HEALTH_REPORT_MAX_LENGTH, `${encoded.length} characters of JSON`)
  t.ok(new URLSearchParams({ health: encoded }).toString().length <= HEALTH_QUERY_MAX_LENGTH + 7, 'and URL-encoded')
  const decoded = JSON.parse(encoded) as BoxHealthReport
  t.ok(Value.Check(BoxHealthReport, decoded), 'a BoxHealthReport')
  t.equal(decoded.cameras.length, 64)
  t.ok(decoded.cameras.every((c) => c.state === 'FAILED' && c.problem !== null && c.problem.length < 200 && problem.startsWith(c.problem.slice(0, -1))), `problems of ${decoded.cameras[0]!.problem!.length} characters`)
  t.equal(encodeHealth({ ...report, cameras: report.cameras.slice(0, 8) }), JSON.stringify({ ...report, cameras: report.cameras.slice(0, 8) }), 'a box of 8 cameras: whole')
  const longIds = { ...report, cameras: report.cameras.map((c, i) => ({ ...c, id: `${i}`.padStart(100, 'c') })) }
  t.equal(encodeHealth(longIds), null, '64 ids of 100 characters do not fit even without problems: the poll goes without')
})
