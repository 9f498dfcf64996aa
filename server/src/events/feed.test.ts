// GET /apis/v2/events: who may read it, what it refuses, and paging from a kept cursor.
import { eventTypes } from '@club/contract'
import t from 'tap'
import { errorOf, testApp, userWithApiKey, userWithToken, type TestApp } from '../test-support/app.js'
import { listEvents, recordEvent } from './outbox.js'

async function recordUsers(ctx: TestApp, ...ids: string[]): Promise<void> {
  await ctx.app.db.transaction().execute(async (trx) => {
    for (const id of ids) await recordEvent(trx, { type: id.startsWith('t') ? 'template.created' : 'user.created', resourceId: id, data: { id } }, ctx.clock.now())
  })
}

t.test('only admins read the feed: guest 401, member and staff 403, a member’s API key 403, an admin’s key 200', async (t) => {
  const ctx = await testApp(t)
  const get = (headers: Record<string, string>) => ctx.app.inject({ method: 'GET', url: '/apis/v2/events', headers })
  const guest = await get({})
  t.equal(guest.statusCode, 401)
  errorOf(guest)
  for (const role of ['member', 'staff'] as const) {
    const user = await userWithToken(ctx, role)
    const res = await get({ authorization: user.authorization })
    t.equal(res.statusCode, 403, role)
    t.match(errorOf(res).message, /admin/)
  }
  const memberKey = await userWithApiKey(ctx, 'member')
  t.equal((await get({ 'x-api-key': memberKey.apiKey })).statusCode, 403, 'an API key of a member does not read events')
  const adminKey = await userWithApiKey(ctx, 'admin')
  const res = await get({ 'x-api-key': adminKey.apiKey })
  t.equal(res.statusCode, 200)
  const admin = await userWithToken(ctx, 'admin')
  t.equal((await get({ authorization: admin.authorization })).statusCode, 200)
})

t.test('paging through _links.next answers every event once, oldest first; types filters; the last next is the cursor to keep', async (t) => {
  const ctx = await testApp(t)
  const admin = await userWithToken(ctx, 'admin')
  const get = async (url: string) => {
    const res = await ctx.app.inject({ method: 'GET', url, headers: { authorization: admin.authorization } })
    t.equal(res.statusCode, 200, url)
    return res.json()
  }
  // From after what the setup wrote (the admin's user.created).
  const after = new URL((await get('/apis/v2/events?ipp=100'))._links.next.href, 'http://club.test').searchParams.get('after')!
  await recordUsers(ctx, 'u1', 't2', 'u3', 'u4', 't5')
  const seen: string[] = []
  let url = `/apis/v2/events?ipp=2&after=${after}`
  for (;;) {
    const page = await get(url)
    seen.push(...page.items.map((e: { resource: { id: string } }) => e.resource.id))
    t.equal(page._total, page.items.length)
    url = page._links.next.href
    if (page.items.length < 2) break
  }
  t.same(seen, ['u1', 't2', 'u3', 'u4', 't5'])
  const kept = url
  t.same((await get(kept)).items, [], 'nothing new yet')
  await recordUsers(ctx, 'u6')
  const later = await get(kept)
  t.same(later.items.map((e: { resource: { id: string } }) => e.resource.id), ['u6'], 'the kept cursor reads exactly what came after')
  t.match(later.items[0], { type: 'user.created', timestamp: ctx.clock.now().toISOString(), data: { id: 'u6' } })
  const templates = await get('/apis/v2/events?types=template.created,template.deleted&ipp=1')
  t.same(templates.items.map((e: { resource: { id: string } }) => e.resource.id), ['t2'])
  t.match(templates._links.next.href, /types=template.created%2Ctemplate.deleted/, 'next keeps the filter')
  t.same((await get(templates._links.next.href)).items.map((e: { resource: { id: string } }) => e.resource.id), ['t5'])
})

t.test('a bad cursor, an unknown type, a bad ipp: 400 naming the field', async (t) => {
  const ctx = await testApp(t)
  const admin = await userWithToken(ctx, 'admin')
  for (const [query, field] of [
    ['after=notacursor', /after/],
    ['after=' + Buffer.from('evs:12x').toString('base64url'), /after/],
    // Well formed, but past the newest event: kept, it would skip every event up to it.
    ['after=' + Buffer.from('evs:999999').toString('base64url'), /after/],
    ['types=user.created,user.exploded', /types.*user\.exploded/],
    ['types=', /types/],
    ['ipp=0', /ipp/],
    ['ipp=101', /ipp/],
    ['ipp=two', /ipp/]
  ] as const) {
    const res = await ctx.app.inject({ method: 'GET', url: `/apis/v2/events?${query}`, headers: { authorization: admin.authorization } })
    t.equal(res.statusCode, 400, query)
    t.match(errorOf(res).message, field, query)
  }
})

t.test('the OpenAPI document lists the feed and every event type with its payload schema', async (t) => {
  const ctx = await testApp(t)
  const doc = (await ctx.app.inject({ method: 'GET', url: '/documentation/json' })).json()
  t.ok(doc.paths['/apis/v2/events'].get, 'the feed')
  t.same(Object.keys(doc['x-webhooks']).sort(), [...eventTypes].sort())
  const renewed = doc['x-webhooks']['membership_subscription.renewed'].post.requestBody.content['application/json'].schema
  t.same(renewed.properties.type.enum, ['membership_subscription.renewed'])
  t.same(renewed.properties.data, { $ref: '#/components/schemas/MembershipSubscription' })
  const subscription = doc.components.schemas.MembershipSubscription
  t.ok(subscription.properties.status && subscription.properties.nextChargeDate, "data is the subscription's GET schema")
})

t.test('events older than EVENT_RETENTION_DAYS are erased by users-cleanup; the feed reads on from a cursor into them', async (t) => {
  const ctx = await testApp(t, { EVENT_RETENTION_DAYS: '30' })
  const record = (id: string, at: string) =>
    ctx.app.db.transaction().execute((trx) => recordEvent(trx, { type: 'user.created', resourceId: id, data: { id } }, new Date(at)))
  await record('old', '2026-01-01T10:00:00.000Z')
  await record('edge', '2026-01-31T10:00:00.000Z')
  await record('new', '2026-02-15T10:00:00.000Z')
  const before = await listEvents(ctx.app.db, { limit: 1 })
  ctx.clock.set('2026-03-02T10:00:00.000Z')
  const outcome = await ctx.app.jobs.run('users-cleanup', { trigger: 'cli' })
  if (outcome.kind !== 'ran') throw new Error(outcome.kind)
  t.equal(outcome.run.counts.events_deleted, 1, 'older than 30 days: erased; exactly 30 days old: kept')
  t.same((await listEvents(ctx.app.db, { limit: 10 })).events.map((e) => e.resource.id), ['edge', 'new'])
  t.same((await listEvents(ctx.app.db, { after: before.next, limit: 10 })).events.map((e) => e.resource.id), ['edge', 'new'], 'a cursor at an erased event still reads on')
})
