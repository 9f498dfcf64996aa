// Takedown and the clip's bucket: staff take a replay down (the clip leaves the bucket at once, old
// links stop working, the row stays TAKEN_DOWN with who and why); a member cannot; a player's own
// delete removes the clip at once; a symbolic link in a file:// bucket is never followed out of it.
import t from 'tap'
import { existsSync, mkdirSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { errorOf, userWithToken } from '../test-support/app.js'
import { issued, packageTemplate, threeReplays } from '../packages/test-fixtures.js'
import type { Db } from '../db/database.js'
import { deviceTokenKey } from '../replay-servers/service.js'
import { replayDeps } from './deps.js'
import { deleteReplay } from './service.js'
import { deleteExpiredReplays } from './clips.js'
import { ReplayStorage } from './storage.js'
import { filmedVenue as setup, storedClip } from './test-helpers.js'

const REPLAYS = '/apis/v2/replays'
const DEVICE = '/apis/v2/replay-servers/device/replays'
const ADMIN = '/apis/v2/admin/replays'
const SHA = 'a'.repeat(64)
const SECRET = 'root:x:0:0:a file outside the bucket\n'

/** A member's replay taken to READY with a clip in the bucket folder; its download link path. */
async function readyReplay(s: Awaited<ReturnType<typeof setup>>) {
  const replay = (await s.call('POST', REPLAYS, s.member, { court: { id: s.venue.court1.id }, seconds: 10 })).json()
  await s.call('PUT', `${DEVICE}/${replay.id}/status`, s.device, { status: 'EXPORTING' })
  const location = storedClip(s.bucketDir, `cam-1/${replay.id}.mp4`)
  const res = await s.call('PUT', `${DEVICE}/${replay.id}/status`, s.device, { status: 'READY', location, durationSeconds: 10, sizeBytes: 28, sha256: SHA })
  if (res.statusCode !== 200) throw new Error(res.body)
  const ready = (await s.call('GET', `${REPLAYS}/${replay.id}`, s.member)).json()
  const link = new URL(ready.downloadUrl)
  return { id: replay.id as string, path: join(s.bucketDir, `cam-1/${replay.id}.mp4`), link: `${link.pathname}${link.search}` }
}

/** A file outside every bucket, as /etc/passwd would be. */
function secretFile(dir: string): string {
  const path = join(dir, 'outside', 'passwd')
  mkdirSync(join(path, '..'), { recursive: true })
  writeFileSync(path, SECRET)
  return path
}

t.test('staff take a replay down: the clip leaves the bucket at once, the old link answers 410, the row reads TAKEN_DOWN', async (t) => {
  const s = await setup(t)
  const { ctx, call, member } = s
  const clip = await readyReplay(s)
  t.equal((await ctx.app.inject({ url: clip.link })).statusCode, 200, 'the link works before')
  const staff = await userWithToken(ctx, 'staff')

  const refused = await call('POST', `${ADMIN}/${clip.id}/takedown`, member, { reason: 'mine' })
  t.equal(refused.statusCode, 403, 'a member cannot take a replay down, not even their own')
  errorOf(refused)
  t.ok(existsSync(clip.path), 'and nothing changed')
  t.equal((await call('POST', `${ADMIN}/${clip.id}/takedown`, staff, { reason: '   ' })).statusCode, 400, 'a reason says something')
  t.equal((await call('POST', `${ADMIN}/${clip.id}/takedown`, staff, {})).statusCode, 400, 'a reason is required')
  t.equal((await call('POST', `${ADMIN}/nope/takedown`, staff, { reason: 'x' })).statusCode, 404)

  const done = await call('POST', `${ADMIN}/${clip.id}/takedown`, staff, { reason: 'a parent asked: their child is in the picture' })
  t.equal(done.statusCode, 200, done.body)
  t.match(done.json(), { status: 'TAKEN_DOWN', takedown: { date: '2026-03-01T10:00:00.000Z', by: { id: staff.id }, reason: 'a parent asked: their child is in the picture' } })
  t.notOk('downloadUrl' in done.json())
  t.notOk(existsSync(clip.path), 'the clip is gone from the bucket at once')

  const old = await ctx.app.inject({ url: clip.link })
  t.equal(old.statusCode, 410, 'the old signed link answers 410')
  t.match(errorOf(old).message, /taken down/)
  t.notMatch(old.body, /not really an mp4/)

  const owner = (await call('GET', `${REPLAYS}/${clip.id}`, member)).json()
  t.match(owner, { status: 'TAKEN_DOWN', takedown: { date: '2026-03-01T10:00:00.000Z' } })
  t.notOk('reason' in owner.takedown || 'by' in owner.takedown, 'the owner sees when, not who or why')
  t.notOk('downloadUrl' in owner)
  const seenByStaff = (await call('GET', `${REPLAYS}?status=TAKEN_DOWN`, staff)).json()
  t.match(seenByStaff.items, [{ id: clip.id, takedown: { by: { id: staff.id }, reason: /a parent asked/ } }], 'staff list it with who and why')

  const again = await call('POST', `${ADMIN}/${clip.id}/takedown`, staff, { reason: 'again' })
  t.equal(again.statusCode, 409, 'taken down once')
  t.match(errorOf(again).message, /taken down already/)
  const deleted = await call('DELETE', `${REPLAYS}/${clip.id}`, member)
  t.equal(deleted.statusCode, 409, 'the owner cannot erase the record of a takedown')
  t.equal((await call('PUT', `${DEVICE}/${clip.id}/status`, s.device, { status: 'FAILED', reason: 'camera_error' })).statusCode, 409, 'final for the box too')
})

t.test('a replay taken down while the box cuts it: its item comes back, and the clip the box uploads anyway is deleted when reported', async (t) => {
  const s = await setup(t, { REPLAYS_REQUIRE_PACKAGE: 'true', REPLAY_REQUEST_TIMEOUT_SECONDS: '120' })
  const { ctx, call, member, device, venue } = s
  const staff = await userWithToken(ctx, 'staff')
  const admin = await userWithToken(ctx, 'admin')
  const pkg = await issued(ctx, staff, await packageTemplate(ctx, staff, threeReplays), member.id)
  const remaining = async () => (await call('GET', `/apis/v2/packages/${pkg.id}`, member)).json().items.items[0].remainingItems
  const replay = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).json()
  await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'EXPORTING' })
  t.equal(await remaining(), 2)
  t.equal((await call('POST', `${ADMIN}/${replay.id}/takedown`, admin, { reason: 'private event' })).statusCode, 200, 'admins too')
  t.equal(await remaining(), 3, 'never delivered: the item is given back')
  t.same((await call('GET', DEVICE, device)).json().items, [], 'no longer listed for the box')
  const location = storedClip(s.bucketDir, `cam-1/${replay.id}.mp4`)
  const late = await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'READY', location, durationSeconds: 30, sizeBytes: 28, sha256: SHA })
  t.equal(late.statusCode, 409)
  t.notOk(existsSync(join(s.bucketDir, `cam-1/${replay.id}.mp4`)), 'the late upload is deleted from the bucket')
})

