// A player's replay end to end: a real server, two real agents recording ffmpeg test cameras, an S3
// server (s3rver) and a GCS-protocol server (FakeGcs) on loopback. Box A is told at once at its
// serverUrl and uploads to s3://; box B cannot be reached at its serverUrl, learns of its replays
// from its polls and uploads to gs://.
import t from 'tap'
import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { openBucket } from '@club/storage'
import { FakeGcs } from './fake-gcs.js'
import { gcsCredentials, s3Credentials, startS3 } from './stores.js'
import { TestAgent, ffprobe, freePort, serverWithTwoCourts, tempDir, testCameraFile, waitFor } from './support.js'

const ADMIN = '/apis/v2/admin/replay-servers'
const REPLAYS = '/apis/v2/replays'

t.test('replays from request to download, through S3 and GCS', async (t) => {
  const dir = tempDir(t)
  const s3 = await startS3(t, dir, 'clips')
  const gcs = new FakeGcs()
  await gcs.start()
  t.teardown(() => gcs.stop())
  // One credentials file serves the server for both stores (their fields do not overlap).
  const credentials = join(dir, 'server-credentials.json')
  writeFileSync(credentials, JSON.stringify({
    ...JSON.parse(readFileSync(s3Credentials(dir, s3.endpoint), 'utf8')),
    ...JSON.parse(readFileSync(gcsCredentials(dir, gcs.url), 'utf8'))
  }))
  // The store honours links signed with the server's key (the server signs the download links).
  gcs.trust((JSON.parse(readFileSync(credentials, 'utf8')) as { private_key: string }).private_key)
  const port = await freePort()
  const { server, admin, staff, member, areaId, courtA, courtB } = await serverWithTwoCourts(t, dir, {
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    REPLAYS_REQUIRE_PACKAGE: 'true',
    REPLAY_REQUEST_TIMEOUT_SECONDS: '8',
    REPLAY_STORAGE_CREDENTIALS: credentials
  }, port)

  // The member's three REPLAY items.
  const template = await server.call('POST', '/apis/v2/templates', staff.authorization, {
    name: '3 replays', type: 'PACKAGE', status: 'PUBLISHED',
    data: { validityDays: 30, items: [{ type: 'REPLAY', displayName: 'Replay', displayNamePlural: 'Replays', totalItems: 3 }] }
  })
  const pkg = await server.call('POST', '/apis/v2/packages', staff.authorization, { template: { id: template.json.id }, user: { id: member.id } })
  t.equal(pkg.status, 201)
  const remaining = async () => (await server.call('GET', `/apis/v2/packages/${pkg.json.id}`, member.authorization)).json.items.items[0].remainingItems

  const feed = pathToFileURL(await testCameraFile(dir)).href
  const boxes = {
    a: new TestAgent({ serverUrl: server.url, dir: join(dir, 'box-a'), deviceId: `e2e-replays-a-${Date.now()}`, httpPort: await freePort(), extra: { uploadAttempts: 20 } }),
    // Its publicUrl is a port nobody listens on: the server's notice cannot reach it.
    b: new TestAgent({ serverUrl: server.url, dir: join(dir, 'box-b'), deviceId: `e2e-replays-b-${Date.now()}`, httpPort: await freePort(), extra: { publicUrl: `http://127.0.0.1:${await freePort()}` } })
  }
  const configs = {
    a: { cloudStorageBucket: 's3://clips/venue-a', cloudCredentialsPath: s3Credentials(join(dir, 'box-a'), s3.endpoint), cameras: [{ id: 'cam-a', feed, isEnabled: true, courtIds: [courtA] }] },
    b: { cloudStorageBucket: 'gs://clips/venue-b', cloudCredentialsPath: gcsCredentials(join(dir, 'box-b'), gcs.url), cameras: [{ id: 'cam-b', feed, isEnabled: true, courtIds: [courtB] }] }
  }
  for (const [name, agent] of Object.entries(boxes)) {
    agent.start()
    t.teardown(() => agent.stop('SIGKILL'))
    // A 500 from a box is explained only by its log.
    agent.showOutputOnFailure(t)
    const box = await waitFor(`box ${name} registered`, async () => (await server.call('GET', `${ADMIN}?deviceId=${agent.settings.deviceId}`, admin)).json.items[0])
    t.equal((await server.call('POST', `${ADMIN}/${box.id}/approve`, admin, { areaId })).status, 200)
    t.equal((await server.call('PUT', `${ADMIN}/${box.id}/config`, admin, configs[name as 'a' | 'b'])).status, 200)
  }
  // Twelve seconds of footage on each before a player asks for the last ten.
  for (const [name, agent] of Object.entries(boxes)) {
    await waitFor(`footage on box ${name}`, () => agent.finishedSegments(`cam-${name}`).length >= 6)
  }

  const ask = (court: string, body: object = {}) => server.call('POST', REPLAYS, member.authorization, { court: { id: court }, seconds: 10, ...body })
  const ready = (id: string, timeoutMs = 90_000) =>
    waitFor(`replay ${id} READY`, async () => {
      const { json } = await server.call('GET', `${REPLAYS}/${id}`, member.authorization)
      if (json.status === 'FAILED') throw new Error(`failed: ${json.reason}`)
      return json.status === 'READY' && json
    }, timeoutMs)
  const downloaded = async (replay: { id: string; downloadUrl: string }) => {
    const res = await fetch(replay.downloadUrl)
    t.equal(res.status, 200, 'the downloadUrl answers the clip')
    const path = join(dir, `${replay.id}.mp4`)
    writeFileSync(path, Buffer.from(await res.arrayBuffer()))
    return ffprobe(path)
  }

  await t.test('box A, told at once: READY in s3://, a presigned link to a 10 s MP4, the local clip gone', async (t) => {
    const created = await ask(courtA)
    t.equal(created.status, 201)
    t.equal(created.json.status, 'REQUESTED')
    const replay = await ready(created.json.id)
    t.match(new URL(replay.downloadUrl).searchParams.get('X-Amz-Expires'), '900')
    const probe = await downloaded(replay)
    t.ok(Math.abs(probe.duration - 10) <= 0.5, `ffprobe reads 10 ± 0.5 s (${probe.duration})`)
    t.ok(probe.streams.some((s) => s.codec_type === 'video'))
    t.ok(Math.abs(replay.durationSeconds - 10) <= 0.5)
    await waitFor('the local clip removed', () => !readdirMp4(boxes.a.clipsDir).length)
    t.equal(await remaining(), 2, 'one item used')
    t.notMatch(boxes.a.output, /X-Amz-Signature|S3RVER"/, 'the box logs neither a signature nor a key')
  })

  await t.test('box B, unreachable at its serverUrl: picked up by polling, READY in gs://', async (t) => {
    const created = await ask(courtB)
    t.equal(created.status, 201)
    const replay = await ready(created.json.id)
    t.equal(new URL(replay.downloadUrl).searchParams.get('X-Goog-Algorithm'), 'GOOG4-RSA-SHA256')
    const probe = await downloaded(replay)
    t.ok(Math.abs(probe.duration - 10) <= 0.5, `ffprobe reads 10 ± 0.5 s (${probe.duration})`)
    t.equal(await remaining(), 1)
  })

  await t.test('no footage: FAILED no_footage and the item given back', async (t) => {
    const redemptions = async (): Promise<Array<{ id: string; cancelationDate: string | null }>> =>
      (await server.call('GET', `/apis/v2/packages/${pkg.json.id}`, member.authorization)).json.redemptions.items
    const before = new Set((await redemptions()).map((r) => r.id))
    // Nine minutes ago: within REPLAY_MAX_AGE_SECONDS for a member, before the box began recording. The
    // box may answer no_footage within milliseconds, so the item taken is read from the redemptions
    // afterwards rather than raced for in between.
    const created = await ask(courtA, { end: new Date(Date.now() - 9 * 60_000).toISOString() })
    t.equal(created.status, 201)
    const failed = await waitFor('FAILED', async () => {
      const { json } = await server.call('GET', `${REPLAYS}/${created.json.id}`, member.authorization)
      return json.status === 'FAILED' && json
    })
    t.equal(failed.reason, 'no_footage')
    const taken = (await redemptions()).filter((r) => !before.has(r.id))
    t.equal(taken.length, 1, 'an item was taken for it')
    t.ok(taken[0]?.cancelationDate, 'and its redemption cancelled')
    t.equal(await remaining(), 1, 'given back')
  })

  await t.test('the bucket down, then up: READY after retries', async (t) => {
    await s3.stop()
    const created = await ask(courtA)
    await waitFor('an upload retried', () => boxes.a.output.includes('uploading a replay failed; trying again'))
    t.equal((await server.call('GET', `${REPLAYS}/${created.json.id}`, member.authorization)).json.status, 'UPLOADING')
    await s3.start()
    const replay = await ready(created.json.id)
    const probe = await downloaded(replay)
    t.ok(Math.abs(probe.duration - 10) <= 0.5, `ffprobe reads 10 ± 0.5 s (${probe.duration})`)
  })

  await t.test('box offline: box_unreachable after REPLAY_REQUEST_TIMEOUT_SECONDS, the item given back', async (t) => {
    await boxes.b.stop()
    t.equal(await remaining(), 0)
    // No item left: 402 names it.
    const refused = await ask(courtB)
    t.equal(refused.status, 402)
    t.match(refused.json.message, /REPLAY package item/)
    // A fresh package for this one.
    const more = await server.call('POST', '/apis/v2/packages', staff.authorization, { template: { id: template.json.id }, user: { id: member.id } })
    t.equal(more.status, 201)
    const created = await ask(courtB)
    t.equal(created.status, 201)
    const failed = await waitFor('box_unreachable', async () => {
      const { json } = await server.call('GET', `${REPLAYS}/${created.json.id}`, member.authorization)
      return json.status === 'FAILED' && json
    }, 30_000)
    t.equal(failed.reason, 'box_unreachable')
    const fresh = (await server.call('GET', `/apis/v2/packages/${more.json.id}`, member.authorization)).json
    t.equal(fresh.items.items[0].remainingItems, 3, 'the item is given back')
  })

  // A link signed now for the object's key: whether the store still holds it, whatever links were given out.
  const bucketA = await openBucket('s3://clips/venue-a', { credentialsPath: s3Credentials(dir, s3.endpoint) })
  const stored = async (id: string) => (await fetch(await bucketA.signedUrl(`s3://clips/venue-a/cam-a/${id}.mp4`, { expiresInSeconds: 60, now: new Date() }))).status

  await t.test("a player's DELETE of an s3:// replay: the object leaves the store at once", async (t) => {
    const replay = await ready((await ask(courtA)).json.id)
    t.equal((await server.call('DELETE', `${REPLAYS}/${replay.id}`, member.authorization)).status, 204)
    t.equal(await stored(replay.id), 404, 'gone before any cleanup')
    t.equal((await fetch(replay.downloadUrl)).status, 404)
  })

  await t.test("box A's local API exports a clip to its s3:// bucket, where its replays go", async (t) => {
    const end = new Date(Date.now() - 2000)
    const request = { cameraId: 'cam-a', start: new Date(end.getTime() - 3000).toISOString(), end: end.toISOString() }
    // On disk once the segment written now is finished, however late a loaded machine's ffmpeg is.
    const finished = boxes.a.finishedSegments('cam-a').length
    await waitFor('the interval in finished segments', () => boxes.a.finishedSegments('cam-a').length >= finished + 1)
    const res = await fetch(`${boxes.a.url}/clips`, { method: 'POST', headers: { 'content-type': 'application/json', ...boxes.a.bearer() }, body: JSON.stringify(request) })
    const clip = (await res.json()) as { id: string; location: string }
    t.equal(res.status, 200, JSON.stringify(clip))
    t.equal(clip.location, `s3://clips/venue-a/cam-a/${clip.id}.mp4`, 'below the bucket URL, by camera, as a replay')
    t.equal(await stored(clip.id), 200, 'the store holds it')

    await s3.stop()
    const refused = await fetch(`${boxes.a.url}/clips`, { method: 'POST', headers: { 'content-type': 'application/json', ...boxes.a.bearer() }, body: JSON.stringify(request) })
    t.equal(refused.status, 502, 'the store down: the clip was cut, not stored')
    t.same(await refused.json(), { statusCode: 502, error: 'Bad Gateway', message: 'the clip was cut but the bucket s3://clips/venue-a did not take it' })
    await s3.start()
    t.notMatch(boxes.a.output, /X-Amz-Signature|S3RVER"/, 'the box logs neither a signature nor a key')
  })

  // Last: the takedown takes the footage of those minutes down too (box A deletes its segments, and
  // no replay may overlap them), which the tests before would otherwise ask for.
  await t.test('staff take an s3:// replay down: the object leaves the store at once, the old link answers 404, the replay reads TAKEN_DOWN', async (t) => {
    const replay = await ready((await ask(courtA)).json.id)
    t.equal(await stored(replay.id), 200, 'stored before')
    const refused = await server.call('POST', `/apis/v2/admin/replays/${replay.id}/takedown`, member.authorization, { reason: 'mine' })
    t.equal(refused.status, 403, 'not by a member')
    const done = await server.call('POST', `/apis/v2/admin/replays/${replay.id}/takedown`, staff.authorization, { reason: 'a parent asked' })
    t.equal(done.status, 200)
    t.equal(await stored(replay.id), 404, 'gone from the store at once')
    t.equal((await fetch(replay.downloadUrl)).status, 404, 'the presigned link given out before answers 404')
    const after = (await server.call('GET', `${REPLAYS}/${replay.id}`, member.authorization)).json
    t.equal(after.status, 'TAKEN_DOWN')
    t.notOk('downloadUrl' in after)
    const again = await server.call('POST', REPLAYS, member.authorization, { court: { id: courtA }, seconds: 5, end: replay.end })
    t.equal(again.status, 409, 'the footage went with it: those minutes cannot be asked for again')
    t.match(again.json.message, /was taken down/)
    // Box A deletes its segments of those minutes and confirms; box B (stopped) stays pending.
    const boxA = (await server.call('GET', `${ADMIN}?deviceId=${boxes.a.settings.deviceId}`, admin)).json.items[0]
    const boxB = (await server.call('GET', `${ADMIN}?deviceId=${boxes.b.settings.deviceId}`, admin)).json.items[0]
    const takedowns = `/apis/v2/admin/courts/${courtA}/takedowns`
    const deletions = await waitFor('box A confirms its deletion', async () => {
      const { json } = await server.call('GET', takedowns, staff.authorization)
      const deletions = json.items[0].deletions as Array<{ replayServer: { id: string }; status: string; deletedFiles: number | null }>
      return deletions.find((d) => d.replayServer.id === boxA.id)?.status === 'DELETED' && deletions
    }, 30_000)
    t.ok(deletions.find((d) => d.replayServer.id === boxA.id)!.deletedFiles! > 0, 'box A deleted segments')
    t.equal(deletions.find((d) => d.replayServer.id === boxB.id)?.status, 'PENDING', 'box B, stopped, has not yet')
    const start = Date.parse(replay.start)
    const end = Date.parse(replay.end)
    const left = readdirMp4(join(boxes.a.recordingsDir, 'cam-a')).filter((name) => {
      const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z/.exec(name)!
      const at = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!)
      return at >= start && at < end
    })
    t.same(left, [], 'no segment starting inside those minutes is left on box A')
  })
})

function readdirMp4(dir: string): string[] {
  try {
    return readdirSync(dir).filter((n) => n.endsWith('.mp4'))
  } catch {
    return []
  }
}
