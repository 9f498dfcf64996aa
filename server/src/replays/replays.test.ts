// Replays through the API: which camera, the request's rules, the box's status answer, each status
// transition the box reports, the download link and its expiry, the package item, the timeout.
import t, { type Test } from 'tap'

type Tap = Test
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { errorOf, testConfig, userWithToken } from '../test-support/app.js'
import { issued, packageTemplate, threeReplays } from '../packages/test-fixtures.js'
import { camera, poll, putConfig, statusUrl } from '../replay-servers/test-helpers.js'
import { DEVICE, REPLAYS, SHA, filmedVenue as setup, storedClip } from './test-helpers.js'
import { boxCallDeps } from '../replay-servers/box-call.js'
import { deviceTokenKey } from '../replay-servers/service.js'
import { notifyReplayServer } from './notify.js'
import { chooseCamera, replayInterval } from './service.js'
import { transitionError } from './device.js'
import { deleteExpiredReplays } from './clips.js'
import { ReplayStorage } from './storage.js'

t.test('chooseCamera: the named camera when it films the court, else the first enabled one that does', async (t) => {
  const boxes = [
    { id: 'b1', config: { cleanupEnabled: false, cameras: [{ id: 'off', feed: 'rtsp://x', isEnabled: false, courtIds: ['c1'] }, { id: 'a', feed: 'rtsp://x', isEnabled: true, courtIds: ['c2'] }] } },
    { id: 'b2', config: { cleanupEnabled: false, cameras: [{ id: 'b', feed: 'rtsp://x', isEnabled: true, courtIds: ['c1', 'c2'] }] } }
  ]
  t.same(chooseCamera(boxes, 'c1', undefined), { replayServerId: 'b2', cameraId: 'b' })
  t.same(chooseCamera(boxes, 'c2', undefined), { replayServerId: 'b1', cameraId: 'a' })
  t.same(chooseCamera(boxes, 'c2', 'b'), { replayServerId: 'b2', cameraId: 'b' })
  t.match(chooseCamera(boxes, 'c1', 'a'), { missing: 'camera a does not film court c1' })
  t.match(chooseCamera(boxes, 'c3', undefined), { missing: /no camera films court c3/ })
})

t.test('replayInterval: default and longest length, end not in the future', async (t) => {
  const now = new Date('2026-03-01T10:00:00Z')
  const settings = { defaultSeconds: 30, maxSeconds: 300 }
  t.same(replayInterval({}, now, settings), { start: new Date('2026-03-01T09:59:30Z'), end: now })
  t.same(replayInterval({ seconds: 10, end: '2026-03-01T09:00:00Z' }, now, settings).start, new Date('2026-03-01T08:59:50Z'))
  t.throws(() => replayInterval({ seconds: 301 }, now, settings), /at most 300 s/)
  t.throws(() => replayInterval({ end: '2026-03-01T10:00:05Z' }, now, settings), /in the future/)
})

t.test('transitionError: forward only, never out of a final status', async (t) => {
  t.equal(transitionError('REQUESTED', 'EXPORTING'), null)
  t.equal(transitionError('REQUESTED', 'FAILED'), null)
  t.match(transitionError('REQUESTED', 'UPLOADING'), /exported before/)
  t.equal(transitionError('EXPORTING', 'UPLOADING'), null)
  t.equal(transitionError('UPLOADING', 'EXPORTING'), null, 'a restarted box begins again')
  t.equal(transitionError('UPLOADING', 'READY'), null)
  for (const final of ['READY', 'FAILED', 'EXPIRED'] as const) t.match(transitionError(final, 'EXPORTING'), /already/)
})

t.test("a camera's courtIds must be courts of the box's area, and show in the admin answer and the status config", async (t) => {
  const { ctx, venue, admin, boxId, serverId } = await setup(t)
  const other = await putConfig(ctx, admin, boxId, { cameras: [camera('cam-1', { courtIds: [venue.court2.id] })] })
  t.equal(other.statusCode, 400)
  t.match(errorOf(other).message, `cameras[0].courtIds[0] ${venue.court2.id} is not a court of the box's area`)
  const shown = await ctx.app.inject({ url: `/apis/v2/admin/replay-servers/${boxId}`, headers: { authorization: admin } })
  t.same(shown.json().config.cameras[0].courtIds, [venue.court1.id])
  t.same((await poll(ctx, serverId)).json().config.cameras[0].courtIds, [venue.court1.id])
})

