// When a poll carries the health report: first, on change, as a heartbeat, again when undelivered.
import t from 'tap'
import type { BoxHealthReport, CameraHealthReport } from '@club/contract'
import { HEALTH_HEARTBEAT_MS, healthToSend } from './send.js'

const GB = 1024 ** 3
const camera = (id: string, over: Partial<CameraHealthReport> = {}): CameraHealthReport => ({
  id, state: 'RECORDING', lastSegmentAt: '2026-03-01T10:00:00.000Z', restarts: 0, problem: null, ...over
})
const report = (cameras: CameraHealthReport[], freeBytes = 100 * GB): BoxHealthReport => ({
  cameras,
  disk: { freeBytes, totalBytes: 500 * GB, recordingsBytes: 200 * GB, hoursKept: 40 },
  temperatureCelsius: 51,
  memoryBytes: 90_000_000,
  uptimeSeconds: 600
})
const at = (ms: number) => new Date(Date.parse('2026-03-01T10:00:00.000Z') + ms)
const sent = { report: report([camera('cam-1'), camera('cam-2')]), at: at(0) }

t.test('the first poll after a start carries it', async (t) => {
  t.equal(healthToSend(undefined, report([]), at(0)), true)
})

t.test('unchanged, and within the heartbeat: nothing', async (t) => {
  // Numbers that drift (segments' times, memory, uptime, a few bytes of disk) are not news.
  const later = { ...report([camera('cam-1', { lastSegmentAt: '2026-03-01T10:04:00.000Z', restarts: 1 }), camera('cam-2')], 100 * GB - 10 * 1024 ** 2), memoryBytes: 95_000_000, uptimeSeconds: 899 }
  t.equal(healthToSend(sent, later, at(HEALTH_HEARTBEAT_MS - 1)), false)
})

t.test('a camera whose state or problem changed, or a camera added or removed: at once', async (t) => {
  t.equal(healthToSend(sent, report([camera('cam-1', { state: 'FAILED', problem: 'connection refused' }), camera('cam-2')]), at(1_000)), true, 'state')
  const failed = { report: report([camera('cam-1', { state: 'FAILED', problem: 'connection refused' })]), at: at(0) }
  t.equal(healthToSend(failed, report([camera('cam-1', { state: 'FAILED', problem: '401 from the camera' })]), at(1_000)), true, 'problem')
  t.equal(healthToSend(sent, report([camera('cam-1')]), at(1_000)), true, 'removed')
  t.equal(healthToSend(sent, report([camera('cam-1'), camera('cam-2'), camera('cam-3')]), at(1_000)), true, 'added')
  t.equal(healthToSend(sent, report([camera('cam-1'), camera('cam-3')]), at(1_000)), true, 'replaced')
})

t.test("a camera's first finished segment: at once (its admin view would say none until the heartbeat)", async (t) => {
  const starting = { report: report([camera('cam-1', { lastSegmentAt: null })]), at: at(0) }
  t.equal(healthToSend(starting, report([camera('cam-1')]), at(1_000)), true)
  t.equal(healthToSend(starting, report([camera('cam-1', { lastSegmentAt: null })]), at(1_000)), false, 'still none: nothing new')
})

t.test('free space moving by more than 1% of the disk: at once', async (t) => {
  const cameras = [camera('cam-1'), camera('cam-2')]
  t.equal(healthToSend(sent, report(cameras, 100 * GB - 5 * GB), at(1_000)), false, '1% of 500 GB is 5 GB: not more')
  t.equal(healthToSend(sent, report(cameras, 100 * GB - 6 * GB), at(1_000)), true, 'filling')
  t.equal(healthToSend(sent, report(cameras, 100 * GB + 6 * GB), at(1_000)), true, 'freed by cleanup')
})

t.test('otherwise every five minutes, and whenever the clock went back', async (t) => {
  const same = report([camera('cam-1'), camera('cam-2')])
  t.equal(healthToSend(sent, same, at(HEALTH_HEARTBEAT_MS)), true, 'the heartbeat')
  t.equal(healthToSend(sent, same, at(-60_000)), true, 'a clock set back does not silence it until it catches up')
})

t.test('a report whose poll failed was never sent: the next poll carries it', async (t) => {
  // The poller records a report as sent only once the server answered its poll (poller-http.test.ts).
  const failed = report([camera('cam-1', { state: 'FAILED', problem: 'no such file' }), camera('cam-2')])
  t.equal(healthToSend(sent, failed, at(1_000)), true)
  t.equal(healthToSend(sent, failed, at(31_000)), true, 'still, with the poll after')
  t.equal(healthToSend({ report: failed, at: at(31_000) }, failed, at(61_000)), false, 'until it was delivered')
})