t.test('a takedown whose clip the bucket would not delete then: replays/cleanup deletes it on its next run, whatever its age', async (t) => {
  const s = await setup(t)
  const clip = await readyReplay(s)
  // As takeDownReplay leaves a replay when the bucket answers an error (its 502): TAKEN_DOWN, the location kept.
  await s.ctx.app.db.updateTable('replays').set({ status: 'TAKEN_DOWN', taken_down_at: s.ctx.clock.now().toISOString(), taken_down_reason: 'x' }).where('id', '=', clip.id).execute()
  const storage = new ReplayStorage({ credentialsPath: '', linkKey: 'k', publicBaseUrl: 'http://x' })
  t.equal(await deleteExpiredReplays(s.ctx.app.db, storage, s.ctx.clock.now(), 30), 0, 'nothing expires')
  t.notOk(existsSync(clip.path), 'the clip is gone without anyone asking again')
  const row = await s.ctx.app.db.selectFrom('replays').select(['status', 'location']).where('id', '=', clip.id).executeTakeFirstOrThrow()
  t.same(row, { status: 'TAKEN_DOWN', location: null })
})

t.test("a player's DELETE removes the clip from the bucket at once", async (t) => {
  const s = await setup(t)
  const clip = await readyReplay(s)
  t.equal((await s.call('DELETE', `${REPLAYS}/${clip.id}`, s.member)).statusCode, 204)
  t.notOk(existsSync(clip.path), 'gone before the next cleanup')
  t.equal((await s.ctx.app.inject({ url: clip.link })).statusCode, 404, 'its link finds nothing')
})

