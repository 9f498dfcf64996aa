// The invitation mail's link: the token reads only what the invited user needs and answers the
// invitation as …/acceptance would, once; used, expired, withdrawn, guessed and other invitations'
// tokens are refused, and credentials sent along change nothing.
import t from 'tap'
import { errorOf } from '../test-support/app.js'
import { secondServer } from '../test-support/second-server.js'
import { SUBSCRIPTIONS, enrollmentSetup, familyPlan } from './test-fixtures.js'

const LOOKUP = '/apis/v2/membership-enrollment-invitations/lookup'
const ANSWER = '/apis/v2/membership-enrollment-invitations/answer'
const BASE = 'https://club.example.org/app'

async function setup(t: Parameters<typeof enrollmentSetup>[0], env: Record<string, string> = {}) {
  const s = await enrollmentSetup(t, { PUBLIC_BASE_URL: BASE, ...env })
  const { ctx, call, owner, member } = s
  /** The links the development mailer printed, newest last. */
  const mailedTokens = async () => {
    await ctx.app.background.idle()
    return ctx
      .logs()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { msg?: string; mail?: { body: string } })
      .filter((l) => l.msg === 'mail (development log mailer)')
      .flatMap((l) => [...l.mail!.body.matchAll(/\/enrollment-invitation\?token=([A-Za-z0-9_-]+)/g)].map((m) => m[1]!))
  }
  /** Ana owns a subscription and invites a new member; the invitation and its mailed token. */
  const invitation = async (from?: Awaited<ReturnType<typeof owner>>) => {
    const ana = from ?? (await owner())
    await ctx.app.db.updateTable('users').set({ first_name: 'Ana', last_name: 'Ruiz' }).where('id', '=', ana.who.id).execute()
    const invited = await member('Eva', 'Soler')
    const res = await call('POST', ana.url, ana.who, { user: { id: invited.id } })
    if (res.statusCode !== 201) throw new Error(res.body)
    const tokens = await mailedTokens()
    return { ana, invited, enrollment: res.json(), token: tokens[tokens.length - 1]! }
  }
  const lookup = (token: string, headers: Record<string, string> = {}) => ctx.app.inject({ method: 'POST', url: LOOKUP, headers, payload: { token } })
  const answer = (token: string, accept: boolean, headers: Record<string, string> = {}) =>
    ctx.app.inject({ method: 'POST', url: ANSWER, headers, payload: { token, accept } })
  const statusOf = async (id: string) =>
    (await ctx.app.db.selectFrom('membership_enrollments').select('invitation_status').where('id', '=', id).executeTakeFirstOrThrow()).invitation_status
  return { ...s, invitation, mailedTokens, lookup, answer, statusOf }
}

t.test('the mail links to the page; the token shows only who invites to what, and accepts as …/acceptance would', async (t) => {
  const { ctx, call, invitation, lookup, answer } = await setup(t)
  const { ana, invited, enrollment, token } = await invitation()
  const mail = ctx.logs().split('\n').find((l) => l.includes('mail (development log mailer)'))!
  t.match(JSON.parse(mail).mail.body, `${BASE}/enrollment-invitation?token=${token}`, 'the link is built from PUBLIC_BASE_URL')
  t.equal(token.length, 43, '256 random bits')
  const row = await ctx.app.db.selectFrom('membership_enrollments').selectAll().where('id', '=', enrollment.id).executeTakeFirstOrThrow()
  t.ok(row.invitation_token_hash, 'a hash is kept')
  t.notOk(JSON.stringify(row).includes(token), 'the token is stored only as a hash')

  const page = await ctx.app.inject({ method: 'GET', url: '/enrollment-invitation?token=x' })
  t.equal(page.statusCode, 200, 'the page the link opens is served')
  t.match(page.headers['content-type'], /text\/html/)
  t.equal(page.headers['referrer-policy'], 'no-referrer', 'the token in the address is sent to no other site')

  const read = await lookup(token)
  t.equal(read.statusCode, 200)
  t.same(read.json(), { inviter: { name: 'Ana Ruiz' }, membership: { displayName: 'Adult monthly' }, invitationStatus: 'INVITED' }, 'nothing else: no ids, no addresses')

  ctx.clock.set('2026-02-02T12:00:00.000Z')
  const accepted = await answer(token, true)
  t.equal(accepted.statusCode, 200)
  t.same(accepted.json(), { inviter: { name: 'Ana Ruiz' }, membership: { displayName: 'Adult monthly' }, invitationStatus: 'ACCEPTED' })
  const seen = (await call('GET', `${ana.url}/${enrollment.id}`, invited)).json()
  t.match(seen, { invitationStatus: 'ACCEPTED', startDate: '2026-02-02T12:00:00.000Z' }, 'the enrollment began when accepted, as …/acceptance does')
  t.notOk('endDate' in seen)

  const twice = await answer(token, true)
  t.equal(twice.statusCode, 409, 'answered once')
  t.match(errorOf(twice).message, 'the invitation was already answered (ACCEPTED)')
  t.equal((await answer(token, false)).statusCode, 409, 'nor declined afterwards')
  t.match(errorOf(await lookup(token)), { statusCode: 409, message: /already answered \(ACCEPTED\)/ }, 'a used link says so when read')
  t.equal((await call('POST', `${ana.url}/${enrollment.id}/acceptance`, invited, { accept: false })).statusCode, 409, 'nor signed in')
})

