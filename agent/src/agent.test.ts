// The agent put together, its server away: what its local API answers for footage still being
// written (through Agent.runExport and the decoders' jobs), over a camera folder the test holds just
// after a segment boundary, and a replay cut through Agent.cutReplay over a real ffmpeg recording for
// a stand-in of the server's device routes.
import t from 'tap'
import { createServer } from 'node:http'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BoxHealthReport, replayDeviceRoutes, replayServerDeviceRoutes, type DeviceReplay, type DeviceReplayStatusChange } from '@club/contract'
import { Value } from 'typebox/value'
import { Agent } from './agent.js'
import { boundary, justOpenedFolder, LOW_BITRATE, SEGMENT_SECONDS, testCamera, waitFor } from './clips/recording.fixture.js'
import { loadAgentConfig } from './config.js'
import { StateStore } from './control/state.js'
import { createLogger } from './log.js'
import { FfmpegRunner } from './recorder/runner.js'
import { listSegments } from './recorder/segments.js'
import { tempDir } from './temp-dir.fixture.js'

const TOKEN = 'box-access-token'

/** The server's device routes for replays, as far as the box uses them: the replays listed, the reports taken. */
async function deviceRoutes(t: { teardown(fn: () => unknown): void }) {
  const replays: DeviceReplay[] = []
  const reports: DeviceReplayStatusChange[] = []
  /** The status polls' queries, in order (the box's serverId is sid-1): answered 304, nothing new. */
  const polls: URLSearchParams[] = []
  const prefix = replayDeviceRoutes.setStatus.url.replace(':id/status', '')
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      const answer = (json: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(json))
      const url = new URL(req.url!, 'http://box')
      if (req.method === 'GET' && url.pathname === replayServerDeviceRoutes.status.url.replace(':serverId', 'sid-1')) {
        polls.push(url.searchParams)
        return void res.writeHead(304).end()
      }
      if (req.headers.authorization !== `Bearer ${TOKEN}`) return void res.writeHead(401).end('{}')
      if (req.method === 'GET' && req.url === replayDeviceRoutes.list.url) {
        const waiting = replays.filter((r) => !['READY', 'FAILED'].includes(r.status))
        return answer({ items: waiting, _total: waiting.length, _links: { self: { href: replayDeviceRoutes.list.url } } })
      }
      const replay = replays.find((r) => req.url === `${prefix}${r.id}/status`)
      if (req.method === 'PUT' && replay) {
        const change = JSON.parse(body) as DeviceReplayStatusChange
        reports.push(change)
        replay.status = change.status
        return answer(replay)
      }
      res.writeHead(404).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  const { port } = server.address() as { port: number }
  return { url: `http://127.0.0.1:${port}`, replays, reports, polls }
}

/**
 * An agent approved earlier (its state on disk), recording cam-1 with its server away; stopped when the
 * test ends. `held`: the box does not record cam-1 (disabled) and its folder is the one the test
 * holds just after a boundary (justOpenedFolder), read on that folder's clock.
 */
async function approvedAgent(t: { teardown(fn: () => unknown): void }, held = false, polled = false) {
  const dir = tempDir(t)
  const feed = await testCamera(dir, LOW_BITRATE)
  const camera = held ? { ...feed, isEnabled: false } : feed
  const folder = held ? await justOpenedFolder(join(dir, 'recordings', camera.id), camera) : undefined
  const device = await deviceRoutes(t)
  const stateDir = join(dir, 'state')
  mkdirSync(stateDir)
  mkdirSync(join(dir, 'bucket'))
  // Nobody listens on port 1 (unless `polled`): every poll fails, and the box goes on with what it last approved.
  const settings = {
    serverUrl: polled ? device.url : 'http://127.0.0.1:1', stateDir, recordingsDir: join(dir, 'recordings'), clipsDir: join(dir, 'clips'),
    httpHost: '127.0.0.1', httpPort: 0, segmentSeconds: SEGMENT_SECONDS, replayFlushSeconds: 0.1, logLevel: 'silent',
    releaseKeyPath: join(dir, 'release-key.pem')
  }
  writeFileSync(join(dir, 'agent.json'), JSON.stringify(settings))
  const config = loadAgentConfig(join(dir, 'agent.json'), {})
  new StateStore(stateDir).save({
    // `polled`: registered already, and polling its stand-in every second.
    ...(polled ? { serverId: 'sid-1', pollInterval: 1 } : {}),
    accessToken: TOKEN,
    config: { cameras: [camera], cleanupEnabled: false, apiBaseUrl: device.url, cloudStorageBucket: `file://${join(dir, 'bucket')}` }
  })
  const runner = new FfmpegRunner({ ffmpegPath: 'ffmpeg', ffprobePath: 'ffprobe', stopStepMs: 2_000 })
  const agent = new Agent({
    config, identity: { deviceId: 'agent-test', hostname: 'box', version: '0.0.0-test' }, runner, log: createLogger('silent'), ...(folder ? { clock: folder.clock } : {})
  })
  await agent.start()
  t.teardown(() => agent.stop())
  const call = (path: string, init: RequestInit = {}) =>
    fetch(`${agent.address}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${TOKEN}`, ...(init.body ? { 'content-type': 'application/json' } : {}), ...init.headers }
    })
  const segments = () => listSegments(join(config.recordingsDir, camera.id))
  if (!held) await waitFor('a first finished segment', () => segments().some((s) => s.duration !== undefined))
  return { agent, call, segments, device, runner, folder }
}

