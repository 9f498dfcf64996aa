// Enrollments: adding members to a membership, what they add to the renewals (to the cent), the one
// active enrollment per type (raced), and enrollments ending with their subscription.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { migrateToLatest, migratorFor } from '../db/database.js'
import { createClient } from '../oauth2/clients.js'
import type { TestPaymentProvider } from '../payments/index.js'
import { errorOf } from '../test-support/app.js'
import { secondServer } from '../test-support/second-server.js'
import { SUBSCRIPTIONS, enrollmentSetup as setup, familyPlan } from './test-fixtures.js'

const MINE = '/apis/v2/membership-enrollments'

t.test('the owner adds a member; the owner is enrolled from the confirmation; each sees what they belong to', async (t) => {
  const { ctx, staff, call, owner, member } = await setup(t)
  const { who: ana, subscription, url } = await owner()
  const list = await call('GET', url, ana)
  t.equal(list.statusCode, 200)
  t.match(list.json(), {
    _total: 1,
    items: [
      {
        isOwner: true,
        user: { id: ana.id },
        creatorUser: { id: ana.id },
        membershipSubscription: { id: subscription.id },
        membership: { id: subscription.membership.id },
        displayName: 'Adult monthly',
        type: 'BASIC_MEMBER',
        customFee: 0,
        errors: null,
        startDate: subscription.startDate
      }
    ]
  })
  t.notOk('endDate' in list.json().items[0], 'open-ended')

  ctx.clock.set('2026-02-03T10:00:00.000Z')
  const kid = await member('Leo', 'García')
  const invited = await call('POST', url, ana, { user: { id: kid.id } })
  t.equal(invited.statusCode, 201)
  t.match(invited.json(), { invitationStatus: 'INVITED', user: { id: kid.id } })
  t.notOk('endDate' in invited.json(), 'an invitation has no end: it has not begun')
  const added = await call('POST', `${url}/${invited.json().id}/acceptance`, kid, { accept: true })
  t.equal(added.statusCode, 200)
  const enrollment = added.json()
  t.match(enrollment, {
    invitationStatus: 'ACCEPTED',
    isOwner: false,
    user: { id: kid.id },
    creatorUser: { id: ana.id },
    customFee: 0,
    startDate: '2026-02-03T10:00:00.000Z',
    createdDate: '2026-02-03T10:00:00.000Z',
    _links: { self: { href: `${url}/${enrollment.id}` }, membershipSubscription: { href: `${SUBSCRIPTIONS}/${subscription.id}` } }
  })
  t.same((await call('GET', url, ana)).json().items.map((e: { isOwner: boolean }) => e.isOwner), [false, true], 'newest first')
  t.same((await call('GET', enrollment._links.self.href, kid)).json().id, enrollment.id, 'the member reads their enrollment')
  t.equal((await call('GET', url, kid)).statusCode, 404, 'but not the subscription they do not own')

  const kids = (await call('GET', MINE, kid)).json()
  t.match(kids, { _total: 1, items: [{ id: enrollment.id, membershipSubscription: { id: subscription.id } }] }, 'what the member belongs to')
  t.match((await call('GET', MINE, ana)).json(), { _total: 1, items: [{ isOwner: true }] })
  t.equal((await call('GET', `${MINE}?userId=${kid.id}`, staff)).json()._total, 1, 'staff by user')
  t.equal((await call('GET', MINE, staff)).json()._total, 2, "staff see everyone's")
  t.equal((await call('GET', `${MINE}?userId=${ana.id}`, kid)).statusCode, 403, "a member does not list another's")
  t.equal((await call('GET', `${MINE}?userId=${kid.id}`, kid)).statusCode, 200, 'their own id is fine')

  const after = (await call('GET', `${SUBSCRIPTIONS}/${subscription.id}`, ana)).json()
  t.match(after, { additionalMemberFee: 10, total: 92.89 }, 'the current (first) period stays as charged: no member fee until the next charge')
})

