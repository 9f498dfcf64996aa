// The agent put together with a stand-in of the server's device routes: a takedown in its status
// answer deletes the overlapping segments of the camera filming the court (real files) and is
// confirmed through the device route with the box's token, after which the answer no longer lists it.
import t from 'tap'
import { createServer } from 'node:http'
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { footageTakedownDeviceRoutes, replayDeviceRoutes, type ReplayServerConfig, type ReplayServerStatusAnswer } from '@club/contract'
import { Agent } from './agent.js'
import { waitFor } from './clips/recording.fixture.js'
import { loadAgentConfig } from './config.js'
import { StateStore } from './control/state.js'
import { createLogger } from './log.js'
import { FfmpegRunner } from './recorder/runner.js'
import { tempDir } from './temp-dir.fixture.js'

const TOKEN = 'box-access-token'
const TAKEDOWN = { id: 'td-1', court: { id: 'c1' }, start: '2026-03-01T09:59:50.000Z', end: '2026-03-01T10:00:10.000Z' }

t.test('a takedown in the status answer: the segments go, the confirmation comes with the token, once', async (t) => {
  const dir = tempDir(t)
  // Switched off: nothing records (no ffmpeg), yet what it filmed is the court's footage.
  const config: ReplayServerConfig = { cleanupEnabled: false, cameras: [{ id: 'cam-1', name: 'North', feed: 'rtsp://10.0.0.20/1', isEnabled: false, courtIds: ['c1'] }] }
  const confirmations: Array<{ url: string | undefined; authorization: string | undefined; body: unknown }> = []
  let polls = 0
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      const answer = (json: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(json))
      if (req.method === 'GET' && req.url?.startsWith('/apis/v2/replay-servers/device/sid/status')) {
        polls++
        const status: ReplayServerStatusAnswer = { status: 'APPROVED', accessToken: TOKEN, area: { id: 'a1' }, config, ...(confirmations.length ? {} : { footageTakedowns: [TAKEDOWN] }) }
        return answer(status)
      }
      if (req.headers.authorization !== `Bearer ${TOKEN}`) return void res.writeHead(401).end('{}')
      if (req.method === 'GET' && req.url === replayDeviceRoutes.list.url) return answer({ items: [], _total: 0, _links: { self: { href: req.url } } })
      if (req.method === 'PUT' && req.url === footageTakedownDeviceRoutes.confirm.url.replace(':id', TAKEDOWN.id)) {
        confirmations.push({ url: req.url, authorization: req.headers.authorization, body: JSON.parse(body) })
        return answer({ replayServer: { id: 'box' }, status: 'DELETED', deletedDate: '2026-03-01T10:01:00.000Z', deletedFiles: 2 })
      }
      res.writeHead(404).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`

  const recordings = join(dir, 'recordings')
  mkdirSync(join(recordings, 'cam-1'), { recursive: true })
  for (const name of ['20260301T095500Z_a.mp4', '20260301T100000Z_a.mp4', '20260301T100500Z_a.mp4']) writeFileSync(join(recordings, 'cam-1', name), 'bytes')
  writeFileSync(join(recordings, 'cam-1', 'segments_a.csv'), '20260301T095500Z_a.mp4,0,300\n20260301T100000Z_a.mp4,300,600\n20260301T100500Z_a.mp4,600,900\n')
  const stateDir = join(dir, 'state')
  mkdirSync(stateDir)
  const settings = { serverUrl: url, stateDir, recordingsDir: recordings, clipsDir: join(dir, 'clips'), httpHost: '127.0.0.1', httpPort: 0, logLevel: 'silent', releaseKeyPath: join(dir, 'release-key.pem') }
  writeFileSync(join(dir, 'agent.json'), JSON.stringify(settings))
  // Approved earlier, polling every second.
  new StateStore(stateDir).save({ serverId: 'sid', pollInterval: 1, accessToken: TOKEN, config })
  const runner = new FfmpegRunner({ ffmpegPath: 'ffmpeg', ffprobePath: 'ffprobe', stopStepMs: 2_000 })
  const agent = new Agent({ config: loadAgentConfig(join(dir, 'agent.json'), {}), identity: { deviceId: 'takedown-test', hostname: 'box', version: '0.0.0-test' }, runner, log: createLogger('silent') })
  await agent.start()
  t.teardown(() => agent.stop())

  await waitFor('the confirmation', () => confirmations.length > 0)
  t.same(confirmations, [{ url: `/apis/v2/replay-servers/device/footage-takedowns/${TAKEDOWN.id}/deletion`, authorization: `Bearer ${TOKEN}`, body: { deletedFiles: 2 } }])
  t.same(readdirSync(join(recordings, 'cam-1')).sort(), ['20260301T100500Z_a.mp4', 'segments_a.csv'], 'the two segments overlapping the interval are gone')
  // Two more polls (the answer no longer lists it): nothing sent again.
  const seen = polls
  await waitFor('two more polls', () => polls >= seen + 2)
  t.equal(confirmations.length, 1, 'confirmed once')
})