t.test('a request is checked: court, camera, length, end', async (t) => {
  const { venue, member, call, ctx } = await setup(t)
  const future = new Date(ctx.clock.now().getTime() + 60_000).toISOString()
  const cases: Array<[object, number, RegExp | string]> = [
    [{ court: { id: venue.court1.id }, end: future }, 400, 'is in the future'],
    [{ court: { id: venue.court1.id }, seconds: 301 }, 400, 'at most 300 s'],
    [{ court: { id: 'nope' } }, 400, 'body.court.id: no court nope'],
    [{ court: { id: venue.court2.id } }, 409, `no camera films court ${venue.court2.id}`],
    [{ court: { id: venue.court1.id }, cameraId: 'cam-2' }, 409, `camera cam-2 does not film court ${venue.court1.id}`],
    [{ court: { id: venue.court1.id }, seconds: 0 }, 400, 'seconds']
  ]
  for (const [body, status, message] of cases) {
    const res = await call('POST', REPLAYS, member, body)
    t.equal(res.statusCode, status, JSON.stringify(body))
    t.match(errorOf(res).message, message)
  }
  t.equal((await call('POST', REPLAYS, undefined, { court: { id: venue.court1.id } })).statusCode, 401)
})

t.test('a replay from request to READY: the status poll, each transition, the download link and its expiry', async (t) => {
  const { ctx, venue, member, call, serverId, device, bucketDir } = await setup(t)
  const idle = await poll(ctx, serverId)
  t.notOk('replayRequests' in idle.json(), 'none waiting: not in the answer')
  t.equal((await poll(ctx, serverId, '', { 'if-none-match': idle.headers.etag as string })).statusCode, 304, 'the idle poll stays a 304')

  const created = await call('POST', REPLAYS, member, { court: { id: venue.court1.id }, seconds: 10 })
  t.equal(created.statusCode, 201)
  const replay = created.json()
  t.match(replay, {
    status: 'REQUESTED',
    court: { id: venue.court1.id },
    camera: { id: 'cam-1' },
    user: { id: member.id },
    start: '2026-03-01T09:59:50.000Z',
    end: '2026-03-01T10:00:00.000Z',
    _links: { self: { href: `${REPLAYS}/${replay.id}` } }
  })
  const waiting = await poll(ctx, serverId, '', { 'if-none-match': idle.headers.etag as string })
  t.equal(waiting.statusCode, 200, 'a waiting replay changes the answer')
  t.equal(waiting.json().replayRequests, 1)

  const list = await call('GET', DEVICE, device)
  t.same(list.json(), {
    items: [{ id: replay.id, kind: 'CLIP', status: 'REQUESTED', cameraId: 'cam-1', start: replay.start, end: replay.end }],
    _total: 1,
    _links: { self: { href: DEVICE } }
  }, 'the collection shape')
  t.equal((await call('GET', DEVICE, member)).statusCode, 401, 'a user token is not a device token')

  const step = (body: object) => call('PUT', `${DEVICE}/${replay.id}/status`, device, body)
  t.equal((await step({ status: 'UPLOADING' })).statusCode, 409, 'not uploaded before exported')
  t.equal((await step({ status: 'EXPORTING' })).statusCode, 200)
  const afterStart = await poll(ctx, serverId, '', { 'if-none-match': waiting.headers.etag as string })
  t.notOk('replayRequests' in afterStart.json(), 'no longer waiting once started')
  t.equal((await call('GET', `${REPLAYS}/${replay.id}`, member)).json().status, 'EXPORTING')
  t.equal((await step({ status: 'UPLOADING' })).statusCode, 200)
  const outside = await step({ status: 'READY', location: 'file:///etc/passwd', durationSeconds: 10, sizeBytes: 5, sha256: SHA })
  t.equal(outside.statusCode, 400, 'a location outside the bucket is refused')
  // `%2e%2e` decodes to `..`: the bucket's prefix followed by it still names a file outside.
  const escaping = `${pathToFileURL(bucketDir).href}/%2e%2e/%2e%2e/etc/passwd`
  t.equal((await step({ status: 'READY', location: escaping, durationSeconds: 10, sizeBytes: 5, sha256: SHA })).statusCode, 400, 'an escape through %2e%2e is refused')
  const malformed = `${pathToFileURL(bucketDir).href}/%E0%A4%A`
  t.equal((await step({ status: 'READY', location: malformed, durationSeconds: 10, sizeBytes: 5, sha256: SHA })).statusCode, 400, 'a malformed percent-escape is a 400, not a 500 later')
  const location = storedClip(bucketDir, `cam-1/${replay.id}.mp4`)
  t.equal((await step({ status: 'READY', location, durationSeconds: 10.02, sizeBytes: 28, sha256: SHA })).statusCode, 200)
  t.equal((await step({ status: 'FAILED', reason: 'camera_error' })).statusCode, 409, 'READY is final')

  const ready = (await call('GET', `${REPLAYS}/${replay.id}`, member)).json()
  t.match(ready, { status: 'READY', durationSeconds: 10.02, sizeBytes: 28, downloadUrlExpiresAt: '2026-03-01T10:15:00.000Z' })
  const link = new URL(ready.downloadUrl)
  const download = await ctx.app.inject({ url: `${link.pathname}${link.search}` })
  t.equal(download.statusCode, 200)
  t.equal(download.headers['content-type'], 'video/mp4')
  t.equal(download.body, 'not really an mp4, but bytes')
  const forged = new URL(link)
  forged.searchParams.set('expires', String(Number(link.searchParams.get('expires')) + 3600))
  t.equal((await ctx.app.inject({ url: `${forged.pathname}${forged.search}` })).statusCode, 403, 'a longer expiry breaks the signature')
  ctx.clock.advance(901_000)
  const expired = await ctx.app.inject({ url: `${link.pathname}${link.search}` })
  t.equal(expired.statusCode, 403, 'valid REPLAY_URL_TTL_SECONDS, no longer')
  t.match(errorOf(expired).message, /expired/)
  t.notMatch(ctx.logs(), link.searchParams.get('signature')!, 'the signature is never logged')

  const other = await userWithToken(ctx, 'member')
  t.equal((await call('GET', `${REPLAYS}/${replay.id}`, other)).statusCode, 404, "someone else's replay is not found")
  t.equal((await call('GET', REPLAYS, other)).json()._total, 0)
  const staff = await userWithToken(ctx, 'staff')
  t.equal((await call('GET', `${REPLAYS}?court=${venue.court1.id}&status=READY&user=${member.id}`, staff)).json()._total, 1, 'staff filter by court, status, user')
  t.equal((await call('GET', `${REPLAYS}?user=${other.id}`, member)).statusCode, 400)

  t.equal((await call('DELETE', `${REPLAYS}/${replay.id}`, member)).statusCode, 204)
  t.notOk(existsSync(join(bucketDir, `cam-1/${replay.id}.mp4`)), 'the stored clip is removed')
  t.equal((await call('GET', `${REPLAYS}/${replay.id}`, member)).statusCode, 404, 'and the record')
})

