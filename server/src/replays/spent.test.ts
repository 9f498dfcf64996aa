// Spent is spent (issue 47): once a replay was READY, the item that paid for it never comes back by a
// cancellation, whatever becomes of the replay (deleted by its member, taken down, expired), nor when
// the member's delete races the cancellation in another process. Staff's give-back is the one way back.
import t from 'tap'
import { errorOf, userWithToken } from '../test-support/app.js'
import { secondServer } from '../test-support/second-server.js'
import { issued, packageTemplate, threeReplays } from '../packages/test-fixtures.js'
import { DEVICE, REPLAYS, SHA, filmedVenue as setup, storedClip } from './test-helpers.js'
import { deleteExpiredReplays } from './clips.js'
import { ReplayStorage } from './storage.js'

type Setup = Awaited<ReturnType<typeof setup>>
type Who = { id: string; authorization: string }

/** A package of three replays for `member`, and how to read what is left of it. */
async function replayPackage(s: Setup, member: Who) {
  const staff = await userWithToken(s.ctx, 'staff')
  const pkg = await issued(s.ctx, staff, await packageTemplate(s.ctx, staff, threeReplays), member.id)
  const remaining = async () => (await s.call('GET', `/apis/v2/packages/${pkg.id}`, member)).json().items.items[0].remainingItems as number
  return { staff, pkg, remaining }
}

/** A replay asked for by `member` and delivered by the box, with the path of its redemption. */
async function deliveredReplay(s: Setup, member: Who, packageId: string) {
  const asked = await s.call('POST', REPLAYS, member, { court: { id: s.venue.court1.id } })
  if (asked.statusCode !== 201) throw new Error(`replay: ${asked.statusCode} ${asked.body}`)
  const replay = asked.json()
  await s.call('PUT', `${DEVICE}/${replay.id}/status`, s.device, { status: 'EXPORTING' })
  const ready = await s.call('PUT', `${DEVICE}/${replay.id}/status`, s.device, {
    status: 'READY',
    location: storedClip(s.bucketDir, `cam-1/${replay.id}.mp4`),
    durationSeconds: 30,
    sizeBytes: 28,
    sha256: SHA
  })
  if (ready.statusCode !== 200) throw new Error(`READY: ${ready.statusCode} ${ready.body}`)
  const row = await s.ctx.app.db.selectFrom('replays').select('redemption_id').where('id', '=', replay.id).executeTakeFirstOrThrow()
  return { id: replay.id as string, redemption: `/apis/v2/packages/${packageId}/redemptions/${row.redemption_id}` }
}

t.test('a READY replay deleted by its member: its redemption cannot be cancelled, three rounds in a row take three items', async (t) => {
  const s = await setup(t, { REPLAYS_REQUIRE_PACKAGE: 'true' })
  const { pkg, remaining, staff } = await replayPackage(s, s.member)
  let last = ''
  for (let round = 1; round <= 3; round++) {
    const replay = await deliveredReplay(s, s.member, pkg.id)
    t.equal((await s.call('DELETE', `${REPLAYS}/${replay.id}`, s.member)).statusCode, 204, `round ${round}: the member deletes the replay`)
    const refused = await s.call('DELETE', replay.redemption, s.member)
    t.equal(refused.statusCode, 409, `round ${round}: the cancellation is refused`)
    t.match(errorOf(refused).message, new RegExp(`replay ${replay.id} it paid for was delivered on \\S+, whatever became of it since: its item stays spent`))
    t.match((await s.call('GET', replay.redemption, s.member)).json(), { cancelationDate: null })
    t.equal(await remaining(), 3 - round, `round ${round}: the item stays spent`)
    last = replay.redemption
  }
  t.equal((await s.call('POST', REPLAYS, s.member, { court: { id: s.venue.court1.id } })).statusCode, 402, 'three replays delivered, none left')
  // Staff's give-back stays the one way back.
  t.equal((await s.call('POST', `${last}/give-back`, staff, { reason: 'the clip came out black' })).statusCode, 200)
  t.equal(await remaining(), 1)
})

t.test('a READY replay expired and then deleted, or taken down: its item stays spent', async (t) => {
  const s = await setup(t, { REPLAYS_REQUIRE_PACKAGE: 'true' })
  const { pkg, remaining, staff } = await replayPackage(s, s.member)
  const expired = await deliveredReplay(s, s.member, pkg.id)
  const storage = new ReplayStorage({ credentialsPath: '', linkKey: 'k', publicBaseUrl: 'http://x' })
  t.equal(await deleteExpiredReplays(s.ctx.app.db, storage, new Date(s.ctx.clock.now().getTime() + 31 * 86_400_000), 30), 1)
  t.equal((await s.call('DELETE', `${REPLAYS}/${expired.id}`, s.member)).statusCode, 204)
  t.equal((await s.call('DELETE', expired.redemption, s.member)).statusCode, 409, 'expired then deleted: refused')

  const takenDown = await deliveredReplay(s, s.member, pkg.id)
  t.equal((await s.call('POST', `/apis/v2/admin/replays/${takenDown.id}/takedown`, staff, { reason: 'a parent asked' })).statusCode, 200)
  t.equal((await s.call('DELETE', takenDown.redemption, s.member)).statusCode, 409, 'taken down: refused')
  t.equal(await remaining(), 1, 'both items stay spent')
})

t.test("two processes: the member's delete of a READY replay racing the cancellation of its redemption never gives the item back", async (t) => {
  const s = await setup(t, { REPLAYS_REQUIRE_PACKAGE: 'true' })
  // The other process reads the real time: this one's clock is set to it, so tokens and the package hold there too.
  s.ctx.clock.set(new Date())
  const member = await userWithToken(s.ctx, 'member')
  const ROUNDS = 3
  const { pkg, remaining } = await replayPackage(s, member)
  const other = await secondServer(t, s.ctx.config.DATABASE_URL)
  for (let round = 0; round < ROUNDS; round++) {
    const replay = await deliveredReplay(s, member, pkg.id)
    const cancelThere = () => fetch(`${other}${replay.redemption}`, { method: 'DELETE', headers: { authorization: member.authorization } }).then((r) => r.status)
    const deleteHere = () => s.call('DELETE', `${REPLAYS}/${replay.id}`, member).then((r) => r.statusCode)
    // Even rounds: both at once; odd rounds: the delete first, so the cancellation finds no replay row.
    const [deleted, cancelled] = round % 2 === 0 ? await Promise.all([deleteHere(), cancelThere()]) : [await deleteHere(), await cancelThere()]
    t.equal(deleted, 204, `round ${round}: deleted`)
    t.equal(cancelled, 409, `round ${round}: the cancellation refused`)
    t.equal(await remaining(), ROUNDS - round - 1, `round ${round}: the item stays spent`)
  }
})