t.test('declining by the link: nothing changes for them, and the link is used', async (t) => {
  const { ctx, invitation, answer, lookup, statusOf } = await setup(t)
  const { invited, enrollment, token } = await invitation()
  const declined = await answer(token, false)
  t.match(declined.json(), { invitationStatus: 'DECLINED' })
  t.equal(await statusOf(enrollment.id), 'DECLINED')
  t.same(await ctx.app.db.selectFrom('membership_enrollments').select('id').where('user_id', '=', invited.id).where('invitation_status', '=', 'ACCEPTED').execute(), [])
  t.match(errorOf(await answer(token, true)).message, 'the invitation was already answered (DECLINED)', 'no accepting after declining')
  t.equal((await lookup(token)).statusCode, 409)
})

t.test("a guessed token, another invitation's token, or credentials sent along: only the token's own invitation, as it is", async (t) => {
  const { ctx, staff, owner, invitation, answer, lookup, statusOf } = await setup(t)
  const ana = await owner()
  const first = await invitation(ana)
  const second = await invitation(ana)

  for (const guess of ['a'.repeat(43), first.enrollment.id, first.token.slice(0, -1), `${first.token}x`, first.token.toUpperCase()]) {
    const res = await answer(guess, true, { authorization: ana.who.authorization })
    t.equal(res.statusCode, 400, `guessed ${guess.slice(0, 12)}…`)
    t.equal(errorOf(res).message, 'token is not a valid invitation token')
    t.equal((await lookup(guess)).statusCode, 400)
  }
  const empty = await answer('', true)
  t.match(errorOf(empty), { statusCode: 400, message: /token/ })
  const named = await ctx.app.inject({ method: 'POST', url: ANSWER, payload: { token: second.token, accept: true, enrollmentId: first.enrollment.id } })
  t.match(errorOf(named), { statusCode: 400, message: /enrollmentId/ }, 'an invitation cannot be named beside the token')
  const none = await ctx.app.inject({ method: 'POST', url: ANSWER, headers: { authorization: first.invited.authorization }, payload: { accept: true } })
  t.match(errorOf(none), { statusCode: 400, message: /token/ }, "the invited user's own sign-in is no token")

  // The second invitation's token, sent with the owner's, the first invitee's or staff's credentials,
  // answers the second invitation only.
  for (const who of [ana.who, first.invited, staff]) t.equal((await lookup(second.token, { authorization: who.authorization })).json().invitationStatus, 'INVITED')
  const res = await answer(second.token, true, { authorization: first.invited.authorization })
  t.equal(res.statusCode, 200)
  t.equal(await statusOf(second.enrollment.id), 'ACCEPTED')
  t.equal(await statusOf(first.enrollment.id), 'INVITED', 'the other invitation is untouched')
  const accepted = await ctx.app.db.selectFrom('membership_enrollments').select('user_id').where('id', '=', second.enrollment.id).executeTakeFirstOrThrow()
  t.equal(accepted.user_id, second.invited.id, 'accepted for the invited user, whoever sent the request')
  t.equal((await answer(first.token, false, { authorization: staff.authorization })).json().invitationStatus, 'DECLINED', "staff's credentials do not matter either")
})