t.test("a player's DELETE while the box uploads: the clip the box stores anyway leaves the bucket when reported", async (t) => {
  const s = await setup(t)
  const { call, member, device, venue } = s
  const replay = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).json()
  await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'EXPORTING' })
  await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'UPLOADING' })
  t.equal((await call('DELETE', `${REPLAYS}/${replay.id}`, member)).statusCode, 204, 'deleted mid-upload')
  const name = `cam-1/${replay.id}.mp4`
  const late = await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'READY', location: storedClip(s.bucketDir, name), durationSeconds: 30, sizeBytes: 28, sha256: SHA })
  t.equal(late.statusCode, 404, 'the box is told the replay is gone')
  errorOf(late)
  t.notOk(existsSync(join(s.bucketDir, name)), 'and its upload is deleted: nothing else would ever delete it')

  // Only a clip named after a replay that is gone: a report for another box's replay, or naming any
  // other object of the bucket, deletes nothing.
  const kept = storedClip(s.bucketDir, 'cam-1/kept.mp4')
  const other = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).json()
  await call('DELETE', `${REPLAYS}/${other.id}`, member)
  t.equal((await call('PUT', `${DEVICE}/${other.id}/status`, device, { status: 'READY', location: kept, durationSeconds: 30, sizeBytes: 28, sha256: SHA })).statusCode, 400)
  t.ok(existsSync(join(s.bucketDir, 'cam-1/kept.mp4')), 'a clip not named after the replay stays')
})

t.test("a player's DELETE racing the box's READY: the clip reported in between leaves the bucket too", async (t) => {
  const s = await setup(t)
  const { ctx, call, member, device, venue } = s
  const replay = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).json()
  await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'EXPORTING' })
  await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'UPLOADING' })
  const name = `cam-1/${replay.id}.mp4`
  const db = ctx.app.db
  // The delete read the replay UPLOADING (no clip yet); the box's READY commits before the delete's own transaction.
  const racing = new Proxy(db, {
    get(target, prop) {
      if (prop === 'transaction') {
        return () => ({
          execute: async (work: (tx: never) => Promise<unknown>) => {
            const ready = await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'READY', location: storedClip(s.bucketDir, name), durationSeconds: 30, sizeBytes: 28, sha256: SHA })
            t.equal(ready.statusCode, 200, 'READY lands in between')
            return target.transaction().execute(work as never)
          }
        })
      }
      const value = Reflect.get(target, prop) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    }
  }) as Db
  const deps = replayDeps(ctx.app.config, ctx.clock, await deviceTokenKey(db, ctx.app.config, ctx.clock))
  await deleteReplay(racing, replay.id, { id: member.id, role: 'member' }, deps)
  t.equal(await db.selectFrom('replays').select('id').where('id', '=', replay.id).executeTakeFirst(), undefined, 'the record is gone')
  t.notOk(existsSync(join(s.bucketDir, name)), 'and so is the clip reported meanwhile')
})

t.test('a symbolic link in the bucket pointing outside it: refused at READY and at download, nothing served', async (t) => {
  const s = await setup(t)
  const { ctx, call, member, device, venue, bucketDir } = s
  const secret = secretFile(ctx.dir)
  const step = (id: string, location: string) =>
    call('PUT', `${DEVICE}/${id}/status`, device, { status: 'READY', location, durationSeconds: 10, sizeBytes: 5, sha256: SHA })

  const replay = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).json()
  await call('PUT', `${DEVICE}/${replay.id}/status`, device, { status: 'EXPORTING' })
  mkdirSync(join(bucketDir, 'cam-1'), { recursive: true })
  symlinkSync(secret, join(bucketDir, 'cam-1', 'link.mp4'))
  const linked = await step(replay.id, pathToFileURL(join(bucketDir, 'cam-1', 'link.mp4')).href)
  t.equal(linked.statusCode, 400, 'a link to a file outside is refused at READY')
  t.match(errorOf(linked).message, /not in the box's cloudStorageBucket: .*symbolic link/)
  symlinkSync(join(ctx.dir, 'outside'), join(bucketDir, 'elsewhere'))
  t.equal((await step(replay.id, pathToFileURL(join(bucketDir, 'elsewhere', 'passwd')).href)).statusCode, 400, 'so is a linked folder')
  const missing = await step(replay.id, pathToFileURL(join(bucketDir, 'cam-1', 'never-written.mp4')).href)
  t.equal(missing.statusCode, 400, 'and a location with no file')
  t.match(errorOf(missing).message, /no file is stored/)
  t.equal((await call('GET', `${REPLAYS}/${replay.id}`, member)).json().status, 'EXPORTING', 'nothing was recorded')

  // A clip reported READY, then replaced by a link (the box, or anyone who can write the share).
  const clip = await readyReplay(s)
  unlinkSync(clip.path)
  symlinkSync(secret, clip.path)
  const served = await ctx.app.inject({ url: clip.link })
  t.equal(served.statusCode, 404, 'the download refuses it')
  t.notMatch(served.body, /root:x/, 'nothing of the file outside is served')
  errorOf(served)
  // The link is removed from the bucket on delete; what it pointed at stays.
  t.equal((await call('DELETE', `${REPLAYS}/${clip.id}`, member)).statusCode, 204)
  t.ok(existsSync(secret), 'deleting a replay never deletes a file outside the bucket')
})

