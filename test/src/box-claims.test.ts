// A box is who it says it is (issue 32), end to end: a real agent keeps recording while someone
// registers its deviceId again and again, and a box that lost its serverId comes back by its key
// alone, without an admin.
import { generateKeyPairSync } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { TestAgent, TestServer, freePort, tempDir, testCameraFile, waitFor } from './support.js'

const ADMIN = '/apis/v2/admin/replay-servers'
const REGISTER = '/apis/v2/replay-servers/device'
/**
 * How long the registration loop runs: long enough for a few segments and many polls, and at least
 * MIN_LOOP registrations however slow the machine answers them.
 */
const LOOP_MS = 8_000
const MIN_LOOP = 20
const MAX_LOOP = 2_000

t.test('a recording box is not disturbed by registrations of its deviceId, and heals by its key', async (t) => {
  const dir = tempDir(t)
  // Registrations of the loop come from the agent's own address here: the limit (bounding the loop
  // below) must leave room for the box's own registration afterwards.
  const server = new TestServer(dir, { REPLAY_REGISTRATION_RATE_LIMIT_MAX: String(2 * MAX_LOOP) })
  await server.start()
  t.teardown(() => server.stop())
  const admin = await server.admin()
  const areaId = await server.area()
  const camera = await testCameraFile(dir, 'camera.mkv')
  const deviceId = `e2e-claims-${Date.now()}`
  const agent = new TestAgent({ serverUrl: server.url, dir: join(dir, 'box'), deviceId, httpPort: await freePort() })
  agent.start()
  t.teardown(() => agent.stop('SIGKILL'))

  const box = await waitFor('the box registered', async () => (await server.call('GET', `${ADMIN}?deviceId=${deviceId}`, admin)).json.items[0])
  const health = await agent.health()
  t.match(box.keyFingerprint, /^SHA256:/, 'registered with its key')
  t.equal(health.keyFingerprint, box.keyFingerprint, 'the box page shows the fingerprint the console shows')
  t.equal((await server.call('PUT', `${ADMIN}/${box.id}/config`, admin, { cameras: [{ id: 'cam', feed: pathToFileURL(camera).href }] })).status, 200)
  t.equal((await server.call('POST', `${ADMIN}/${box.id}/approve`, admin, { areaId })).status, 200)
  await waitFor('the box recording', () => agent.finishedSegments('cam').length >= 1)
  const serverId = agent.state().serverId

  await t.test('keeps recording while its deviceId is registered again in a loop', async (t) => {
    const before = agent.finishedSegments('cam').length
    // ffmpeg logs "recording" (with its pid) each time the agent starts it for a camera.
    const starts = () => agent.output.split('\n').filter((line) => line.includes('"msg":"recording"') && line.includes('"cameraId":"cam"')).length
    const startsBefore = starts()
    t.ok(startsBefore >= 1, 'the start of its recording is in the log')
    const answers = new Map<number, number>()
    const statuses = new Set<string>()
    const end = Date.now() + LOOP_MS
    for (let i = 0; (Date.now() < end || i < MIN_LOOP) && i < MAX_LOOP; i++) {
      // Without a key, or each time with a new one, and the attacker's own address.
      const publicKey = i % 2 === 0 ? undefined : Buffer.from(generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')
      const res = await fetch(`${server.url}${REGISTER}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ deviceId, serverUrl: 'http://attacker.example/', ...(publicKey ? { publicKey } : {}) })
      })
      answers.set(res.status, (answers.get(res.status) ?? 0) + 1)
      if (i % 10 === 0) statuses.add((await agent.health()).status)
    }
    t.ok((answers.get(200) ?? 0) > 10, `the loop registered (${JSON.stringify([...answers])})`)
    t.same([...statuses], ['APPROVED'], 'the box stayed approved throughout')
    await waitFor('a new segment after the loop', () => agent.finishedSegments('cam').length > before + 1)
    // Not a count of segments per second of the loop: a loaded machine writes them late, not fewer.
    t.equal(starts(), startsBefore, 'it recorded through the loop: ffmpeg was never stopped or started again')
    t.equal(agent.state().serverId, serverId, 'the box kept its serverId')
    const view = (await server.call('GET', `${ADMIN}/${box.id}`, admin)).json
    t.match(view, { status: 'APPROVED', serverUrl: agent.url })
    t.ok(view.claims.length >= 1 && view.claims.length <= 5, `the claims are bounded (${view.claims.length})`)
    t.match(view.claims[0], { sourceIp: '127.0.0.1', serverUrl: 'http://attacker.example/' })
    t.notMatch(agent.output, /registering again/, 'the box never had to register again')
  })

  await t.test('a box that lost its serverId comes back approved by its key alone', async (t) => {
    t.equal(await agent.stop(), 0)
    const statePath = join(agent.stateDir, 'state.json')
    const { serverId: _lost, ...rest } = JSON.parse(readFileSync(statePath, 'utf8'))
    writeFileSync(statePath, JSON.stringify(rest))
    const before = agent.finishedSegments('cam').length
    agent.start()
    await waitFor('registered again', () => agent.state().serverId !== undefined && agent.state().serverId !== serverId)
    const health = await waitFor('approved again', async () => {
      const h = await agent.health()
      return h.status === 'APPROVED' && h.cameras.some((c: { state: string }) => c.state === 'recording') && h
    })
    t.equal(health.keyFingerprint, box.keyFingerprint, 'the same key after the restart')
    await waitFor('recording again', () => agent.finishedSegments('cam').length > before + 1)
    const view = (await server.call('GET', `${ADMIN}/${box.id}`, admin)).json
    t.equal(view.status, 'APPROVED', 'no admin was needed')
    t.notOk(view.claims.some((c: { sameKey: boolean }) => c.sameKey), 'and no claim of its own key was left')
  })
})