t.test('each member and custom fee is a line of the next renewal, to the cent; a removed member adds nothing', async (t) => {
  const { ctx, staff, call, owner, member, run } = await setup(t)
  const { who: ana, subscription, url } = await owner()
  const kid = await member('Leo', 'García')
  const partner = await member()
  ctx.clock.set('2026-02-05T10:00:00.000Z')
  t.equal((await call('POST', url, staff, { user: { id: kid.id } })).statusCode, 201)

  const bySelf = await call('POST', url, ana, { user: { id: partner.id }, customFee: 5 })
  t.equal(bySelf.statusCode, 403)
  t.match(errorOf(bySelf).message, /only staff may set a customFee/)
  const tooFine = await call('POST', url, staff, { user: { id: partner.id }, customFee: 7.555 })
  t.equal(tooFine.statusCode, 400)
  t.match(errorOf(tooFine).message, /^customFee: 7\.555 has more than 2 decimal/)
  ctx.clock.advance(60_000) // lines follow the order members were added in
  const partnered = await call('POST', url, staff, { user: { id: partner.id }, customFee: 7.5 })
  t.equal(partnered.statusCode, 201)
  t.match(partnered.json(), { customFee: 7.5, creatorUser: { id: staff.id } })

  const job = await run('2026-02-28T09:00:00.000Z')
  // 49.90 + 10.00 + 10.00 + 7.50 = 77.40; fee 2.5% = 1.935 -> 1.94; taxable 79.34; VAT 21% = 16.6614 -> 16.66; total 96.00
  t.match(job.users.items, [{ id: subscription.id, amount: 96 }])
  const renewed = (await call('GET', `${SUBSCRIPTIONS}/${subscription.id}`, ana)).json()
  const order = (await call('GET', `/apis/v2/orders/${renewed.order.id}`, ana)).json()
  t.match(order, {
    kind: 'MEMBERSHIP_RENEWAL',
    status: 'PAID',
    subtotal: 77.4,
    fees: [{ name: 'Service', amount: 1.94 }],
    taxes: [{ name: 'VAT', amount: 16.66 }],
    total: 96
  })
  t.same(order.lines, [
    { kind: 'base', description: 'Adult monthly', amount: 49.9 },
    { kind: 'additional_member_fee', description: 'Additional member: Leo García', amount: 10 },
    { kind: 'additional_member_fee', description: `Additional member: ${partner.email}`, amount: 10 },
    { kind: 'custom_fee', description: `Custom fee: ${partner.email}`, amount: 7.5 }
  ])
  t.match(renewed, { total: 96, additionalMemberFee: 10, fees: [{ amount: 1.94 }], taxes: [{ amount: 16.66 }] }, 'the current period as charged')

  ctx.clock.set('2026-03-10T10:00:00.000Z')
  const kidsEnrollment = (await call('GET', url, ana)).json().items.find((e: { user: { id: string } }) => e.user.id === kid.id)
  const removed = await call('DELETE', `${url}/${kidsEnrollment.id}`, ana)
  t.equal(removed.statusCode, 200)
  t.match(removed.json(), { id: kidsEnrollment.id, endDate: '2026-03-10T10:00:00.000Z' })
  t.match((await call('GET', `${SUBSCRIPTIONS}/${subscription.id}`, ana)).json(), { total: 96 }, 'removing one mid-period does not rewrite what was charged')

  const next = await run('2026-03-31T08:00:00.000Z')
  // 49.90 + 10.00 + 7.50 = 67.40; fee 1.685 -> 1.69; taxable 69.09; VAT 14.5089 -> 14.51; total 83.60
  t.match(next.users.items, [{ amount: 83.6 }])
  const second = (await call('GET', `/apis/v2/orders/${(await call('GET', `${SUBSCRIPTIONS}/${subscription.id}`, ana)).json().order.id}`, ana)).json()
  t.same(second.lines.map((l: { kind: string }) => l.kind), ['base', 'additional_member_fee', 'custom_fee'], 'the removed member is gone')
  t.equal(second.total, 83.6)
})

