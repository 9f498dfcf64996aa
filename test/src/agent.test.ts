// The whole life of a recording box against a real server and real ffmpeg, in order: it registers
// and waits, is approved, records, takes a configuration change, survives ffmpeg being killed and the
// server going away, exports a clip, and stops leaving playable files.
import t from 'tap'
import { basename } from 'node:path'
import { pathToFileURL } from 'node:url'
import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import {
  TestAgent, TestServer, decodeErrors, ffprobe, freePort, logoFile, postrollFile, tempDir, testCameraFile, waitFor
} from './support.js'

const ADMIN = '/apis/v2/admin/replay-servers'

t.test('a recording box from registration to shutdown', async (t) => {
  const dir = tempDir(t)
  const server = new TestServer(dir)
  await server.start()
  t.teardown(() => server.stop())
  const admin = await server.admin()
  const areaId = await server.area()
  const cameraA = await testCameraFile(dir, 'camera-a.mkv')
  const cameraB = await testCameraFile(dir, 'camera-b.mkv')
  const cameraB2 = await testCameraFile(dir, 'camera-b2.mkv', '240x180')
  const deviceId = `e2e-box-${Date.now()}`
  const agent = new TestAgent({ serverUrl: server.url, dir: `${dir}/box`, deviceId, httpPort: await freePort(), extra: { maxClipSeconds: 20 } })
  agent.start()
  t.teardown(() => agent.stop('SIGKILL'))
  agent.showOutputOnFailure(t)

  const cameras = [
    { id: 'cam-a', name: 'Court 1 north', feed: pathToFileURL(cameraA).href, isEnabled: true },
    { id: 'cam-b', name: 'Court 1 south', feed: pathToFileURL(cameraB).href, isEnabled: true }
  ]
  let boxId = ''

  await t.test('registers and waits for approval, recording nothing', async (t) => {
    const box = await waitFor('the box in the admin list', async () => {
      const list = await server.call('GET', `${ADMIN}?deviceId=${deviceId}`, admin)
      return list.json.items.find((b: { deviceId: string }) => b.deviceId === deviceId)
    })
    t.equal(box.status, 'PENDING')
    t.equal(box.displayName, 'E2E box')
    t.equal(box.serverUrl, agent.url)
    boxId = box.id
    const anonymous = await fetch(`${agent.url}/health`)
    t.equal(anonymous.status, 401, 'the local status needs a credential')
    t.equal(((await anonymous.json()) as any).statusCode, 401)
    t.same(await (await fetch(`${agent.url}/health/live`)).json(), { status: 'ok', recording: false }, 'the probe says only that it runs')
    // The installer makes the local password while the agent runs, and signs in with it.
    const password = await agent.newLocalPassword()
    await agent.signIn()
    t.match(agent.cookie, /^club_agent_session=/)
    t.notMatch(agent.output, password, 'the log never shows the local password')
    const health = await waitFor('PENDING in the local status', async () => {
      const h = await agent.health()
      return h.status === 'PENDING' && h
    })
    t.same(health.cameras, [])
    t.equal(health.deviceId, deviceId)
    t.notOk('serverId' in health || 'accessToken' in health, 'health carries no secret')
    await waitFor('the waiting line in the log', () => agent.output.includes('waiting for approval'))
    t.match(agent.output, deviceId, 'the log names the deviceId for the admin')
    t.notOk(existsSync(`${agent.recordingsDir}/cam-a`), 'no recording before approval')
  })

  await t.test('approved: records every camera into playable segments', async (t) => {
    t.equal((await server.call('PUT', `${ADMIN}/${boxId}/config`, admin, { cleanupEnabled: false, cameras })).status, 200)
    t.equal((await server.call('POST', `${ADMIN}/${boxId}/approve`, admin, { areaId })).status, 200)
    for (const id of ['cam-a', 'cam-b']) {
      const segments = await waitFor(`two finished segments of ${id}`, () => agent.finishedSegments(id).length >= 2 && agent.finishedSegments(id))
      const probe = await ffprobe(segments[1]!)
      t.same(probe.streams.map((s) => s.codec_type).sort(), ['audio', 'video'], `${id}: video and audio`)
      t.equal(probe.streams.find((s) => s.codec_type === 'audio')!.codec_name, 'aac', 'G.711 became AAC')
      t.equal(probe.streams.find((s) => s.codec_type === 'video')!.codec_name, 'h264', 'video is stream-copied')
      t.ok(probe.duration > 0.5 && probe.duration < 3.5, `${id}: a segment lasts about 2 s (${probe.duration})`)
      t.match(basename(segments[1]!), /^\d{8}T\d{6}Z_[0-9a-z]+\.mp4$/, 'named by its UTC start')
    }
    const health = await agent.health()
    t.equal(health.status, 'APPROVED')
    t.same(health.cameras.map((c: any) => [c.id, c.state]), [['cam-a', 'recording'], ['cam-b', 'recording']])
    t.notMatch(agent.output, agent.state().serverId!, 'the log never shows the serverId')
    t.notMatch(agent.output, agent.state().accessToken!, 'the log never shows the access token')
  })

  await t.test('a configuration change restarts only the camera whose feed changed', async (t) => {
    const before = (await agent.health()).cameras
    const changed = [
      { ...cameras[0], rotation: 90, scale: 0.5 },
      { ...cameras[1], feed: pathToFileURL(cameraB2).href }
    ]
    t.equal((await server.call('PUT', `${ADMIN}/${boxId}/config`, admin, { cleanupEnabled: false, cameras: changed })).status, 200)
    const after = await waitFor('cam-b on a new process', async () => {
      const cams = (await agent.health()).cameras
      const b = cams.find((c: any) => c.id === 'cam-b')
      return b.pid !== null && b.pid !== before[1].pid && b.state === 'recording' && cams
    })
    t.equal(after[0].pid, before[0].pid, 'cam-a keeps its ffmpeg: corrections alone restart nothing')
    t.equal(after[0].runningSince, before[0].runningSince)
    cameras.splice(0, 2, ...changed)

    t.equal((await fetch(`${agent.url}/cameras/cam-a/snapshot`)).status, 401, 'no picture without a credential')
    const snapshot = await waitFor('a snapshot through the new corrections', async () => {
      const res = await fetch(`${agent.url}/cameras/cam-a/snapshot`, { headers: agent.bearer() })
      return res.status === 200 && res
    })
    t.equal(snapshot.headers.get('content-type'), 'image/jpeg')
    const jpeg = `${dir}/snapshot.jpg`
    writeFileSync(jpeg, Buffer.from(await snapshot.arrayBuffer()))
    const picture = (await ffprobe(jpeg)).streams[0]!
    t.same([picture.codec_name, picture.width, picture.height], ['mjpeg', 120, 160], 'rotated a quarter turn and halved')
    t.equal((await fetch(`${agent.url}/cameras/nope/snapshot`, { headers: agent.bearer() })).status, 404)

    // The admin console's way: through the server, which asks the box with the box's token.
    const proxied = await fetch(`${server.url}${ADMIN}/${boxId}/cameras/cam-a/snapshot`, { headers: { authorization: admin } })
    t.equal(proxied.status, 200)
    t.equal(proxied.headers.get('content-type'), 'image/jpeg')
    writeFileSync(jpeg, Buffer.from(await proxied.arrayBuffer()))
    t.same((await ffprobe(jpeg)).streams.map((s) => [s.codec_name, s.width, s.height]), [['mjpeg', 120, 160]], 'the same corrected picture')
  })

  await t.test('a flood of snapshot requests leaves the recordings alone', async (t) => {
    const before = (await agent.health()).cameras
    const segments = ['cam-a', 'cam-b'].map((id) => agent.finishedSegments(id).length)
    const get = (id: string) => fetch(`${agent.url}/cameras/${id}/snapshot`, { headers: agent.bearer() })
    const answers = await Promise.all([...Array.from({ length: 30 }, () => get('cam-a')), ...Array.from({ length: 10 }, () => get('cam-b'))])
    const statuses = answers.map((r) => r.status)
    t.ok(statuses.every((s) => s === 200 || s === 429), `a picture or 429 (${[...new Set(statuses)].join(', ')})`)
    t.ok(statuses.slice(0, 30).some((s) => s === 200), 'cam-a got its picture')
    const busy = answers.find((r) => r.status === 429)
    if (busy) t.ok(Number(busy.headers.get('retry-after')) >= 1, '429 says when to come back')
    await waitFor('new segments of both cameras after the flood', () =>
      ['cam-a', 'cam-b'].every((id, i) => agent.finishedSegments(id).length >= segments[i]! + 1))
    const after = (await agent.health()).cameras
    t.same(after.map((c: any) => [c.id, c.state, c.pid, c.restarts]), before.map((c: any) => [c.id, 'recording', c.pid, c.restarts]), 'no camera restarted')
  })

  await t.test('a missing LUT is an error state of that camera only', async (t) => {
    const before = (await agent.health()).cameras
    const broken = [{ ...cameras[0], lutPath: `${dir}/missing.cube` }, cameras[1]]
    t.equal((await server.call('PUT', `${ADMIN}/${boxId}/config`, admin, { cleanupEnabled: false, cameras: broken })).status, 200)
    const after = await waitFor('the error in the local status', async () => {
      const cams = (await agent.health()).cameras
      return cams[0].error && cams
    })
    t.match(after[0].error, /LUT .*missing\.cube/)
    t.equal(after[1].error, null)
    t.same(after.map((c: any) => [c.state, c.pid]), before.map((c: any) => ['recording', c.pid]), 'both keep recording on the same processes')
    const snapshot = await fetch(`${agent.url}/cameras/cam-a/snapshot`, { headers: agent.bearer() })
    t.equal(snapshot.status, 422)
    t.match(((await snapshot.json()) as any).message, /LUT/)
    t.equal((await server.call('PUT', `${ADMIN}/${boxId}/config`, admin, { cleanupEnabled: false, cameras })).status, 200)
    await waitFor('the error cleared', async () => (await agent.health()).cameras[0].error === null)
  })

  await t.test('survives its ffmpeg being killed', async (t) => {
    const { pid } = (await agent.health()).cameras[0]
    process.kill(pid, 'SIGKILL')
    const cam = await waitFor('cam-a on a new process', async () => {
      const c = (await agent.health()).cameras[0]
      return c.pid !== null && c.pid !== pid && c.state === 'recording' && c
    })
    t.ok(cam.restarts >= 1)
    const count = agent.finishedSegments('cam-a').length
    await waitFor('new segments after the restart', () => agent.finishedSegments('cam-a').length >= count + 1)
    t.pass('recording goes on')
  })

  await t.test('goes on recording while the server is away, and reconnects', async (t) => {
    await server.stop()
    await waitFor('the agent noticing', async () => (await agent.health()).connected === false)
    const count = agent.finishedSegments('cam-b').length
    await waitFor('segments without the server', () => agent.finishedSegments('cam-b').length >= count + 2)
    const health = await agent.health()
    t.same(health.cameras.map((c: any) => c.state), ['recording', 'recording'])
    await server.start()
    // Backoff starts at 2 s and doubles, so the next try comes at most about as long after the restart
    // as the server was away, which a loaded machine stretches: bounded generously.
    await waitFor('the agent back in touch', async () => (await agent.health()).connected === true, 120_000)
    const box = await server.call('GET', `${ADMIN}/${boxId}`, admin)
    t.equal(box.json.status, 'APPROVED', 'still the same approved box: no new registration')
  })

  await t.test('exports a clip with logo and postroll', async (t) => {
    const bucket = `${dir}/bucket`
    const config = {
      cleanupEnabled: false,
      cameras,
      logoPath: await logoFile(dir),
      logoPlacement: 'bottom-right',
      postrollPath: await postrollFile(dir),
      cloudStorageBucket: pathToFileURL(bucket).href
    }
    t.equal((await server.call('PUT', `${ADMIN}/${boxId}/config`, admin, config)).status, 200)
    const token = agent.state().accessToken!
    const post = (body: unknown, authorization = `Bearer ${token}`) =>
      fetch(`${agent.url}/clips`, { method: 'POST', headers: { 'content-type': 'application/json', authorization }, body: JSON.stringify(body) })

    const end = new Date(Date.now() - 1500)
    const start = new Date(end.getTime() - 3000)
    const request = { cameraId: 'cam-b', start: start.toISOString(), end: end.toISOString() }
    // The segment being written holds footage only up to its last fragment, which on a loaded machine
    // lags the clock by more than any fixed margin: wait until the segment written now is finished,
    // so every second of the interval is on disk and the clip's length can be checked exactly.
    const finished = agent.finishedSegments('cam-b').length
    // cam-a's clip below asks for the same interval: the same holds for its segments.
    const finishedA = agent.finishedSegments('cam-a').length
    await waitFor('the interval in finished segments', () => agent.finishedSegments('cam-b').length >= finished + 1)

    const anonymous = await post(request, '')
    t.equal(anonymous.status, 401)
    t.equal(((await anonymous.json()) as any).statusCode, 401)

    const yesterday = { cameraId: 'cam-b', start: new Date(Date.now() - 86_400_000).toISOString(), end: new Date(Date.now() - 86_390_000).toISOString() }
    const none = await post(yesterday)
    t.equal(none.status, 404, 'no footage in the interval')
    t.match(((await none.json()) as any).message, /no footage/)

    const tooLong = await post({ ...request, start: new Date(end.getTime() - 60_000).toISOString() })
    t.equal(tooLong.status, 400, 'longer than maxClipSeconds')

    // The new configuration (logo, postroll, bucket) reaches the box with its next poll.
    const clip = await waitFor('a clip with the new configuration', async () => {
      const res = await post(request)
      const body = (await res.json()) as any
      if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(body)}`)
      return body.location.startsWith(pathToFileURL(bucket).href) && body
    })
    t.match(clip, { cameraId: 'cam-b', start: request.start, end: request.end })
    const file = new URL(clip.location).pathname
    const probe = await ffprobe(file)
    t.ok(Math.abs(probe.duration - 4) < 0.35, `3 s of footage and 1 s of postroll (${probe.duration})`)
    t.ok(Math.abs(clip.duration - probe.duration) < 0.01, 'the answer gives the duration of the file')
    t.same(probe.streams.map((s) => s.codec_type).sort(), ['audio', 'video'])
    const video = probe.streams.find((s) => s.codec_type === 'video')!
    t.same([video.width, video.height], [240, 180], "the camera's size, postroll scaled to it")
    t.equal(await decodeErrors(file), '', 'the clip decodes cleanly')

    // cam-a turns a quarter and halves its picture: one remap, over maps kept beside the recordings.
    await waitFor("the interval in cam-a's finished segments", () => agent.finishedSegments('cam-a').length >= finishedA + 1)
    const turned = await post({ ...request, cameraId: 'cam-a' })
    const turnedClip = (await turned.json()) as any
    t.equal(turned.status, 200, JSON.stringify(turnedClip))
    const turnedFile = new URL(turnedClip.location).pathname
    const turnedVideo = (await ffprobe(turnedFile)).streams.find((s) => s.codec_type === 'video')!
    t.same([turnedVideo.width, turnedVideo.height], [120, 160], 'rotated a quarter turn and halved, as the snapshot')
    t.equal(await decodeErrors(turnedFile), '', 'the corrected clip decodes cleanly')
    t.same(readdirSync(`${agent.recordingsDir}/.correction-maps`).filter((n) => n.endsWith('.pgm')).length, 2, 'one pair of maps')

    // "The last seconds", asked without waiting: the interval reaches into the segment being written,
    // which holds no frame yet at this camera's bitrate. The clip is cut up to the footage on disk.
    // Ten seconds: more than a segment and however late a loaded machine's ffmpeg finishes the last one.
    const asked = 10
    const now = Date.now()
    const live = await post({ cameraId: 'cam-b', start: new Date(now - asked * 1000).toISOString(), end: new Date(now).toISOString() })
    const liveClip = (await live.json()) as any
    t.equal(live.status, 200, JSON.stringify(liveClip))
    // At most the whole interval (when the look fell right after a boundary) and the postroll, a frame's rounding aside.
    t.ok(liveClip.duration > 2 && liveClip.duration < asked + 1.2, `the footage on disk and 1 s of postroll (${liveClip.duration} s)`)
    t.equal(await decodeErrors(new URL(liveClip.location).pathname), '', 'the clip of the last seconds decodes cleanly')
  })

  await t.test('SIGTERM leaves a valid last segment of every camera', async (t) => {
    const code = await agent.stop('SIGTERM')
    t.equal(code, 0)
    for (const id of ['cam-a', 'cam-b']) {
      const names = readdirSync(`${agent.recordingsDir}/${id}`).filter((n) => n.endsWith('.mp4')).sort()
      const last = `${agent.recordingsDir}/${id}/${names.at(-1)}`
      const probe = await ffprobe(last)
      t.ok(probe.duration > 0, `${id}: the last segment has a duration`)
      t.equal(await decodeErrors(last), '', `${id}: the last segment decodes cleanly`)
    }
    t.match(agent.output, /stopped/)
  })

  await t.test('started again, it resumes with its persisted serverId instead of registering', async (t) => {
    const { serverId } = agent.state()
    agent.output = ''
    agent.start()
    await waitFor('recording again', async () => {
      const h = await agent.health()
      return h.status === 'APPROVED' && h.cameras.every((c: any) => c.state === 'recording')
    })
    t.equal(agent.state().serverId, serverId)
    t.notMatch(agent.output, /registered with the server/)
    const box = await server.call('GET', `${ADMIN}/${boxId}`, admin)
    t.equal(box.json.status, 'APPROVED', 'a registration would have put it back to PENDING')
    t.equal(await agent.stop('SIGTERM'), 0)
  })
})