t.test('REPLAYS_REQUIRE_PACKAGE: an item per replay, 402 when none is left, given back when the replay fails', async (t) => {
  const { ctx, venue, member, call, device, bucketDir } = await setup(t, { REPLAYS_REQUIRE_PACKAGE: 'true', REPLAY_REQUEST_TIMEOUT_SECONDS: '120' })
  const none = await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })
  t.equal(none.statusCode, 402)
  t.match(errorOf(none).message, /REPLAY package item/)

  const staff = await userWithToken(ctx, 'staff')
  const pkg = await issued(ctx, staff, await packageTemplate(ctx, staff, threeReplays), member.id)
  const remaining = async () => (await call('GET', `/apis/v2/packages/${pkg.id}`, member)).json().items.items[0].remainingItems
  const first = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).json()
  const second = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).json()
  t.equal(await remaining(), 1, 'two replays, two items')

  t.equal((await call('PUT', `${DEVICE}/${first.id}/status`, device, { status: 'EXPORTING' })).statusCode, 200)
  t.equal((await call('PUT', `${DEVICE}/${first.id}/status`, device, { status: 'FAILED', reason: 'no_footage' })).statusCode, 200)
  t.match((await call('GET', `${REPLAYS}/${first.id}`, member)).json(), { status: 'FAILED', reason: 'no_footage' })
  t.equal(await remaining(), 2, 'no footage: the item is given back')

  ctx.clock.advance(121_000)
  t.match((await call('GET', `${REPLAYS}/${second.id}`, member)).json(), { status: 'FAILED', reason: 'box_unreachable' })
  t.equal(await remaining(), 3, 'box unreachable: the item is given back')
  t.same((await call('GET', DEVICE, device)).json().items, [], 'nothing left for the box')

  // Deleting: a replay still being made gives its item back; a delivered or failed one does not (again).
  const made = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).json()
  await call('PUT', `${DEVICE}/${made.id}/status`, device, { status: 'EXPORTING' })
  await call('PUT', `${DEVICE}/${made.id}/status`, device, { status: 'READY', location: storedClip(bucketDir, `cam-1/${made.id}.mp4`), durationSeconds: 30, sizeBytes: 28, sha256: SHA })
  const pending = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).json()
  t.equal(await remaining(), 1)
  t.equal((await call('DELETE', `${REPLAYS}/${made.id}`, member)).statusCode, 204)
  t.equal(await remaining(), 1, 'a delivered replay deleted: its item stays used')
  t.equal((await call('DELETE', `${REPLAYS}/${first.id}`, member)).statusCode, 204)
  t.equal(await remaining(), 1, 'a failed replay deleted: its item was given back already, not twice')
  t.equal((await call('DELETE', `${REPLAYS}/${pending.id}`, member)).statusCode, 204)
  t.equal(await remaining(), 2, 'a replay still waiting deleted: its item comes back')
})

