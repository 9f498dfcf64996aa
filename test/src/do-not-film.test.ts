// "Do not film" end to end: a real server, a real agent recording two ffmpeg test cameras of two
// courts. Staff mark one court not to be filmed: the box stops writing that camera's segments for
// the interval (the other goes on), a replay inside it is refused; then the interval is cut short
// to a few seconds, and the camera records again once it ends.
import t from 'tap'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { TestAgent, freePort, serverWithTwoCourts, tempDir, testCameraFile, waitFor } from './support.js'

const ADMIN = '/apis/v2/admin/replay-servers'

/** Every file of a camera's recordings folder with its size: what "writes nothing" is checked against. */
function folderState(dir: string): string {
  try {
    return readdirSync(dir).sort().map((name) => `${name}:${statSync(join(dir, name)).size}`).join('\n')
  } catch {
    return ''
  }
}

t.test('a court marked "do not film": its camera stops for the interval and records again after', async (t) => {
  const dir = tempDir(t)
  const { server, admin, staff, member, areaId, courtA, courtB } = await serverWithTwoCourts(t, dir)
  const feed = pathToFileURL(await testCameraFile(dir)).href
  const agent = new TestAgent({ serverUrl: server.url, dir: join(dir, 'box'), deviceId: `e2e-do-not-film-${Date.now()}`, httpPort: await freePort() })
  agent.start()
  t.teardown(() => agent.stop('SIGKILL'))
  const box = await waitFor('the box registered', async () => (await server.call('GET', `${ADMIN}?deviceId=${agent.settings.deviceId}`, admin)).json.items[0])
  const cameras = [
    { id: 'cam-a', feed, isEnabled: true, courtIds: [courtA] },
    { id: 'cam-b', feed, isEnabled: true, courtIds: [courtB] }
  ]
  // Approved first: a camera's courtIds must be courts of the box's area.
  t.equal((await server.call('POST', `${ADMIN}/${box.id}/approve`, admin, { areaId })).status, 200)
  t.equal((await server.call('PUT', `${ADMIN}/${box.id}/config`, admin, { cameras })).status, 200)
  for (const id of ['cam-a', 'cam-b']) await waitFor(`footage of ${id}`, () => agent.finishedSegments(id).length >= 2)
  const camState = async (id: string) => (await agent.health()).cameras.find((c: { id: string }) => c.id === id)?.state

  // Longer than any machine takes to see the other camera write several segments (2 s each) meanwhile:
  // it is removed below, not waited out.
  const start = new Date()
  const made = await server.call('POST', `/apis/v2/admin/courts/${courtA}/do-not-film`, staff.authorization, {
    start: start.toISOString(), end: new Date(start.getTime() + 3_600_000).toISOString(), reason: 'Junior camp'
  })
  t.equal(made.status, 201, JSON.stringify(made.json))

  await waitFor('cam-a stopped by its next poll', async () => (await camState('cam-a')) === 'stopped')
  t.equal(await camState('cam-b'), 'recording', "the other court's camera goes on")
  const quiet = folderState(join(agent.recordingsDir, 'cam-a'))
  const bBefore = agent.finishedSegments('cam-b').length
  await waitFor('three more segments of cam-b', () => agent.finishedSegments('cam-b').length >= bBefore + 3)
  t.equal(folderState(join(agent.recordingsDir, 'cam-a')), quiet, 'cam-a wrote nothing meanwhile: no new segment, none grew')
  t.match(agent.output, /cameras held off for \W{0,2}do not film/, 'the box logs it')

  const inside = await server.call('POST', '/apis/v2/replays', member.authorization, { court: { id: courtA }, seconds: 5 })
  t.equal(inside.status, 409, 'a replay inside the interval is refused')
  t.match(inside.json.message, /is not filmed from .* \("do not film"\): no replay may overlap it/)

  // The camp ends early: a short interval from now takes the long one's place, so the box learns
  // both in one poll and holds cam-a until the short one ends, by its own clock.
  const end = new Date(Date.now() + 4_000)
  const shortened = await server.call('POST', `/apis/v2/admin/courts/${courtA}/do-not-film`, staff.authorization, {
    start: new Date().toISOString(), end: end.toISOString(), reason: 'Junior camp (ends early)'
  })
  t.equal(shortened.status, 201, JSON.stringify(shortened.json))
  t.equal((await server.call('DELETE', `/apis/v2/admin/courts/${courtA}/do-not-film/${made.json.id}`, staff.authorization)).status, 204)
  const aBefore = agent.finishedSegments('cam-a').length
  const again = await waitFor('cam-a recording again after the interval', async () => {
    const cam = (await agent.health()).cameras.find((c: { id: string }) => c.id === 'cam-a')
    return cam?.state === 'recording' && cam
  })
  // When the box started it, not when this test looked: a slow look proves nothing.
  t.ok(Date.parse(again.runningSince) >= end.getTime() - 1000, `not before the interval ends (${again.runningSince}, the end ${end.toISOString()})`)
  await waitFor('new segments of cam-a', () => agent.finishedSegments('cam-a').length >= aBefore + 2)
  t.pass('cam-a writes segments again')
})
