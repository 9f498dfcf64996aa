// Packages over HTTP: issued from a PACKAGE template, read, renamed and re-dated, cancelled with a
// pro-rata refund; redemptions matched against constraints (events, bookings across peak hours in
// the area's zone, guests and kids), taken atomically (a race for the last item has one winner),
// idempotent for the same target, given back on cancel unless late or expired.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { setDefaultPaymentMethod } from '../users/payment-methods.js'
import { issuePackage } from './issue.js'
import { errorOf, testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { testVenue } from '../test-support/venue.js'
import { caller, issued, packageTemplate, tenBookings, threeReplays } from './test-fixtures.js'

const PACKAGES = '/apis/v2/packages'

async function setup(t: Parameters<typeof testApp>[0], env: Record<string, string> = {}) {
  const ctx = await testApp(t, { CLUB_TIMEZONE: 'Europe/Madrid', ACCESS_TOKEN_TTL_SECONDS: String(365 * 86400), ...env })
  const staff = await userWithToken(ctx, 'staff')
  const admin = await userWithToken(ctx, 'admin')
  const member = await userWithToken(ctx, 'member')
  const other = await userWithToken(ctx, 'member')
  return { ctx, staff, admin, member, other, call: caller(ctx) }
}

/** A package bought for `paidMinor` (as a purchase records it): the charge made through the provider. */
async function boughtPackage(ctx: TestApp, memberId: string, templateId: string, paidMinor: number) {
  await setDefaultPaymentMethod(ctx.app.db, memberId, { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030 }, ctx.clock)
  const method = await ctx.app.db.selectFrom('payment_methods').selectAll().where('user_id', '=', memberId).executeTakeFirstOrThrow()
  const key = `purchase-${randomUUID()}`
  const charge = await ctx.app.paymentProvider.charge({
    amount: paidMinor,
    currency: 'EUR',
    idempotencyKey: key,
    description: 'package',
    metadata: {},
    paymentMethod: { brand: method.brand, last4: method.last4, expMonth: method.exp_month, expYear: method.exp_year, providerCustomerRef: null, providerMethodRef: null }
  })
  if (charge.status !== 'succeeded') throw new Error('charge')
  const now = ctx.clock.now().toISOString()
  const orderId = randomUUID()
  await ctx.app.db
    .insertInto('orders')
    .values({ id: orderId, user_id: memberId, creator_id: memberId, kind: 'PURCHASE', membership_subscription_id: null, period_start: null, status: 'PAID', currency: 'EUR', subtotal_minor: paidMinor, total_minor: paidMinor, lines: '[]', fees: '[]', taxes: '[]', provider: 'test', provider_ref: charge.reference, idempotency_key: key, failure_code: null, failure_message: null, created_at: now, updated_at: now })
    .execute()
  const id = await ctx.app.db.transaction().execute((tx) =>
    issuePackage(tx, { templateId, userId: memberId, creatorId: memberId, source: 'PURCHASE', issuedAt: ctx.clock.now(), timezone: 'UTC', orderId, paidMinor, currency: 'EUR' })
  )
  return { id, orderId, reference: charge.reference }
}

t.test('PACKAGE template data is checked on create and patch, naming the path', async (t) => {
  const { staff, call } = await setup(t)
  const bad = { ...tenBookings, data: { ...tenBookings.data, items: [{ ...tenBookings.data.items[0], totalItems: 0 }] } }
  const created = await call('POST', '/apis/v2/templates', staff, bad)
  t.equal(created.statusCode, 400)
  t.match(errorOf(created).message, /^body\.data\.items\[0\]\.totalItems must be a whole number from 1 to 10000/)
  const id = (await call('POST', '/apis/v2/templates', staff, tenBookings)).json().id
  const patched = await call('PATCH', `/apis/v2/templates/${id}`, staff, { data: { validityDays: 30, items: [{ type: 'BOOKING', displayName: 'x', displayNamePlural: 'xs', totalItems: 1, constraints: { allowKids: 'no' } }] } })
  t.equal(patched.statusCode, 400)
  t.match(errorOf(patched).message, /^body\.data\.items\[0\]\.constraints\.allowKids must be true, false or null/)
  t.equal((await call('GET', `/apis/v2/templates/${id}`, staff)).json().version, 1, 'the refused patch stored nothing')
  const event = await call('POST', '/apis/v2/templates', staff, { name: 'Clinic', type: 'EVENT', data: { anything: true } })
  t.equal(event.statusCode, 201, 'other template types keep their free-form data')
})

t.test('issue, read, list, patch: the package keeps the items it was issued with', async (t) => {
  const { ctx, staff, member, other, call } = await setup(t)
  const templateId = await packageTemplate(ctx, staff)
  const pkg = await issued(ctx, staff, templateId, member.id)
  t.match(pkg, {
    displayName: 'Court pass',
    displayNamePlural: 'Court passes',
    status: 'ACTIVE',
    createdDate: '2026-03-01T10:00:00.000Z',
    // 90 local days in Madrid: across the change to summer time the wall time stays 11:00.
    expirationDate: '2026-05-30T09:00:00.000Z',
    template: { id: templateId },
    order: null,
    items: { _total: 2, items: [{ type: 'BOOKING', totalItems: 10, remainingItems: 10 }, { type: 'GUEST_SIGNUP', totalItems: 2, remainingItems: 2, constraints: { allowKids: false, bookingPodIdsMatchAny: null } }] },
    redemptions: { _total: 0 }
  })
  // The template changes; the package held does not.
  await call('PATCH', `/apis/v2/templates/${templateId}`, staff, { data: { ...tenBookings.data, items: [{ ...tenBookings.data.items[0], totalItems: 99 }] } })
  t.equal((await call('GET', `${PACKAGES}/${pkg.id}`, member)).json().items.items[0].totalItems, 10, 'a later template edit changes no package already held')
  t.equal((await issued(ctx, staff, templateId, member.id)).items.items[0].totalItems, 99, 'a new package takes the template as it is now')

  t.equal((await call('GET', `${PACKAGES}/${pkg.id}`, other)).statusCode, 404, "another member's package does not exist for them")
  t.equal((await call('GET', PACKAGES, member)).json()._total, 2)
  t.equal((await call('GET', PACKAGES, other)).json()._total, 0, 'a member lists only their own')
  t.equal((await call('GET', `${PACKAGES}?userId=${member.id}`, other)).statusCode, 403)
  await issued(ctx, staff, await packageTemplate(ctx, staff, threeReplays), other.id)
  t.equal((await call('GET', PACKAGES, staff)).json()._total, 3, 'staff see everyone')
  t.equal((await call('GET', `${PACKAGES}?userId=${other.id}`, staff)).json()._total, 1)
  t.equal((await call('GET', `${PACKAGES}?itemType=REPLAY`, staff)).json()._total, 1)
  t.equal((await call('GET', `${PACKAGES}?itemType=BOOKING&status=ACTIVE&ipp=1`, staff)).json()._pagination.total, 2)

  const patched = await call('PATCH', `${PACKAGES}/${pkg.id}`, staff, { displayName: 'Winter pass', expirationDate: '2026-03-02T00:00:00Z' })
  t.match(patched.json(), { displayName: 'Winter pass', displayNamePlural: 'Court passes', expirationDate: '2026-03-02T00:00:00.000Z' })
  ctx.clock.set('2026-03-02T00:00:00.000Z')
  t.equal((await call('GET', `${PACKAGES}/${pkg.id}`, member)).json().status, 'EXPIRED', 'EXPIRED is derived when read')
  t.equal((await call('GET', `${PACKAGES}?status=EXPIRED`, member)).json()._total, 1)
  t.equal((await call('GET', `${PACKAGES}?status=ACTIVE`, member)).json()._total, 1)
  await call('PATCH', `${PACKAGES}/${pkg.id}`, staff, { expirationDate: '2026-12-31T00:00:00Z' })
  t.equal((await call('GET', `${PACKAGES}/${pkg.id}`, member)).json().status, 'ACTIVE', 'a new date brings it back')
})

t.test('cancel: final, and a bought package refunds its unused share once', async (t) => {
  const { ctx, staff, member, call } = await setup(t)
  const templateId = await packageTemplate(ctx, staff, threeReplays)
  // A package bought for 10.00 EUR (as a purchase records it): the charge made through the provider.
  const { id, orderId, reference } = await boughtPackage(ctx, member.id, templateId, 1000)
  t.equal((await call('POST', `${PACKAGES}/${id}/redemptions`, member, { type: 'REPLAY', target: { replay: { id: 'r1' } } })).statusCode, 201)

  t.equal((await call('POST', `${PACKAGES}/${id}/cancel`, member)).statusCode, 403, 'members cannot cancel')
  const cancelled = await call('POST', `${PACKAGES}/${id}/cancel`, staff)
  t.equal(cancelled.statusCode, 200)
  t.match(cancelled.json(), { status: 'CANCELED', order: { id: orderId }, _links: { refund: { href: /^\/apis\/v2\/orders\// } } })
  const refund = (await call('GET', cancelled.json()._links.refund.href, member)).json()
  // 2 of 3 unused: 1000 x 2 / 3 = 666.67 → 6.67 EUR.
  t.match(refund, { kind: 'REFUND', status: 'PAID', total: 6.67, providerReference: /\S/ })
  const provider = ctx.app.paymentProvider as unknown as { list(): Array<{ reference: string; refunded: number }> }
  t.equal(provider.list().find((c) => c.reference === reference)!.refunded, 667, 'the provider refunded 6.67')
  const again = await call('POST', `${PACKAGES}/${id}/cancel`, staff)
  t.equal(again.json()._links.refund.href, cancelled.json()._links.refund.href, 'cancelling again refunds nothing more')
  t.equal(provider.list().find((c) => c.reference === reference)!.refunded, 667)
  t.equal((await call('PATCH', `${PACKAGES}/${id}`, staff, { displayName: 'x' })).statusCode, 409, 'a cancelled package is final')
  const redeem = await call('POST', `${PACKAGES}/${id}/redemptions`, member, { type: 'REPLAY', target: { replay: { id: 'r2' } } })
  t.equal(redeem.statusCode, 409)
  t.match(errorOf(redeem).message, /was cancelled/)
  // A package staff issued was not bought: cancelling it refunds nothing.
  const free = await issued(ctx, staff, templateId, member.id)
  t.notOk((await call('POST', `${PACKAGES}/${free.id}/cancel`, staff)).json()._links.refund)
})

t.test("spent is spent: an event's redemption cancelled after it began is refused, and a refund counts only items never used", async (t) => {
  const { ctx, staff, admin, member, call } = await setup(t)
  const venue = await testVenue(ctx)
  const templateId = await packageTemplate(ctx, staff, { ...threeReplays, data: { validityDays: 30, items: [{ type: 'EVENT_SIGNUP', displayName: 'Class', displayNamePlural: 'Classes', totalItems: 3 }] } })
  const { id } = await boughtPackage(ctx, member.id, templateId, 900)
  const event = (await call('POST', '/apis/v2/admin/events', admin, { name: 'Clinic', type: 'CLINIC', startDate: '2026-03-02T18:00:00Z', endDate: '2026-03-02T19:00:00Z', courts: { items: [{ id: venue.court1.id }] } })).json()
  const redemption = (await call('POST', `${PACKAGES}/${id}/redemptions`, member, { type: 'EVENT_SIGNUP', target: { event: { id: event.id } } })).json()
  ctx.clock.set('2026-03-02T18:30:00.000Z')
  const refused = await call('DELETE', `${PACKAGES}/${id}/redemptions/${redemption.id}`, member)
  t.equal(refused.statusCode, 409)
  t.match(errorOf(refused).message, /begins at 2026-03-02T18:00:00.000Z; an item comes back only when cancelled before it begins: its item stays spent/)
  t.match((await call('GET', `${PACKAGES}/${id}/redemptions/${redemption.id}`, member)).json(), { cancelationDate: null })
  t.equal((await call('GET', `${PACKAGES}/${id}`, member)).json().items.items[0].remainingItems, 2)

  // Staff give one back on purpose: the member may use it, but it is not cash.
  const other = (await call('POST', '/apis/v2/admin/events', admin, { name: 'Clinic 2', type: 'CLINIC', startDate: '2026-03-01T18:00:00Z', endDate: '2026-03-01T19:00:00Z', courts: { items: [{ id: venue.court1.id }] } })).json()
  const second = (await call('POST', `${PACKAGES}/${id}/redemptions`, staff, { type: 'EVENT_SIGNUP', target: { event: { id: other.id } } })).json()
  t.equal((await call('POST', `${PACKAGES}/${id}/redemptions/${second.id}/give-back`, staff, { reason: '  ' })).statusCode, 400, 'a reason is needed')
  t.equal((await call('POST', `${PACKAGES}/${id}/redemptions/${second.id}/give-back`, staff, { reason: 'the coach was ill' })).statusCode, 200)
  t.equal((await call('GET', `${PACKAGES}/${id}`, member)).json().items.items[0].remainingItems, 2)

  const cancelled = (await call('POST', `${PACKAGES}/${id}/cancel`, staff)).json()
  const refund = (await call('GET', cancelled._links.refund.href, member)).json()
  // 3 items for 9.00: one spent at the event, one given back after use; 1 never used = 3.00.
  t.match(refund, { kind: 'REFUND', total: 3, lines: [{ description: /1 of 3 items unused/ }] })
})

t.test('redemptions: constraints, retries, EXHAUSTED and back, cancel and late cancel', async (t) => {
  const { ctx, staff, admin, member, other, call } = await setup(t, { PACKAGE_LATE_CANCEL_HOURS: '24' })
  const venue = await testVenue(ctx)
  // Peak 18:00-22:00 on weekdays in the hall, on Madrid's clock.
  const periods = await call('PUT', `/apis/v2/admin/areas/${venue.hall.id}/session-periods`, admin, { periods: [{ type: 'PEAK', days: [1, 2, 3, 4, 5], start: '18:00', end: '22:00' }] })
  t.match(periods.json(), { timezone: null, effectiveTimezone: 'Europe/Madrid', periods: [{ type: 'PEAK' }] })
  t.equal((await call('PUT', `/apis/v2/admin/areas/${venue.hall.id}/session-periods`, staff, { periods: [] })).statusCode, 403)
  t.equal((await call('PUT', `/apis/v2/admin/areas/nope/session-periods`, admin, { periods: [] })).statusCode, 404)
  t.match(errorOf(await call('PUT', `/apis/v2/admin/areas/${venue.hall.id}/session-periods`, admin, { timezone: 'Mars/Base', periods: [] })).message, /^body\.timezone: .* is not an IANA timezone/)
  for (const bad of [{ type: 'OFF PEAK', days: [1], start: '01:00', end: '02:00' }, { type: 'PEAK', days: [0], start: '01:00', end: '02:00' }, { type: 'PEAK', days: [1], start: '25:00', end: '26:00' }]) {
    const res = await call('PUT', `/apis/v2/admin/areas/${venue.hall.id}/session-periods`, admin, { periods: [bad] })
    t.equal(res.statusCode, 400, JSON.stringify(bad))
    t.match(errorOf(res).message, /^body\.periods\.0\.(type|days|start)/)
  }

  const pkg = await issued(ctx, staff, await packageTemplate(ctx, staff), member.id)
  const redeem = (body: object, who = member) => call('POST', `${PACKAGES}/${pkg.id}/redemptions`, who, body)
  // Tuesday March 3: 17:30-18:30 Madrid (16:30-17:30 UTC) runs into peak.
  const across = { court: { id: venue.court1.id }, startDate: '2026-03-03T16:30:00Z', endDate: '2026-03-03T17:30:00Z' }
  const refused = await redeem({ type: 'BOOKING', target: { booking: across } })
  t.equal(refused.statusCode, 409)
  t.match(refused.json(), { statusCode: 409, error: 'Conflict', errors: [{ code: 'CONSTRAINT_NOT_MATCHED', message: /bookingSessionPeriodTypeMatchAny: the time falls in PEAK and OFF PEAK/, details: { constraint: 'bookingSessionPeriodTypeMatchAny', item: 1 } }] })
  const offPeak = { court: { id: venue.court1.id }, startDate: '2026-03-03T15:30:00Z', endDate: '2026-03-03T16:30:00Z' }
  const first = await redeem({ type: 'BOOKING', target: { booking: offPeak } })
  t.equal(first.statusCode, 201)
  t.match(first.json(), { item: 1, user: { id: member.id }, cancelationDate: null, order: { id: /\S/ }, orderItem: { id: /\S/ } })
  const retried = await redeem({ type: 'BOOKING', target: { booking: offPeak } })
  t.equal(retried.statusCode, 200, 'the same target again is the same redemption')
  t.equal(retried.json().id, first.json().id)
  t.equal((await call('GET', `${PACKAGES}/${pkg.id}`, member)).json().items.items[0].remainingItems, 9, 'a retried redemption takes one item')
  const order = (await call('GET', `/apis/v2/orders/${first.json().order.id}`, member)).json()
  t.match(order, { kind: 'REDEMPTION', status: 'PAID', total: 0, lines: [{ kind: 'redemption', amount: 0, description: /^Court booking: booking/ }] })

  // Guests: a kid is refused by allowKids false; the same guest twice is one redemption.
  const event = (await call('POST', '/apis/v2/admin/events', admin, { name: 'Social', type: 'SOCIAL', tags: ['evening'], startDate: '2026-03-10T19:00:00Z', endDate: '2026-03-10T21:00:00Z', courts: { items: [{ id: venue.court1.id }] } })).json()
  const kid = await redeem({ type: 'GUEST_SIGNUP', target: { event: { id: event.id }, guest: { name: 'Ana', kid: true } } })
  t.equal(kid.statusCode, 409)
  t.match(kid.json().errors, [{ details: { constraint: 'allowKids' } }])
  const guest = await redeem({ type: 'GUEST_SIGNUP', target: { event: { id: event.id }, guest: { name: 'Luis' } } })
  t.equal(guest.statusCode, 201)
  t.equal((await redeem({ type: 'GUEST_SIGNUP', target: { event: { id: event.id }, guest: { name: '  luis ' } } })).statusCode, 200, 'the same guest, spelled differently')
  t.equal((await redeem({ type: 'GUEST_SIGNUP', target: { event: { id: event.id }, guest: { name: 'Eva' } } })).statusCode, 201)
  const none = await redeem({ type: 'GUEST_SIGNUP', target: { event: { id: event.id }, guest: { name: 'Raul' } } })
  t.equal(none.statusCode, 409)
  t.match(errorOf(none).message, /no GUEST_SIGNUP item is left/)
  t.equal((await redeem({ type: 'REPLAY', target: { replay: { id: 'x' } } })).statusCode, 409, 'no REPLAY items in this package')

  // Cancel: more than 24 hours ahead gives the guest pass back; within 24 hours it is forfeited.
  const cancelled = await call('DELETE', `${PACKAGES}/${pkg.id}/redemptions/${guest.json().id}`, member)
  t.equal(cancelled.statusCode, 200)
  t.equal(cancelled.json().cancelationDate, '2026-03-01T10:00:00.000Z')
  t.equal((await call('GET', `${PACKAGES}/${pkg.id}`, member)).json().items.items[1].remainingItems, 1, 'given back')
  t.equal((await call('DELETE', `${PACKAGES}/${pkg.id}/redemptions/${guest.json().id}`, member)).json().cancelationDate, '2026-03-01T10:00:00.000Z', 'cancelling again changes nothing')
  const late = (await redeem({ type: 'GUEST_SIGNUP', target: { event: { id: event.id }, guest: { name: 'Paz' } } })).json()
  ctx.clock.set('2026-03-10T08:00:00.000Z')
  const lateCancel = await call('DELETE', `${PACKAGES}/${pkg.id}/redemptions/${late.id}`, member)
  t.equal(lateCancel.statusCode, 409, 'within the late-cancel window: refused')
  t.match(errorOf(lateCancel).message, /begins at 2026-03-10T19:00:00.000Z; an item comes back only when cancelled before it begins \(PACKAGE_LATE_CANCEL_HOURS is 24: until 2026-03-09T19:00:00.000Z\): its item stays spent/)
  t.equal((await call('GET', `${PACKAGES}/${pkg.id}`, member)).json().items.items[1].remainingItems, 0, 'a late cancel leaves the item used')

  // Who uses it: themself or family; not a stranger. Staff may name anyone.
  const stranger = await redeem({ type: 'BOOKING', target: { booking: { ...offPeak, startDate: '2026-03-04T15:30:00Z', endDate: '2026-03-04T16:30:00Z' } }, user: { id: other.id } })
  t.equal(stranger.statusCode, 400)
  t.match(errorOf(stranger).message, /a member may name only themself or someone on a membership they own/)
  const forOther = await redeem({ type: 'BOOKING', target: { booking: { ...offPeak, startDate: '2026-03-04T15:30:00Z', endDate: '2026-03-04T16:30:00Z' } }, user: { id: other.id } }, staff)
  t.equal(forOther.statusCode, 201)
  t.equal(forOther.json().user.id, other.id)
})

t.test('EXHAUSTED and back, and an expired package gives nothing back', async (t) => {
  const { ctx, staff, member, call } = await setup(t)
  const pkg = await issued(ctx, staff, await packageTemplate(ctx, staff, threeReplays), member.id)
  const ids: string[] = []
  for (const replay of ['a', 'b', 'c']) ids.push((await call('POST', `${PACKAGES}/${pkg.id}/redemptions`, member, { type: 'REPLAY', target: { replay: { id: replay } } })).json().id)
  t.equal((await call('GET', `${PACKAGES}/${pkg.id}`, member)).json().status, 'EXHAUSTED')
  t.equal((await call('GET', `${PACKAGES}?status=EXHAUSTED`, member)).json()._total, 1)
  await call('DELETE', `${PACKAGES}/${pkg.id}/redemptions/${ids[0]}`, member)
  t.match((await call('GET', `${PACKAGES}/${pkg.id}`, member)).json(), { status: 'ACTIVE', items: { items: [{ remainingItems: 1 }] } }, 'ACTIVE again')
  ctx.clock.set('2026-04-01T00:00:00.000Z')
  const expired = await call('POST', `${PACKAGES}/${pkg.id}/redemptions`, member, { type: 'REPLAY', target: { replay: { id: 'd' } } })
  t.equal(expired.statusCode, 409)
  t.match(errorOf(expired).message, /expired on 2026-03-31T/)
  await call('DELETE', `${PACKAGES}/${pkg.id}/redemptions/${ids[1]}`, member)
  t.match((await call('GET', `${PACKAGES}/${pkg.id}`, member)).json(), { status: 'EXPIRED', items: { items: [{ remainingItems: 1 }] } }, 'an expired package gives nothing back')
})

t.test('users/current/redemptions takes from the package that expires first', async (t) => {
  const { ctx, staff, member, other, call } = await setup(t)
  const templateId = await packageTemplate(ctx, staff, threeReplays)
  const later = await issued(ctx, staff, templateId, member.id, { expirationDate: '2026-09-01T00:00:00Z' })
  const sooner = await issued(ctx, staff, templateId, member.id, { expirationDate: '2026-06-01T00:00:00Z' })
  const first = await call('POST', '/apis/v2/users/current/redemptions', member, { type: 'REPLAY', target: { replay: { id: 'a' } } })
  t.equal(first.statusCode, 201)
  t.equal(first.json()._links.package.href, `${PACKAGES}/${sooner.id}`)
  t.equal((await call('POST', '/apis/v2/users/current/redemptions', member, { type: 'REPLAY', target: { replay: { id: 'a' } } })).json().id, first.json().id, 'a retry finds it')
  for (const id of ['b', 'c']) await call('POST', '/apis/v2/users/current/redemptions', member, { type: 'REPLAY', target: { replay: { id } } })
  const fourth = await call('POST', '/apis/v2/users/current/redemptions', member, { type: 'REPLAY', target: { replay: { id: 'd' } } })
  t.equal(fourth.json()._links.package.href, `${PACKAGES}/${later.id}`, 'the sooner one used up, the later one pays')
  const nothing = await call('POST', '/apis/v2/users/current/redemptions', other, { type: 'REPLAY', target: { replay: { id: 'a' } } })
  t.equal(nothing.statusCode, 409)
  t.match(errorOf(nothing).message, /you hold no usable package with a REPLAY item/)
})

t.test('twenty concurrent redemptions of a package with 3 items: exactly 3 win', async (t) => {
  const { ctx, staff, member, call } = await setup(t)
  const pkg = await issued(ctx, staff, await packageTemplate(ctx, staff, threeReplays), member.id)
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, i) => call('POST', `${PACKAGES}/${pkg.id}/redemptions`, member, { type: 'REPLAY', target: { replay: { id: `r${i}` } } }))
  )
  t.equal(answers.filter((a) => a.statusCode === 201).length, 3)
  t.equal(answers.filter((a) => a.statusCode === 409).length, 17)
  const after = (await call('GET', `${PACKAGES}/${pkg.id}`, member)).json()
  t.equal(after.redemptions._total, 3)
  t.equal(after.items.items[0].remainingItems, 0)
  const same = await Promise.all(Array.from({ length: 5 }, () => call('POST', `${PACKAGES}/${pkg.id}/redemptions`, member, { type: 'REPLAY', target: { replay: { id: 'r0' } } })))
  t.ok(same.every((a) => a.statusCode === 200 || a.statusCode === 409), 'the same target again never takes another')
})

t.test('every route: 401, 403, 404 and 400', async (t) => {
  const { ctx, staff, member, call } = await setup(t)
  const pkg = await issued(ctx, staff, await packageTemplate(ctx, staff, threeReplays), member.id)
  const redemption = (await call('POST', `${PACKAGES}/${pkg.id}/redemptions`, member, { type: 'REPLAY', target: { replay: { id: 'a' } } })).json()
  const routes: Array<[method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: object]> = [
    ['POST', PACKAGES, { template: { id: 'x' }, user: { id: member.id } }],
    ['GET', PACKAGES],
    ['GET', `${PACKAGES}/${pkg.id}`],
    ['PATCH', `${PACKAGES}/${pkg.id}`, { displayName: 'x' }],
    ['POST', `${PACKAGES}/${pkg.id}/cancel`],
    ['POST', `${PACKAGES}/${pkg.id}/redemptions`, { type: 'REPLAY', target: { replay: { id: 'b' } } }],
    ['POST', '/apis/v2/users/current/redemptions', { type: 'REPLAY', target: { replay: { id: 'b' } } }],
    ['DELETE', `${PACKAGES}/${pkg.id}/redemptions/${redemption.id}`],
    ['GET', `/apis/v2/admin/areas/x/session-periods`],
    ['PUT' as 'POST', `/apis/v2/admin/areas/x/session-periods`, { periods: [] }]
  ]
  for (const [method, url, body] of routes) {
    const res = await call(method, url, undefined, body)
    t.equal(res.statusCode, 401, `${method} ${url} without credentials`)
    errorOf(res)
  }
  for (const [method, url, body] of [routes[0]!, routes[3]!, routes[4]!, routes[8]!, routes[9]!]) {
    t.equal((await call(method, url, member, body)).statusCode, 403, `${method} ${url} by a member`)
  }
  for (const [method, url, body] of [
    ['GET', `${PACKAGES}/nope`],
    ['PATCH', `${PACKAGES}/nope`, { displayName: 'x' }],
    ['POST', `${PACKAGES}/nope/cancel`],
    ['POST', `${PACKAGES}/nope/redemptions`, { type: 'REPLAY', target: { replay: { id: 'b' } } }],
    ['DELETE', `${PACKAGES}/${pkg.id}/redemptions/nope`],
    ['DELETE', `${PACKAGES}/nope/redemptions/${redemption.id}`]
  ] as const) {
    const res = await call(method, url, staff, body)
    t.equal(res.statusCode, 404, `${method} ${url}`)
    errorOf(res)
  }
  const bad: Array<[method: 'POST' | 'PATCH' | 'GET', url: string, body: object | undefined, message: RegExp]> = [
    ['POST', PACKAGES, { template: { id: 'nope' }, user: { id: member.id } }, /^body\.template\.id: no template nope/],
    ['POST', PACKAGES, { template: { id: pkg.template.id }, user: { id: 'nope' } }, /^body\.user\.id: no user nope/],
    ['POST', PACKAGES, { template: { id: pkg.template.id }, user: { id: member.id }, expirationDate: '2020-01-01T00:00:00Z' }, /expirationDate must be in the future/],
    ['POST', PACKAGES, { template: { id: pkg.template.id } }, /user/],
    ['GET', `${PACKAGES}?status=GONE`, undefined, /status/],
    ['PATCH', `${PACKAGES}/${pkg.id}`, {}, /./],
    ['PATCH', `${PACKAGES}/${pkg.id}`, { expirationDate: 'tomorrow' }, /expirationDate/],
    ['POST', `${PACKAGES}/${pkg.id}/redemptions`, { type: 'REPLAY', target: { event: { id: 'e' } } }, /^body\.target needs exactly one of replay or match for a REPLAY redemption/],
    ['POST', `${PACKAGES}/${pkg.id}/redemptions`, { type: 'REPLAY', target: { replay: { id: 'b' }, series: { id: 's' } } }, /^body\.target\.series does not apply to a REPLAY redemption/],
    ['POST', `${PACKAGES}/${pkg.id}/redemptions`, { type: 'EVENT_SIGNUP', target: { event: { id: 'nope' } } }, /^body\.target\.event\.id: no event nope/],
    ['POST', `${PACKAGES}/${pkg.id}/redemptions`, { type: 'BOOKING', target: { booking: { startDate: '2026-03-03T10:00:00Z', endDate: '2026-03-03T11:00:00Z' } } }, /needs exactly one of court or pod/],
    ['POST', `${PACKAGES}/${pkg.id}/redemptions`, { type: 'GUEST_SIGNUP', target: { guest: { name: 'A' } } }, /needs exactly one of event or booking/],
    ['POST', `${PACKAGES}/${pkg.id}/redemptions`, { type: 'PARKING', target: { replay: { id: 'b' } } }, /type/],
    ['POST', '/apis/v2/users/current/redemptions', { type: 'REPLAY', target: {} }, /target/]
  ]
  for (const [method, url, body, message] of bad) {
    const res = await call(method, url, staff, body)
    t.equal(res.statusCode, 400, `${method} ${url} ${JSON.stringify(body)}`)
    t.match(errorOf(res).message, message)
  }
})