t.test("an export of footage still being written: 503 with Retry-After, and the asynchronous export's job keeps when to ask again", async (t) => {
  const box = await approvedAgent(t, true)
  const { openedAt } = box.folder!
  const body = JSON.stringify({ cameraId: 'cam-1', start: new Date(openedAt + 100).toISOString(), end: new Date(openedAt + 1_500).toISOString() })

  // Half a second into the segment, which should be finished at its slot's end plus a keyframe
  // interval (3 s after it opened): 2.5 s from now, so "ask again in 3 s".
  const refused = await box.call('/clips', { method: 'POST', body })
  t.equal(refused.status, 503)
  t.equal(refused.headers.get('retry-after'), '3', 'Retry-After: when the segment should be finished')
  t.same(await refused.json(), {
    statusCode: 503,
    error: 'Service Unavailable',
    message: `the footage of camera cam-1 between ${new Date(openedAt + 100).toISOString()} and ${new Date(openedAt + 1_500).toISOString()} is still being written: ask again in 3 s`
  })

  const queued = await box.call('/clips', { method: 'POST', body, headers: { prefer: 'respond-async' } })
  t.equal(queued.status, 202)
  const { id } = (await queued.json()) as { id: string }
  const job = await waitFor('the export to end', async () => {
    const view = (await (await box.call(`/clips/jobs/${id}`)).json()) as { state: string }
    return (view.state === 'failed' || view.state === 'done') && view
  })
  t.match(job, { state: 'failed', error: { statusCode: 503, error: 'Service Unavailable', message: /is still being written: ask again in 3 s$/ }, retryAfterSeconds: 3 },
    'the job says when to ask again, as Retry-After does')
})

t.test('a replay ending in the segment being written is cut whole once it is finished, and stored', async (t) => {
  const box = await approvedAgent(t)
  const { writing } = await boundary(box)
  const end = writing.start.getTime() + 1_000
  const asked = 2.5
  box.device.replays.push({ id: 'replay-1', kind: 'CLIP', status: 'REQUESTED', cameraId: 'cam-1', start: new Date(end - asked * 1000).toISOString(), end: new Date(end).toISOString() })
  // The server's notice; the box fetches the replay from the device routes.
  t.equal((await box.call('/replay-requests', { method: 'POST' })).status, 202)
  await waitFor('the replay reported READY or FAILED', () => box.device.reports.some((r) => r.status === 'READY' || r.status === 'FAILED'), 30_000)
  t.same(box.device.reports.map((r) => r.status), ['EXPORTING', 'UPLOADING', 'READY'])
  const ready = box.device.reports.at(-1) as Extract<DeviceReplayStatusChange, { status: 'READY' }>
  t.ok(Math.abs(ready.durationSeconds - asked) < 0.15, `the whole interval: ${ready.durationSeconds} s of ${asked} s`)
  const stored = await box.runner.probe(fileURLToPath(ready.location))
  t.ok(Math.abs((stored.duration ?? 0) - asked) < 0.15, `the stored clip as ffprobe reads it: ${stored.duration} s`)
})

t.test("the health report: the camera as its recorder sees it, the recordings' disk and the agent itself", async (t) => {
  const box = await approvedAgent(t)
  const report = await waitFor('cam-1 RECORDING', async () => {
    const report = await box.agent.healthReport()
    return report.cameras[0]?.state === 'RECORDING' && report
  })
  t.ok(Value.Check(BoxHealthReport, report), 'a BoxHealthReport')
  t.match(report.cameras, [{ id: 'cam-1', state: 'RECORDING', problem: null, restarts: 0 }])
  t.ok(Date.parse(report.cameras[0]!.lastSegmentAt!) <= Date.now(), 'its last finished segment')
  const written = box.segments().reduce((sum, s) => sum + s.size, 0)
  t.ok(report.disk.recordingsBytes > 0 && report.disk.recordingsBytes <= written, `the recordings: ${report.disk.recordingsBytes} bytes`)
  t.ok(report.disk.totalBytes >= report.disk.freeBytes && report.disk.freeBytes > 0)
  t.ok(report.disk.hoursKept !== null && report.disk.hoursKept > 0, `hours kept at its rate: ${report.disk.hoursKept}`)
  t.ok(report.memoryBytes > 10e6, 'its resident memory')
})

t.test('a camera disabled in the configuration is DISABLED, and with nothing recording the disk holds no known number of hours', async (t) => {
  const box = await approvedAgent(t, true)
  const report = await box.agent.healthReport()
  t.match(report.cameras, [{ id: 'cam-1', state: 'DISABLED', problem: null }])
  t.equal(report.disk.hoursKept, null)
})

t.test("its polls carry the health report when it is news, and the previous poll's round trip", async (t) => {
  const box = await approvedAgent(t, false, true)
  const reports = () => box.device.polls.filter((q) => q.has('health')).map((q) => JSON.parse(q.get('health')!) as BoxHealthReport)
  await waitFor('a report of cam-1 RECORDING', () => reports().some((r) => r.cameras[0]?.state === 'RECORDING'))
  t.ok(box.device.polls[0]!.has('health'), 'the first poll after the start carries it')
  t.ok(reports().every((r) => Value.Check(BoxHealthReport, r)))
  await waitFor('a poll with nothing new to say', () => box.device.polls.slice(1).some((q) => !q.has('health')))
  t.ok(box.device.polls.slice(1).every((q) => /^\d+$/.test(q.get('roundTripMs') ?? '') && q.get('keySignature')), 'every poll after the first: signed, with the round trip')
})