t.test('an expired invitation (its subscription ended) and a withdrawn one say so, and neither way accepts them', async (t) => {
  const { ctx, call, owner, invitation, answer, lookup, statusOf } = await setup(t)
  const ana = await owner()
  const kept = await invitation(ana)
  const withdrawn = await invitation(ana)

  const removed = await call('DELETE', `${ana.url}/${withdrawn.enrollment.id}`, ana.who)
  t.equal(removed.statusCode, 200)
  t.match(removed.json(), { invitationStatus: 'WITHDRAWN' }, 'removing an unanswered invitation withdraws it')
  t.match(errorOf(await lookup(withdrawn.token)), { statusCode: 409, message: 'the invitation was withdrawn; it can no longer be answered' })
  t.equal((await answer(withdrawn.token, true)).statusCode, 409)
  const signedIn = await call('POST', `${ana.url}/${withdrawn.enrollment.id}/acceptance`, withdrawn.invited, { accept: true })
  t.match(errorOf(signedIn), { statusCode: 409, message: /withdrawn/ }, 'nor signed in')
  t.equal(await statusOf(withdrawn.enrollment.id), 'WITHDRAWN')

  // The owner cancels: the subscription ends with its cycle, and the invitation with it.
  t.equal((await call('POST', `${SUBSCRIPTIONS}/${ana.subscription.id}/cancellation`, ana.who, {})).statusCode, 200)
  const { end_date: end } = await ctx.app.db.selectFrom('membership_subscriptions').select('end_date').where('id', '=', ana.subscription.id).executeTakeFirstOrThrow()
  t.equal((await lookup(kept.token)).statusCode, 200, 'still good until the subscription ends')
  ctx.clock.set(end!)
  const expired = await answer(kept.token, true)
  t.match(errorOf(expired), { statusCode: 409, message: /^the invitation has expired: the membership subscription is no longer in force/ })
  t.match(errorOf(await lookup(kept.token)), { statusCode: 409, message: /has expired/ })
  t.equal(await statusOf(kept.enrollment.id), 'INVITED', 'nothing written')
  t.equal((await call('POST', `${ana.url}/${kept.enrollment.id}/acceptance`, kept.invited, { accept: true })).statusCode, 409, 'nor accepted signed in')
})

t.test("accepting by the link re-checks what …/acceptance does: the plan's cap and one enrollment per type", async (t) => {
  const { ctx, admin, call, plan, owner, card, planId, invitation, answer, lookup, statusOf } = await setup(t)
  const capped = await plan({ ...familyPlan, displayName: 'Couple', maxEnrollments: 3 })
  const ana = await owner(capped)
  const invited = await invitation(ana)
  const lowered = await ctx.app.inject({ method: 'PATCH', url: `/apis/v2/admin/memberships/${capped}`, headers: { authorization: admin.authorization }, payload: { maxEnrollments: 1 } })
  t.equal(lowered.statusCode, 200)
  const over = await answer(invited.token, true)
  t.match(errorOf(over), { statusCode: 409, message: /^this plan covers at most 1 members per subscription \(maxEnrollments\)/ })
  t.equal(await statusOf(invited.enrollment.id), 'INVITED', 'refused, not used: the invitation stands')
  t.equal((await lookup(invited.token)).statusCode, 200)

  const other = await invitation(await owner())
  await card(other.invited)
  t.equal((await call('POST', SUBSCRIPTIONS, other.invited, { mode: 'ORDER', membership: { id: planId } })).statusCode, 201, 'they bought their own')
  const second = await answer(other.token, true)
  t.match(errorOf(second), { statusCode: 409, message: /already holds an active BASIC_MEMBER enrollment/ })
  t.equal((await answer(other.token, false)).json().invitationStatus, 'DECLINED', 'declining is still possible')
})

t.test('two answers with one token at once, from two server processes: exactly one wins', async (t) => {
  const { ctx, owner, invitation, answer, statusOf } = await setup(t)
  const base = await secondServer(t, ctx.config.DATABASE_URL)
  const ana = await owner()
  for (let round = 0; round < 6; round++) {
    const { enrollment, token } = await invitation(ana)
    const accept = round % 2 === 0
    const [here, there] = await Promise.all([
      answer(token, accept),
      fetch(`${base}${ANSWER}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token, accept: !accept }) })
    ])
    t.same([here.statusCode, there.status].sort(), [200, 409], `round ${round}`)
    const winner = here.statusCode === 200 ? accept : !accept
    t.equal(await statusOf(enrollment.id), winner ? 'ACCEPTED' : 'DECLINED', 'the row says what the winner was told')
  }
})

t.test('the link routes are limited per client IP', async (t) => {
  const { lookup, answer } = await setup(t, { INVITATION_LINK_RATE_LIMIT_MAX: '3' })
  for (let i = 0; i < 3; i++) t.equal((await lookup(`guess-${i}`)).statusCode, 400)
  const limited = await lookup('guess-4')
  t.match(errorOf(limited), { statusCode: 429, message: /Too many invitation link requests: at most 3 per 1 hour/ })
  t.equal((await answer('guess-5', true)).statusCode, 400, 'each route counts its own')
})
