// Matches made once across server processes (issue 49): a second server process (dist/main.js)
// ticks its own teller on the same database while this one ticks as fast as it can.
import t from 'tap'
import { secondServerProcess } from '../test-support/second-server.js'
import { angleRows, matchRows, setup } from './test-helpers.js'

t.test('two server processes ticking at once make the match once', async (t) => {
  // The other process runs on the real clock: the booking ends a moment from now by it.
  const now = Date.now()
  const s = await setup(t, { MATCH_GRACE_SECONDS: '0' }, new Date(now - 3_600_000).toISOString())
  const { ctx } = s
  const start = new Date(now - 3_000_000).toISOString()
  const end = new Date(now + 2_000).toISOString()
  await s.book(s.venue.court1.id, start, end)
  const other = await secondServerProcess(t, ctx.config.DATABASE_URL, { MATCH_RECORDING: 'bookings', MATCH_GRACE_SECONDS: '0', REPLAY_POLL_INTERVAL_SECONDS: '1' })
  // This process ticks as often as it can while the other ticks every second: until one of them made it (bounded).
  const deadline = Date.now() + 60_000
  while ((await matchRows(ctx.app.db)).length === 0 && Date.now() < deadline) {
    ctx.clock.set(new Date().toISOString())
    await s.tell.make()
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  // Once the other has stopped, whatever it made is committed; this one ticks again: nothing more.
  await other.stop()
  ctx.clock.set(new Date().toISOString())
  await s.tell.make()
  t.equal((await matchRows(ctx.app.db)).length, 1, 'one match')
  t.equal((await angleRows(ctx.app.db)).length, 2, 'one angle per camera')
})