t.test("spent is spent: a delivered replay's redemption cannot be cancelled; one still being made is given up with its item", async (t) => {
  const { ctx, venue, member, call, device, bucketDir } = await setup(t, { REPLAYS_REQUIRE_PACKAGE: 'true' })
  const staff = await userWithToken(ctx, 'staff')
  const pkg = await issued(ctx, staff, await packageTemplate(ctx, staff, threeReplays), member.id)
  const remaining = async () => (await call('GET', `/apis/v2/packages/${pkg.id}`, member)).json().items.items[0].remainingItems
  const redemptionOf = async (replayId: string) => {
    const row = await ctx.app.db.selectFrom('replays').select('redemption_id').where('id', '=', replayId).executeTakeFirstOrThrow()
    return `/apis/v2/packages/${pkg.id}/redemptions/${row.redemption_id}`
  }

  const delivered = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).json()
  await call('PUT', `${DEVICE}/${delivered.id}/status`, device, { status: 'EXPORTING' })
  await call('PUT', `${DEVICE}/${delivered.id}/status`, device, { status: 'READY', location: storedClip(bucketDir, `cam-1/${delivered.id}.mp4`), durationSeconds: 30, sizeBytes: 28, sha256: SHA })
  const refused = await call('DELETE', await redemptionOf(delivered.id), member)
  t.equal(refused.statusCode, 409)
  t.match(errorOf(refused).message, new RegExp(`replay ${delivered.id} it paid for was delivered on \\S+, whatever became of it since: its item stays spent`))
  t.equal(await remaining(), 2, 'the item stays spent')
  t.match((await call('GET', await redemptionOf(delivered.id), member)).json(), { cancelationDate: null })
  t.match((await call('GET', `${REPLAYS}/${delivered.id}`, member)).json(), { status: 'READY' }, 'and the replay stays delivered')

  const making = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).json()
  await call('PUT', `${DEVICE}/${making.id}/status`, device, { status: 'EXPORTING' })
  const cancelled = await call('DELETE', await redemptionOf(making.id), member)
  t.equal(cancelled.statusCode, 200)
  t.equal(await remaining(), 2, 'the item is back')
  t.match((await call('GET', `${REPLAYS}/${making.id}`, member)).json(), { status: 'FAILED', reason: 'redemption_cancelled' })
  const late = await call('PUT', `${DEVICE}/${making.id}/status`, device, { status: 'READY', location: storedClip(bucketDir, `cam-1/${making.id}.mp4`), durationSeconds: 30, sizeBytes: 28, sha256: SHA })
  t.equal(late.statusCode, 409, 'the box can no longer deliver what was given back')

  // Staff give an item back on purpose, recorded with who and why.
  const given = await call('POST', `${await redemptionOf(delivered.id)}/give-back`, staff, { reason: 'the clip came out black' })
  t.equal(given.statusCode, 200)
  t.match(given.json(), { cancelationDate: /\S/, givenBackBy: { id: staff.id }, givenBackReason: 'the clip came out black' })
  t.equal(await remaining(), 3)
  t.equal((await call('POST', `${await redemptionOf(delivered.id)}/give-back`, member, { reason: 'please' })).statusCode, 403, 'not the member')
})

