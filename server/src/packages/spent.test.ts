// Spent is spent for every target type (issue 47): when what an item paid for begins is read as the
// venue stands at the cancellation, so a series redeemed before it had events, or an event moved
// earlier, does not stay cancellable after it began.
import t from 'tap'
import { errorOf, testApp, userWithToken } from '../test-support/app.js'
import { testVenue } from '../test-support/venue.js'
import { caller, issued, packageTemplate } from './test-fixtures.js'

const PACKAGES = '/apis/v2/packages'

async function setup(t: Parameters<typeof testApp>[0]) {
  const ctx = await testApp(t, { ACCESS_TOKEN_TTL_SECONDS: String(365 * 86400) })
  const staff = await userWithToken(ctx, 'staff')
  const admin = await userWithToken(ctx, 'admin')
  const member = await userWithToken(ctx, 'member')
  const venue = await testVenue(ctx)
  const call = caller(ctx)
  const template = await packageTemplate(ctx, staff, {
    name: 'Classes and a league',
    type: 'PACKAGE',
    status: 'PUBLISHED',
    data: {
      validityDays: 30,
      items: [
        { type: 'SERIES_SIGNUP', displayName: 'League', displayNamePlural: 'Leagues', totalItems: 1 },
        { type: 'EVENT_SIGNUP', displayName: 'Class', displayNamePlural: 'Classes', totalItems: 1 }
      ]
    }
  })
  const pkg = await issued(ctx, staff, template, member.id)
  const event = (body: object) => call('POST', '/apis/v2/admin/events', admin, { type: 'LEAGUE', courts: { items: [{ id: venue.court1.id }] }, ...body })
  const remaining = async (type: string) =>
    ((await call('GET', `${PACKAGES}/${pkg.id}`, member)).json().items.items as Array<{ type: string; remainingItems: number }>).find((i) => i.type === type)!.remainingItems
  return { ctx, admin, member, call, pkg, event, remaining }
}

t.test('a series redeemed before it had events: cancelled after its first event began, refused', async (t) => {
  const { ctx, admin, member, call, pkg, event, remaining } = await setup(t)
  const series = (await call('POST', '/apis/v2/admin/series', admin, { name: 'Spring ladder', type: 'LEAGUE' })).json()
  const redemption = await call('POST', `${PACKAGES}/${pkg.id}/redemptions`, member, { type: 'SERIES_SIGNUP', target: { series: { id: series.id } } })
  t.equal(redemption.statusCode, 201, redemption.body)
  t.equal((await event({ name: 'Ladder night 1', startDate: '2026-03-02T18:00:00Z', endDate: '2026-03-02T20:00:00Z', series: { id: series.id } })).statusCode, 201)
  ctx.clock.set('2026-03-02T19:00:00.000Z')
  const refused = await call('DELETE', `${PACKAGES}/${pkg.id}/redemptions/${redemption.json().id}`, member)
  t.equal(refused.statusCode, 409)
  t.match(errorOf(refused).message, /begins at 2026-03-02T18:00:00.000Z; an item comes back only when cancelled before it begins: its item stays spent/)
  t.equal(await remaining('SERIES_SIGNUP'), 0, 'the item stays spent')
})

t.test('an event moved earlier: cancelled after its new start, refused', async (t) => {
  const { ctx, admin, member, call, pkg, event, remaining } = await setup(t)
  const clinic = (await event({ name: 'Clinic', startDate: '2026-03-05T18:00:00Z', endDate: '2026-03-05T19:00:00Z' })).json()
  const redemption = (await call('POST', `${PACKAGES}/${pkg.id}/redemptions`, member, { type: 'EVENT_SIGNUP', target: { event: { id: clinic.id } } })).json()
  const moved = await call('PATCH', `/apis/v2/admin/events/${clinic.id}`, admin, { startDate: '2026-03-02T18:00:00Z', endDate: '2026-03-02T19:00:00Z' })
  t.equal(moved.statusCode, 200, moved.body)
  ctx.clock.set('2026-03-02T18:30:00.000Z')
  t.equal((await call('DELETE', `${PACKAGES}/${pkg.id}/redemptions/${redemption.id}`, member)).statusCode, 409)
  t.equal(await remaining('EVENT_SIGNUP'), 0, 'the item stays spent')
})