t.test('one active enrollment per membership type: a clear 409, also for two requests at once', async (t) => {
  const { ctx, staff, call, plan, card, owner, member } = await setup(t)
  const a = await owner()
  const b = await owner()
  const kid = await member()
  const first = (await call('POST', a.url, staff, { user: { id: kid.id } })).json()

  const elsewhere = await call('POST', b.url, staff, { user: { id: kid.id } })
  t.equal(elsewhere.statusCode, 409)
  t.equal(errorOf(elsewhere).message, `the user already holds an active BASIC_MEMBER enrollment (enrollment ${first.id} in membership subscription ${a.subscription.id})`)
  const twice = await call('POST', a.url, staff, { user: { id: kid.id } })
  t.equal(twice.statusCode, 409)
  t.match(errorOf(twice).message, /already enrolled in this membership/)
  const anOwner = await call('POST', a.url, staff, { user: { id: b.who.id } })
  t.equal(anOwner.statusCode, 409, 'an owner holds their own as an enrollment')
  t.match(errorOf(anOwner).message, /holds an active BASIC_MEMBER enrollment/)

  await card(kid)
  const buy = await call('POST', SUBSCRIPTIONS, kid, { mode: 'ORDER', membership: { id: a.subscription.membership.id } })
  t.equal(buy.statusCode, 409, 'an enrolled member cannot buy the same type')
  t.match(errorOf(buy).message, /^the member is enrolled in a BASIC_MEMBER membership \(enrollment /)

  const angel = await plan({ ...familyPlan, displayName: 'Angel', type: 'ANGEL_MEMBER' })
  const c = await owner(angel)
  t.equal((await call('POST', c.url, staff, { user: { id: kid.id } })).statusCode, 201, 'another type is another rule')

  // Someone paying for their own (waiting for the bank) cannot be enrolled in the meantime.
  const buyer = await member()
  await card(buyer, '3184')
  t.match((await call('POST', SUBSCRIPTIONS, buyer, { mode: 'ORDER', membership: { id: a.subscription.membership.id } })).json(), { status: 'REQUIRES_AUTHENTICATION' })
  const meanwhile = await call('POST', a.url, staff, { user: { id: buyer.id } })
  t.equal(meanwhile.statusCode, 409)
  t.match(errorOf(meanwhile).message, /is buying a BASIC_MEMBER membership of their own/)

  const raced = await member()
  const [x, y] = await Promise.all([call('POST', a.url, staff, { user: { id: raced.id } }), call('POST', b.url, staff, { user: { id: raced.id } })])
  t.same([x.statusCode, y.statusCode].sort(), [201, 409], 'exactly one of two requests at once enrolls')
  const rows = await ctx.app.db.selectFrom('membership_enrollments').select('id').where('user_id', '=', raced.id).execute()
  t.equal(rows.length, 1, 'one row')
})

t.test('two processes enrolling one user at once: one 201 and one 409, never a 5xx', async (t) => {
  const { ctx, staff, call, owner, member } = await setup(t)
  const a = await owner()
  const b = await owner()
  const base = await secondServer(t, ctx.config.DATABASE_URL)
  for (let round = 0; round < 8; round++) {
    const user = await member()
    const [here, there] = await Promise.all([
      call('POST', a.url, staff, { user: { id: user.id } }),
      fetch(`${base}${b.url}`, {
        method: 'POST',
        headers: { authorization: staff.authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ user: { id: user.id } })
      })
    ])
    t.same([here.statusCode, there.status].sort(), [201, 409], `round ${round}: one enrollment (won by ${here.statusCode === 201 ? 'this' : 'the other'} process)`)
    const rows = await ctx.app.db.selectFrom('membership_enrollments').select('id').where('user_id', '=', user.id).execute()
    t.equal(rows.length, 1)
  }
})

