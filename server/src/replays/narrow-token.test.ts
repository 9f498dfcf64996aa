// A token narrower than `api` (a web view's `replays profile`, a partner app's `replays` or `read`) is
// a member's token whoever holds it (issue 47): a staff member or admin using one is held to every
// member rule on the routes such a token opens, the replay rate limits included (PROTOCOLS.md, scopes).
import t from 'tap'
import { errorOf, userWithToken, type TestApp } from '../test-support/app.js'
import { REPLAYS, filmedVenue } from './test-helpers.js'

/** A password-grant token of a new user of `role` narrowed to `scope`, as a web view or partner app holds. */
async function narrowToken(ctx: TestApp, role: 'staff' | 'admin', scope: string) {
  const user = await userWithToken(ctx, role)
  const res = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'password', username: user.email, password: user.password, scope }).toString()
  })
  if (res.statusCode !== 201 || res.json().scope !== scope) throw new Error(`no ${scope} token: ${res.body}`)
  return { id: user.id, authorization: `Bearer ${res.json().access_token}` }
}

t.test("a staff member's narrow token counts against the members' per-court replay limit", async (t) => {
  const { ctx, venue, call } = await filmedVenue(t, { REPLAY_COURT_RATE_LIMIT_MAX: '5', REPLAY_MEMBER_RATE_LIMIT_MAX: '100' })
  const narrow = await narrowToken(ctx, 'staff', 'replays profile')
  const ask = () => call('POST', REPLAYS, narrow, { court: { id: venue.court1.id }, seconds: 10 })
  for (let i = 0; i < 5; i++) t.equal((await ask()).statusCode, 201, `request ${i + 1}`)
  const over = await ask()
  t.equal(over.statusCode, 429, "the court's sixth request within a minute")
  t.match(errorOf(over).message, /members' replays of this court: at most 5 per 1 minute\(s\)/)
  const full = await userWithToken(ctx, 'staff')
  t.equal((await call('POST', REPLAYS, full, { court: { id: venue.court1.id }, seconds: 10 })).statusCode, 201, "the same role with an api token is staff: not counted")
})

t.test("an admin's narrow token counts against the per-member hourly replay limit, under their own count", async (t) => {
  const { ctx, venue, call } = await filmedVenue(t, { REPLAY_MEMBER_RATE_LIMIT_MAX: '3', REPLAY_COURT_RATE_LIMIT_MAX: '100' })
  const narrow = await narrowToken(ctx, 'admin', 'replays')
  const ask = () => call('POST', REPLAYS, narrow, { court: { id: venue.court1.id }, seconds: 10 })
  for (let i = 0; i < 3; i++) t.equal((await ask()).statusCode, 201)
  const over = await ask()
  t.equal(over.statusCode, 429, 'the fourth in an hour')
  t.match(errorOf(over).message, /^Too many replays asked for by this member: at most 3 per 1 hour\(s\)/)
})

t.test("a staff member's narrow token has a member's footage and visibility rules", async (t) => {
  const { ctx, venue, member, call } = await filmedVenue(t)
  const narrow = await narrowToken(ctx, 'staff', 'replays')
  const old = new Date(ctx.clock.now().getTime() - 20 * 60_000).toISOString()
  const reasoned = await call('POST', REPLAYS, narrow, { court: { id: venue.court1.id }, seconds: 10, end: old, accessReason: 'an incident on court 1' })
  t.equal(reasoned.statusCode, 403, "no staff's reason for older footage")
  const mine = await call('POST', REPLAYS, member, { court: { id: venue.court1.id }, seconds: 10 })
  t.equal(mine.statusCode, 201)
  t.equal((await call('GET', `${REPLAYS}/${mine.json().id}`, narrow)).statusCode, 404, "another member's replay is not found")
  t.equal((await call('GET', `${REPLAYS}?user=${member.id}`, narrow)).statusCode, 400, "nor listed")
  const read = await narrowToken(ctx, 'staff', 'read')
  t.equal((await call('GET', `/apis/v2/packages?userId=${member.id}`, read)).statusCode, 403, "a read token lists no one else's packages")
})