t.test("a guest's token takes nothing down and marks no court, not even for the guest's own replay", async (t) => {
  const s = await setup(t, { REPLAYS_GUEST: 'true', REPLAYS_REQUIRE_ACCOUNT: 'false' })
  const { call, venue } = s
  const session = (await call('POST', `${REPLAYS}/guest-sessions`, undefined, { court: { id: venue.court1.id } })).json()
  const guest = { authorization: `Bearer ${session.token}` }
  const replay = (await call('POST', REPLAYS, guest, { court: { id: venue.court1.id } })).json()
  const takedown = await call('POST', `${ADMIN}/${replay.id}/takedown`, guest, { reason: 'mine' })
  t.ok([401, 403].includes(takedown.statusCode), `takedown: ${takedown.statusCode}`)
  errorOf(takedown)
  const mark = await call('POST', `/apis/v2/admin/courts/${venue.court1.id}/do-not-film`, guest, { start: '2026-03-01T10:00:00Z', end: '2026-03-01T11:00:00Z', reason: 'x' })
  t.ok([401, 403].includes(mark.statusCode), `do not film: ${mark.statusCode}`)
  t.equal((await call('GET', `${REPLAYS}/${replay.id}`, guest)).json().status, 'REQUESTED', 'nothing changed')
})

t.test("a box cannot make the server delete another replay's clip: READY names only the replay's own key", async (t) => {
  const s = await setup(t)
  const { ctx, call, member, device, venue } = s
  const victim = await readyReplay(s)
  t.equal((await ctx.app.inject({ url: victim.link })).statusCode, 200, "the victim's link works before")
  const step = (id: string, body: object) => call('PUT', `${DEVICE}/${id}/status`, device, body)
  const victimLocation = pathToFileURL(victim.path).href

  // The attack: one of the box's own replays FAILED, then READY with the other's location (a final
  // status answered 409 and deleted "its" clip).
  const failed = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).json()
  await step(failed.id, { status: 'EXPORTING' })
  t.equal((await step(failed.id, { status: 'FAILED', reason: 'camera_error' })).statusCode, 200)
  const late = await step(failed.id, { status: 'READY', location: victimLocation, durationSeconds: 10, sizeBytes: 28, sha256: SHA })
  t.equal(late.statusCode, 400, "another replay's clip is the box's error")
  t.match(errorOf(late).message, `cam-1/${failed.id}.mp4`, 'naming the key the box must use')
  t.ok(existsSync(victim.path), "and the victim's clip stays")

  // Nor can a replay under way take the other's clip as its own (deleting it would delete the victim's).
  const making = (await call('POST', REPLAYS, member, { court: { id: venue.court1.id } })).json()
  await step(making.id, { status: 'EXPORTING' })
  t.equal((await step(making.id, { status: 'READY', location: victimLocation, durationSeconds: 10, sizeBytes: 28, sha256: SHA })).statusCode, 400)
  t.equal((await call('GET', `${REPLAYS}/${making.id}`, member)).json().status, 'EXPORTING', 'nothing was recorded')
  // Nor one of the box's own clips under another camera's folder.
  const otherCamera = storedClip(s.bucketDir, `cam-2/${making.id}.mp4`)
  t.equal((await step(making.id, { status: 'READY', location: otherCamera, durationSeconds: 10, sizeBytes: 28, sha256: SHA })).statusCode, 400)

  t.ok(existsSync(victim.path), "the victim's clip is still there")
  t.equal((await ctx.app.inject({ url: victim.link })).statusCode, 200, 'and its link still works')
  t.match(ctx.logs(), /a box reported a clip that is not its replay's/, 'the refusal is logged')
})

t.test("deleting a replay never deletes a clip another replay's row names (rows from before the key was checked)", async (t) => {
  const s = await setup(t)
  const { ctx, call, member } = s
  const victim = await readyReplay(s)
  const sharing = await readyReplay(s)
  // A row written before locations were checked against the replay's own key.
  await ctx.app.db.updateTable('replays').set({ location: pathToFileURL(victim.path).href }).where('id', '=', sharing.id).execute()
  t.equal((await call('DELETE', `${REPLAYS}/${sharing.id}`, member)).statusCode, 204)
  t.ok(existsSync(victim.path), "the other replay's clip stays")
  t.equal((await ctx.app.inject({ url: victim.link })).statusCode, 200, 'and its link works')
})