t.test("the owner's enrollment stays; a member's ends on removal and the user may be enrolled elsewhere", async (t) => {
  const { staff, call, owner, member, enrollmentCount } = await setup(t)
  const a = await owner()
  const b = await owner()
  const kid = await member()
  const kids = (await call('POST', a.url, staff, { user: { id: kid.id } })).json()
  const owners = (await call('GET', a.url, a.who)).json().items.find((e: { isOwner: boolean }) => e.isOwner)
  const mine = await call('DELETE', `${a.url}/${owners.id}`, a.who)
  t.equal(mine.statusCode, 409)
  t.match(errorOf(mine).message, /owner's enrollment cannot be removed; cancel the membership subscription instead/)
  t.equal((await call('DELETE', `${a.url}/${owners.id}`, staff)).statusCode, 409, 'not by staff either')

  const removed = await call('DELETE', `${a.url}/${kids.id}`, staff)
  t.equal(removed.statusCode, 200)
  const again = await call('DELETE', `${a.url}/${kids.id}`, a.who)
  t.equal(again.statusCode, 200, 'removing again answers it as it is')
  t.equal(again.json().endDate, removed.json().endDate)
  t.equal((await call('POST', b.url, staff, { user: { id: kid.id } })).statusCode, 201, 'ended, the user is free to join another')
  t.equal(await enrollmentCount(), 4, 'never deleted: two owners and the kid twice')

  // Added by someone else, a member may leave on their own.
  const joined = (await call('GET', b.url, b.who)).json().items.find((e: { user: { id: string } }) => e.user.id === kid.id)
  const left = await call('DELETE', `${b.url}/${joined.id}`, kid)
  t.equal(left.statusCode, 200, 'the enrolled member leaves')
  t.ok(left.json().endDate, 'ended')
  const stranger = await member()
  t.equal((await call('DELETE', `${b.url}/${joined.id}`, stranger)).statusCode, 404, 'nobody else may')
})

t.test('enrollments end with their subscription: at the end of the cycle, reopened on withdrawal, and at once by staff', async (t) => {
  const { ctx, staff, call, owner, member, run } = await setup(t)
  const a = await owner()
  const b = await owner()
  const kid = await member()
  const other = await member()
  t.equal((await call('POST', a.url, staff, { user: { id: kid.id } })).statusCode, 201)
  const sub = `${SUBSCRIPTIONS}/${a.subscription.id}`

  ctx.clock.set('2026-02-10T12:00:00.000Z')
  t.equal((await call('POST', `${sub}/cancellation`, a.who, {})).statusCode, 200)
  const ending = (await call('GET', a.url, a.who)).json().items
  t.same(ending.map((e: { endDate?: string }) => e.endDate), ['2026-02-28T09:00:00.000Z', '2026-02-28T09:00:00.000Z'], 'both end when the subscription does')
  t.match((await call('GET', MINE, kid)).json().items, [{ endDate: '2026-02-28T09:00:00.000Z' }])
  t.equal((await call('POST', b.url, staff, { user: { id: kid.id } })).statusCode, 409, 'still active until then')
  const late = await call('POST', a.url, staff, { user: { id: other.id } })
  t.equal(late.statusCode, 201, 'a member added to a pending cancellation')
  t.equal(late.json().endDate, '2026-02-28T09:00:00.000Z', 'ends with it')

  t.equal((await call('DELETE', `${sub}/cancellation`, a.who)).statusCode, 200)
  const reopened = (await call('GET', a.url, a.who)).json().items
  t.same(reopened.map((e: { endDate?: string }) => e.endDate ?? null), [null, null, null], 'withdrawn: open-ended again')

  // Cancelled again: at the end of the cycle it is over, and nothing is renewed.
  t.equal((await call('POST', `${sub}/cancellation`, a.who, {})).statusCode, 200)
  t.notOk((await run('2026-02-28T09:00:00.000Z')).users.items.some((u: { id: string }) => u.id === a.subscription.id))
  t.match((await call('GET', sub, a.who)).json(), { extendedStatus: 'CANCELLED' })
  t.equal((await call('POST', b.url, staff, { user: { id: kid.id } })).statusCode, 201, 'ended with it: free to join another')
  const closed = await call('POST', a.url, staff, { user: { id: (await member()).id } })
  t.equal(closed.statusCode, 409)
  t.match(errorOf(closed).message, /^the subscription is not in force \(CANCELLED\)/)

  // Staff end b at once: its enrollments end that moment.
  ctx.clock.set('2026-03-05T10:00:00.000Z')
  t.match((await call('POST', `${SUBSCRIPTIONS}/${b.subscription.id}/cancellation`, staff, { immediate: true })).json(), { extendedStatus: 'CANCELLED' })
  t.same(
    (await call('GET', b.url, staff)).json().items.map((e: { endDate?: string }) => e.endDate),
    ['2026-03-05T10:00:00.000Z', '2026-03-05T10:00:00.000Z'],
    'the kid and the owner'
  )
  t.equal((await call('GET', MINE, kid)).json()._total, 2, 'the history stays')
})

t.test('a HOLD that runs out ends the subscription in the CHARGE job, and its enrollments with it', async (t) => {
  const { ctx, staff, call, plan, card, owner, member, run } = await setup(t)
  const strict = await plan({ ...familyPlan, displayName: 'Strict', graceDays: 0, holdDays: 0 })
  const a = await owner(strict)
  const kid = await member()
  t.equal((await call('POST', a.url, staff, { user: { id: kid.id } })).statusCode, 201)
  await card(a.who, '9995')
  t.match((await run('2026-02-28T09:00:00.000Z')).job.counts, { grace: 1 })
  t.match((await run('2026-03-02T09:00:00.000Z')).job.counts, { hold: 1 })
  t.match((await run('2026-03-03T09:00:00.000Z')).job.counts, { hold_expired: 1 })
  const ended = (await call('GET', a.url, a.who)).json().items
  t.same(ended.map((e: { endDate?: string }) => e.endDate), ['2026-03-02T09:00:00.000Z', '2026-03-02T09:00:00.000Z'], 'when the HOLD ran out')
  t.match((await call('GET', `${SUBSCRIPTIONS}/${a.subscription.id}`, a.who)).json(), { extendedStatus: 'CANCELLED', endDate: '2026-03-02T09:00:00.000Z' })
  void ctx
})

t.test('confirmation after the bank, and a FREE plan, make the owner\'s enrollment; the migration backfills older ones', async (t) => {
  const { ctx, staff, call, plan, card, member, enrollmentCount } = await setup(t)
  const buyer = await member()
  await card(buyer, '3184')
  const pending = (await call('POST', SUBSCRIPTIONS, buyer, { mode: 'ORDER', membership: { id: await plan() } })).json()
  t.equal((await call('GET', `${SUBSCRIPTIONS}/${pending.id}/enrollments`, buyer)).json()._total, 0, 'nobody enrolled before it is paid')
  const provider = ctx.app.paymentProvider as TestPaymentProvider
  await provider.completeAuthentication(provider.list()[0]!.reference)
  t.match((await call('POST', `${SUBSCRIPTIONS}/${pending.id}/confirm`, buyer)).json(), { status: 'CONFIRMED' })
  t.match((await call('GET', `${SUBSCRIPTIONS}/${pending.id}/enrollments`, buyer)).json(), { _total: 1, items: [{ isOwner: true, user: { id: buyer.id } }] })

  const free = await plan({ displayName: 'Friends', type: 'ANGEL_MEMBER', chargeType: 'FREE' })
  const friend = await member()
  const given = (await call('POST', SUBSCRIPTIONS, staff, { mode: 'ORDER', membership: { id: free }, member: { id: friend.id } })).json()
  t.match((await call('GET', `${SUBSCRIPTIONS}/${given.id}/enrollments`, friend)).json(), { _total: 1, items: [{ isOwner: true, creatorUser: { id: staff.id } }] })
  const fee = await call('POST', `${SUBSCRIPTIONS}/${given.id}/enrollments`, staff, { user: { id: buyer.id }, customFee: 3 })
  t.equal(fee.statusCode, 400)
  t.match(errorOf(fee).message, /^customFee: a FREE membership is not renewed/)

  // Undo 0011 and apply it again over these subscriptions: every CONFIRMED one gets its owner back.
  await migratorFor(ctx.app.db).migrateTo('0010_memberships')
  await migrateToLatest(ctx.app.db)
  t.equal(await enrollmentCount(), 2)
  const owners = await ctx.app.db.selectFrom('membership_enrollments').select(['user_id', 'is_owner', 'end_date']).orderBy('user_id').execute()
  t.same(owners, [{ user_id: buyer.id, is_owner: 1, end_date: null }, { user_id: friend.id, is_owner: 1, end_date: null }].sort((x, y) => (x.user_id < y.user_id ? -1 : 1)))
})

t.test("each route's 401, 403, 404 and 400; a member cannot enroll into someone else's subscription", async (t) => {
  const { ctx, staff, call, owner, member, enrollmentCount } = await setup(t)
  const a = await owner()
  const b = await owner()
  const kid = await member()
  const kids = (await call('POST', a.url, a.who, { user: { id: kid.id } })).json()
  const one = `${a.url}/${kids.id}`
  const routes: Array<['GET' | 'POST' | 'DELETE', string, unknown?]> = [
    ['GET', a.url],
    ['POST', a.url, { user: { id: kid.id } }],
    ['GET', one],
    ['DELETE', one],
    ['GET', MINE]
  ]
  const client = await createClient(ctx.app.db, { name: 'partner', grants: ['client_credentials'] }, ctx.clock)
  const token = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/token',
    headers: { authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}` },
    payload: { grant_type: 'client_credentials' }
  })
  const clientToken = { authorization: `Bearer ${token.json().access_token}` }
  for (const [method, url, body] of routes) {
    t.equal(errorOf(await call(method, url, undefined, body)).statusCode, 401, `${method} ${url} without credentials`)
    t.equal(errorOf(await call(method, url, clientToken, body)).statusCode, 403, `${method} ${url} with a client's token, not a user's`)
  }

  const stranger = await member()
  for (const [method, url, body] of routes.slice(0, 4)) {
    t.equal(errorOf(await call(method, url, b.who, body)).statusCode, 404, `${method} ${url}: another owner's subscription does not exist for them`)
    t.equal(errorOf(await call(method, url.replace(a.subscription.id, randomUUID()), staff, body)).statusCode, 404, `${method}: no such subscription`)
  }
  t.equal(errorOf(await call('POST', a.url, stranger, { user: { id: stranger.id } })).statusCode, 404, 'a member cannot enroll themself into a stranger\'s')
  t.equal(errorOf(await call('GET', `${a.url}/${randomUUID()}`, a.who)).statusCode, 404, 'no such enrollment')
  t.equal(errorOf(await call('DELETE', `${b.url}/${kids.id}`, staff)).statusCode, 404, 'an enrollment of another subscription')
  t.equal(errorOf(await call('GET', one, stranger)).statusCode, 404, 'neither enrolled nor the owner')

  const bad: Array<[string, 'GET' | 'POST', unknown, RegExp]> = [
    [a.url, 'POST', {}, /user/],
    [a.url, 'POST', { user: { id: kid.id }, role: 'owner' }, /role is not allowed/],
    [a.url, 'POST', { user: { id: '' } }, /user\.id/],
    [a.url, 'POST', { user: { id: randomUUID() } }, /^user\.id: no user /],
    [a.url, 'POST', { user: { id: kid.id }, customFee: -1 }, /customFee/],
    [a.url, 'POST', { user: { id: kid.id }, customFee: '5' }, /customFee/],
    [`${a.url}?ipp=0`, 'GET', undefined, /ipp/],
    [`${MINE}?page=0`, 'GET', undefined, /page/],
    [`${MINE}?userId=`, 'GET', undefined, /userId/],
    [`${MINE}?status=ACTIVE`, 'GET', undefined, /status is not allowed/]
  ]
  for (const [url, method, body, message] of bad) {
    const res = await call(method, url, staff, body)
    t.equal(res.statusCode, 400, `${method} ${url} ${JSON.stringify(body)}`)
    t.match(errorOf(res).message, message)
  }
  t.equal(await enrollmentCount(), 3, 'no refusal wrote anything')
})

