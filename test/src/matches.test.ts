// A booking's whole match end to end (issue 49): a real server with MATCH_RECORDING=bookings, a real
// agent filming one court with two cameras into a file:// bucket. A member books the court for the
// next seconds and asks for a replay within them: once the booking ends, the match is
// made, both angles are cut and READY, each the booking's length; the replay is its chapter; the
// participant sees the match, another member does not.
import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { TestAgent, ffprobe, freePort, serverWithTwoCourts, tempDir, testCameraFile, waitFor } from './support.js'

const ADMIN = '/apis/v2/admin/replay-servers'

t.test('a booking on a court filmed by two cameras becomes a match of two angles, its replay a chapter', async (t) => {
  const dir = tempDir(t)
  const port = await freePort()
  const { server, admin, staff, member, areaId, courtA } = await serverWithTwoCourts(t, dir, {
    MATCH_RECORDING: 'bookings',
    MATCH_GRACE_SECONDS: '1'
  }, port)
  const other = await server.user('member')

  const feed = pathToFileURL(await testCameraFile(dir)).href
  const agent = new TestAgent({ serverUrl: server.url, dir: join(dir, 'box'), deviceId: `e2e-match-${Date.now()}`, httpPort: await freePort() })
  agent.showOutputOnFailure(t)
  agent.start()
  t.teardown(() => agent.stop('SIGKILL'))
  const box = await waitFor('the box registered', async () => (await server.call('GET', `${ADMIN}?deviceId=${agent.settings.deviceId}`, admin)).json.items[0])
  t.equal((await server.call('POST', `${ADMIN}/${box.id}/approve`, admin, { areaId })).status, 200)
  const bucket = join(dir, 'bucket')
  const config = {
    cloudStorageBucket: pathToFileURL(bucket).href,
    cameras: [
      { id: 'cam-north', feed, isEnabled: true, courtIds: [courtA] },
      { id: 'cam-south', feed, isEnabled: true, courtIds: [courtA] }
    ]
  }
  t.equal((await server.call('PUT', `${ADMIN}/${box.id}/config`, admin, config)).status, 200)
  // The member books the court before the booking begins (a booking redeemed once it has begun is
  // no match: it would hand over whoever was playing): the next twelve seconds, once both cameras record.
  await waitFor('both cameras recording', () => agent.finishedSegments('cam-north').length >= 2 && agent.finishedSegments('cam-south').length >= 2)
  const template = await server.call('POST', '/apis/v2/templates', staff.authorization, {
    name: 'A booking', type: 'PACKAGE', status: 'PUBLISHED',
    data: { validityDays: 30, items: [{ type: 'BOOKING', displayName: 'Booking', displayNamePlural: 'Bookings', totalItems: 1 }] }
  })
  const pkg = await server.call('POST', '/apis/v2/packages', staff.authorization, { template: { id: template.json.id }, user: { id: member.id } })
  t.equal(pkg.status, 201)
  const start = new Date(Date.now() + 1000)
  const end = new Date(start.getTime() + 12_000)
  const booked = await server.call('POST', `/apis/v2/packages/${pkg.json.id}/redemptions`, member.authorization, {
    type: 'BOOKING',
    target: { booking: { court: { id: courtA }, startDate: start.toISOString(), endDate: end.toISOString() } }
  })
  t.equal(booked.status, 201, 'the court booked')

  // During the match the member asks for the five seconds before end - 3 s: a chapter at 4 s.
  await waitFor('the match nearly over', () => Date.now() >= end.getTime() - 1000)
  const clip = await server.call('POST', '/apis/v2/replays', member.authorization, { court: { id: courtA }, seconds: 5, end: new Date(end.getTime() - 3000).toISOString() })
  t.equal(clip.status, 201, 'the replay asked for during the match')

  const listed = await waitFor('the match made', async () => (await server.call('GET', '/apis/v2/matches', member.authorization)).json.items[0])
  t.same(listed.source, { type: 'BOOKING', redemption: { id: booked.json.id } })
  t.equal(listed.angles.length, 2, 'one angle per camera')
  const match = await waitFor('both angles READY', async () => {
    const { status, json } = await server.call('GET', `/apis/v2/matches/${listed.id}`, member.authorization)
    if (status !== 200) throw new Error(`GET match: ${status} ${JSON.stringify(json)}`)
    if (json.angles.some((a: { status: string }) => a.status === 'FAILED')) throw new Error(`an angle failed: ${JSON.stringify(json.angles)}`)
    return json.status === 'READY' && json
  }, 180_000)
  t.same(match.angles.map((a: { camera: { id: string } }) => a.camera.id).sort(), ['cam-north', 'cam-south'])
  for (const angle of match.angles) {
    t.equal(angle.kind, 'MATCH')
    t.same(angle.match, { id: match.id })
    const res = await fetch(angle.downloadUrl)
    t.equal(res.status, 200, `${angle.camera.id}: its link answers the clip`)
    const path = join(dir, `${angle.id}.mp4`)
    writeFileSync(path, Buffer.from(await res.arrayBuffer()))
    const probe = await ffprobe(path)
    t.ok(Math.abs(probe.duration - 12) <= 1, `${angle.camera.id}: the booking's 12 s within a second (${probe.duration})`)
    const rally = probe.chapters.find((c) => c.title === match.chapters[0].label)
    t.ok(rally && Math.abs(rally.start - match.chapters[0].at) <= 0.1, `${angle.camera.id}: the chapter is in the MP4 (${JSON.stringify(probe.chapters)})`)
  }
  t.equal(match.chapters.length, 1, 'the replay asked for during the match is its chapter')
  t.ok(Math.abs(match.chapters[0].at - 4) <= 1, `at its start, 4 s in (${match.chapters[0].at})`)
  t.same(match.chapters[0].replay, { id: clip.json.id }, 'the participant who asked sees which replay')

  t.equal((await server.call('GET', `/apis/v2/matches/${match.id}`, other.authorization)).status, 404, 'another member: 404')
  t.equal((await server.call('GET', `/apis/v2/replays/${match.angles[0].id}`, other.authorization)).status, 404, "nor an angle's replay")
  t.same((await server.call('GET', '/apis/v2/matches', other.authorization)).json.items, [], 'nor in their list')
  t.equal((await server.call('GET', `/apis/v2/matches/${match.id}`, staff.authorization)).status, 200, 'staff see it')
})
