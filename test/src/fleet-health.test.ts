// A box's health end to end: a real server, a real agent recording a network camera (a stand-in the
// test serves over HTTP, as a live Matroska stream). The camera goes away: within a few polls the
// admin view shows it FAILED with its problem in words, and integrators are told once; the camera
// comes back: RECORDING again, told once.
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { Socket } from 'node:net'
import { join } from 'node:path'
import { TestAgent, freePort, serverWithTwoCourts, tempDir, testCameraFile, waitFor } from './support.js'

const ADMIN = '/apis/v2/admin/replay-servers'

/**
 * A network camera: each connection is the test file looped in real time as Matroska (stream copy,
 * so it costs next to nothing). `down()` drops every viewer and refuses new ones, as a camera that
 * lost power does; `up()` answers on the same port again.
 */
class HttpCamera {
  private server?: Server
  private readonly sockets = new Set<Socket>()
  private readonly streams = new Set<ChildProcess>()

  constructor(
    private readonly file: string,
    readonly port: number
  ) {}

  get feed(): string {
    return `http://127.0.0.1:${this.port}/stream.mkv`
  }

  async up(): Promise<void> {
    const server = createServer((req, res) => {
      const ffmpeg = spawn('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-re', '-stream_loop', '-1', '-i', this.file, '-c', 'copy', '-f', 'matroska', 'pipe:1'], {
        stdio: ['ignore', 'pipe', 'ignore']
      })
      this.streams.add(ffmpeg)
      ffmpeg.once('exit', () => this.streams.delete(ffmpeg))
      res.writeHead(200, { 'content-type': 'video/x-matroska' })
      ffmpeg.stdout!.pipe(res)
      res.once('close', () => ffmpeg.kill('SIGKILL'))
    })
    server.on('connection', (socket) => {
      this.sockets.add(socket)
      socket.once('close', () => this.sockets.delete(socket))
    })
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve))
    this.server = server
  }

  async down(): Promise<void> {
    const server = this.server
    this.server = undefined
    if (!server) return
    const closed = new Promise<void>((resolve) => server.close(() => resolve()))
    for (const socket of this.sockets) socket.destroy()
    for (const ffmpeg of this.streams) ffmpeg.kill('SIGKILL')
    await closed
  }
}

t.test("a camera that goes away is FAILED in the admin view with its problem, and RECORDING once it is back; each told once", async (t) => {
  const dir = tempDir(t)
  const { server, admin, areaId, courtA } = await serverWithTwoCourts(t, dir)
  const camera = new HttpCamera(await testCameraFile(dir), await freePort())
  await camera.up()
  t.teardown(() => camera.down())
  const agent = new TestAgent({ serverUrl: server.url, dir: join(dir, 'box'), deviceId: `e2e-health-${Date.now()}`, httpPort: await freePort() })
  agent.showOutputOnFailure(t)
  agent.start()
  t.teardown(() => agent.stop('SIGKILL'))

  const box = await waitFor('the box registered', async () => (await server.call('GET', `${ADMIN}?deviceId=${agent.settings.deviceId}`, admin)).json.items[0])
  t.equal((await server.call('POST', `${ADMIN}/${box.id}/approve`, admin, { areaId })).status, 200)
  t.equal((await server.call('PUT', `${ADMIN}/${box.id}/config`, admin, { cameras: [{ id: 'cam-a', feed: camera.feed, isEnabled: true, courtIds: [courtA] }] })).status, 200)

  const health = async () => (await server.call('GET', `${ADMIN}/${box.id}`, admin)).json.health
  const cameraHealth = async () => (await health())?.cameras.find((c: { id: string }) => c.id === 'cam-a')
  const recording = await waitFor('cam-a RECORDING in the admin view, with its first segment', async () => {
    const cam = await cameraHealth()
    return cam?.state === 'RECORDING' && cam.lastSegmentAt && cam
  })
  t.equal(recording.problem, null)
  t.ok(recording.lastSegmentAt, 'its last segment is known')
  const fine = await health()
  t.same(fine.problems, [], 'a box whose camera records has no problem')
  t.ok(fine.disk.totalBytes > 0 && fine.disk.freeBytes > 0, 'the disk is reported')
  t.ok(Math.abs(fine.clockOffsetSeconds) < 2, `the clock offset is measured (${fine.clockOffsetSeconds} s)`)

  await camera.down()
  // The stream it was reading ends first ("the camera ended its stream" when that run was short);
  // its next start finds nothing listening.
  const failed = await waitFor('cam-a FAILED in the admin view, connection refused', async () => {
    const cam = await cameraHealth()
    return cam?.state === 'FAILED' && /connection refused/i.test(cam.problem) && cam
  })
  t.notMatch(failed.problem, /http:\/\//, 'no feed URL in the problem')
  t.ok((await health()).problems.includes('CAMERA_FAILED'))
  const listed = (await server.call('GET', `${ADMIN}?health=PROBLEM`, admin)).json
  t.same(listed.items.map((b: { id: string }) => b.id), [box.id], 'the list shows it among the boxes with a problem')

  const events = async (type: string) => {
    const page = (await server.call('GET', `/apis/v2/events?types=${type}&ipp=100`, admin)).json
    return page.items.filter((e: { resource: { id: string } }) => e.resource.id === box.id)
  }
  await waitFor('replay_server.camera_failed told', async () => (await events('replay_server.camera_failed')).length > 0)

  await camera.up()
  await waitFor('cam-a RECORDING again', async () => (await cameraHealth())?.state === 'RECORDING')
  await waitFor('replay_server.camera_recovered told', async () => (await events('replay_server.camera_recovered')).length > 0)
  t.equal((await events('replay_server.camera_failed')).length, 1, 'the failure told once')
  t.equal((await events('replay_server.camera_recovered')).length, 1, 'the recovery told once')
})