t.test('enrolment is an invitation: nothing changes for a stranger the owner names until they accept', async (t) => {
  const { ctx, staff, call, owner, member, run, planId, card } = await setup(t)
  const { who: ana, subscription, url } = await owner()
  const stranger = await member('Eva', 'Ruiz')
  ctx.clock.set('2026-02-05T10:00:00.000Z')
  const invited = await call('POST', url, ana, { email: stranger.email.toUpperCase() })
  t.equal(invited.statusCode, 201, 'by e-mail')
  t.match(invited.json(), { invitationStatus: 'INVITED', user: { id: stranger.id } })
  const again = await call('POST', url, ana, { user: { id: stranger.id } })
  t.equal(again.statusCode, 409)
  t.match(errorOf(again).message, /already invited/)
  const mail = await ctx.app.db.selectFrom('mail_outbox').selectAll().where('kind', '=', 'enrollment_invitation').execute()
  t.equal(mail.length, 1, 'the invited user is told by mail')

  // Not family for the owner's packages, and no member fee or name on the owner's renewal.
  t.equal((await call('GET', MINE, stranger)).json()._total, 1, 'they see the invitation')
  t.same(await ctx.app.db.selectFrom('membership_enrollments').select('id').where('user_id', '=', stranger.id).where('invitation_status', '=', 'ACCEPTED').execute(), [])
  const renewal = await run('2026-02-28T09:00:00.000Z')
  t.match(renewal.users.items, [{ id: subscription.id, amount: 61.89 }], 'charged as if alone: no additional member fee')
  const order = (await call('GET', `/apis/v2/orders/${(await call('GET', `${SUBSCRIPTIONS}/${subscription.id}`, ana)).json().order.id}`, ana)).json()
  t.notMatch(JSON.stringify(order.lines), /Eva/, 'no name on the order')

  // Their own purchase of the same type is not refused.
  const other = await member()
  const own = await owner()
  const theirs = await call('POST', own.url, staff, { user: { id: other.id } })
  t.equal(theirs.statusCode, 201)
  await card(stranger)
  ctx.clock.set('2026-03-01T10:00:00.000Z')
  const bought = await call('POST', SUBSCRIPTIONS, stranger, { mode: 'ORDER', membership: { id: planId } })
  t.equal(bought.statusCode, 201, 'no 409 on their own purchase while merely invited')
  const late = await call('POST', `${url}/${invited.json().id}/acceptance`, stranger, { accept: true })
  t.equal(late.statusCode, 409, 'accepting now would make two of a type')
  t.match(errorOf(late).message, /already holds an active BASIC_MEMBER enrollment/)
  const declined = await call('POST', `${url}/${invited.json().id}/acceptance`, stranger, { accept: false })
  t.match(declined.json(), { invitationStatus: 'DECLINED' })
  t.equal((await call('POST', `${url}/${invited.json().id}/acceptance`, stranger, { accept: true })).statusCode, 409, 'answered once')

  // Only the invited user answers.
  const kid = await member()
  const kidInvite = (await call('POST', url, ana, { user: { id: kid.id } })).json()
  t.equal((await call('POST', `${url}/${kidInvite.id}/acceptance`, ana, { accept: true })).statusCode, 404, 'not the owner')
  t.equal((await call('POST', `${url}/${kidInvite.id}/acceptance`, staff, { accept: true })).statusCode, 403, 'not staff either')
  const accepted = await call('POST', `${url}/${kidInvite.id}/acceptance`, kid, { accept: true })
  t.match(accepted.json(), { invitationStatus: 'ACCEPTED', startDate: '2026-03-01T10:00:00.000Z' })
  const next = await run('2026-03-31T08:00:00.000Z')
  t.match(next.users.items.find((u: { id: string }) => u.id === subscription.id), { amount: 74.29 }, 'accepted: the member fee from the next renewal')
})

t.test("a plan's maxEnrollments caps a subscription's members, invitations included: 409 over it", async (t) => {
  const { staff, call, plan, owner, member } = await setup(t)
  const capped = await plan({ ...familyPlan, displayName: 'Couple', maxEnrollments: 2 })
  t.equal((await call('GET', `/apis/v2/admin/memberships/${capped}`, staff)).json().maxEnrollments, 2)
  const { who: ana, url } = await owner(capped)
  const first = await member()
  const invited = (await call('POST', url, ana, { user: { id: first.id } })).json()
  const over = await call('POST', url, ana, { user: { id: (await member()).id } })
  t.equal(over.statusCode, 409)
  t.match(errorOf(over).message, /^this plan covers at most 2 members per subscription \(maxEnrollments\), and 2 are enrolled or invited/)
  const byStaff = await call('POST', url, staff, { user: { id: (await member()).id } })
  t.equal(byStaff.statusCode, 409, 'staff too')
  t.equal((await call('POST', `${url}/${invited.id}/acceptance`, first, { accept: true })).statusCode, 200)
  t.equal((await call('GET', url, ana)).json()._total, 2)
})