t.test('the server tells the box at once, at its serverUrl, with its token', async (t) => {
  let told: (call: { url?: string; authorization?: string }) => void
  const call = new Promise<{ url?: string; authorization?: string }>((resolve) => (told = resolve))
  const box = createServer((req, res) => {
    told({ url: req.url, authorization: req.headers.authorization })
    res.writeHead(202).end()
  })
  await new Promise<void>((resolve) => box.listen(0, '127.0.0.1', resolve))
  t.teardown(() => box.close())
  const { venue, member, call: api, device } = await setup(t, {}, { serverUrl: `http://127.0.0.1:${(box.address() as AddressInfo).port}` })
  t.equal((await api('POST', REPLAYS, member, { court: { id: venue.court1.id } })).statusCode, 201)
  t.same(await call, { url: '/replay-requests', authorization: device.authorization })
})

t.test('the replay notice goes only to an address the box could own: not to the loopback for a box polling from elsewhere', async (t) => {
  const seen: string[] = []
  const box = createServer((req, res) => {
    seen.push(req.url!)
    res.writeHead(202).end()
  })
  await new Promise<void>((resolve) => box.listen(0, '127.0.0.1', resolve))
  t.teardown(() => box.close())
  const { ctx, boxId, serverId } = await setup(t, {}, { serverUrl: `http://127.0.0.1:${(box.address() as AddressInfo).port}` })
  // Its polls now come from elsewhere (documentation space: nothing is ever sent there).
  t.equal((await ctx.app.inject({ method: 'GET', url: statusUrl(serverId), remoteAddress: '192.0.2.10' })).statusCode, 200)
  const tokenKey = await deviceTokenKey(ctx.app.db, ctx.config, ctx.clock)
  const notify = (env: Record<string, string>) =>
    notifyReplayServer(ctx.app.db, boxId, { ...boxCallDeps(testConfig(ctx.dir, env), tokenKey), log: ctx.app.log })
  t.equal(await notify({}), false, 'refused')
  t.same(seen, [], 'before any connection')
  t.match(ctx.logs(), /"reason":"not-the-box"/)
  t.equal(await notify({ BOX_NETWORKS: '127.0.0.0/8' }), false, "not even inside BOX_NETWORKS: the server's loopback is only for a box on its machine")
  t.same(seen, [])
  // Polling straight from loopback again (no proxy header): the box is on the server's machine.
  t.equal((await ctx.app.inject({ method: 'GET', url: statusUrl(serverId), remoteAddress: '127.0.0.1' })).statusCode, 200)
  t.equal(await notify({}), true, 'told')
  t.same(seen, ['/replay-requests'])
})

t.test('deleteExpiredReplays (replays/cleanup): the file:// clip and the replay expire after the retention', async (t) => {
  const { ctx, venue, member, call, device, bucketDir } = await setup(t)
  const replay = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).json()
  const location = storedClip(bucketDir, `cam-1/${replay.id}.mp4`)
  await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'EXPORTING' })
  await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'READY', location, durationSeconds: 30, sizeBytes: 28, sha256: SHA })
  const storage = new ReplayStorage({ credentialsPath: '', linkKey: 'k', publicBaseUrl: 'http://x' })
  t.equal(await deleteExpiredReplays(ctx.app.db, storage, new Date(ctx.clock.now().getTime() + 29 * 86_400_000), 30), 0, 'kept within the retention')
  t.ok(existsSync(join(bucketDir, `cam-1/${replay.id}.mp4`)))
  t.equal(await deleteExpiredReplays(ctx.app.db, storage, new Date(ctx.clock.now().getTime() + 31 * 86_400_000), 30), 1)
  t.notOk(existsSync(join(bucketDir, `cam-1/${replay.id}.mp4`)), 'the clip is deleted')
  const expired = (await call('GET', `${REPLAYS}/${replay.id}`, member)).json()
  t.equal(expired.status, 'EXPIRED')
  t.notOk('downloadUrl' in expired)
})
