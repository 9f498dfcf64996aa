import t from 'tap'
import { CompiledQuery, sql } from 'kysely'
import type { TemplateListQuery } from '@club/contract'
import { errorOf, testApp, userWithToken } from '../test-support/app.js'
import { testVenue, type TestVenue } from '../test-support/venue.js'
import { dialectOf } from '../db/database.js'
import { searchReadsEveryMatch } from '../db/sql.js'
import * as m0009 from '../db/migrations/0009_template_ref_counts.js'
import * as m0031 from '../db/migrations/0031_template_list_order.js'
import { templateListQueries } from './list.js'

async function setup(t: { teardown(fn: () => unknown): void }) {
  const ctx = await testApp(t)
  const staff = await userWithToken(ctx, 'staff')
  const venue = await testVenue(ctx)
  const get = (url: string) => ctx.app.inject({ method: 'GET', url, headers: { authorization: staff.authorization } })
  /** Creates a template one minute after the previous one, so the newest is first in lists. */
  const create = async (body: object) => {
    ctx.clock.advance(60_000)
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/apis/v2/templates',
      payload: { type: 'EVENT', data: {}, ...body },
      headers: { authorization: staff.authorization }
    })
    if (res.statusCode !== 201) throw new Error(res.body)
    return res.json() as { id: string; name: string }
  }
  const names = async (url: string) => {
    const res = await get(url)
    if (res.statusCode !== 200) throw new Error(res.body)
    return (res.json().items as Array<{ name: string }>).map((i) => i.name)
  }
  return { ctx, staff, venue, get, create, names }
}

t.test('paging: pages, counts, links, the last page, a page past the end and ipp limits', async (t) => {
  const { get, create } = await setup(t)
  for (let i = 1; i <= 25; i++) await create({ name: `T${String(i).padStart(2, '0')}`, status: i % 2 ? 'DRAFT' : 'PUBLISHED' })

  const first = await get('/apis/v2/templates?ipp=10')
  t.equal(first.statusCode, 200)
  const one = first.json()
  t.same(one._pagination, { page: 1, ipp: 10, count: 10, total: 25 })
  t.equal(one._total, 25)
  t.same(one.items.map((i: { name: string }) => i.name).slice(0, 3), ['T25', 'T24', 'T23'], 'newest first')
  t.same(one._links, { self: { href: '/apis/v2/templates?page=1&ipp=10' }, next: { href: '/apis/v2/templates?page=2&ipp=10' } })

  const last = (await get('/apis/v2/templates?ipp=10&page=3')).json()
  t.same(last._pagination, { page: 3, ipp: 10, count: 5, total: 25 })
  t.same(last.items.map((i: { name: string }) => i.name), ['T05', 'T04', 'T03', 'T02', 'T01'])
  t.same(last._links, { self: { href: '/apis/v2/templates?page=3&ipp=10' }, prev: { href: '/apis/v2/templates?page=2&ipp=10' } })

  const past = await get('/apis/v2/templates?ipp=10&page=9')
  t.equal(past.statusCode, 200)
  t.same(past.json().items, [])
  t.same(past.json()._pagination, { page: 9, ipp: 10, count: 0, total: 25 })
  t.same(past.json()._links.prev, { href: '/apis/v2/templates?page=3&ipp=10' }, 'prev leads back to the last page')

  const defaults = (await get('/apis/v2/templates')).json()
  t.same(defaults._pagination, { page: 1, ipp: 20, count: 20, total: 25 })
  t.equal((await get('/apis/v2/templates?ipp=100')).json()._pagination.count, 25)

  const filtered = (await get('/apis/v2/templates?status=PUBLISHED&ipp=5&page=2')).json()
  t.same(filtered._pagination, { page: 2, ipp: 5, count: 5, total: 12 })
  t.same(filtered._links.next, { href: '/apis/v2/templates?status=PUBLISHED&page=3&ipp=5' }, 'links keep the filters')

  for (const [query, message] of [
    ['ipp=101', /querystring\.ipp must be <= 100/],
    ['ipp=0', /querystring\.ipp must be >= 1/],
    ['page=0', /querystring\.page must be >= 1/],
    ['page=two', /querystring\.page must be integer/],
    ['status=LIVE', /querystring\.status must be one of DRAFT, PUBLISHED, ARCHIVED/],
    ['type=PARTY', /querystring\.type must be one of EVENT, SERIES/],
    ['colour=red', /querystring\.colour is not allowed/]
  ] as const) {
    const res = await get(`/apis/v2/templates?${query}`)
    t.equal(res.statusCode, 400, query)
    t.match(errorOf(res).message, message)
  }
})

t.test('an empty list is a page with no items and no next or prev', async (t) => {
  const { get } = await setup(t)
  const body = (await get('/apis/v2/templates')).json()
  t.same(body, { items: [], _pagination: { page: 1, ipp: 20, count: 0, total: 0 }, _total: 0, _links: { self: { href: '/apis/v2/templates?page=1&ipp=20' } } })
})

t.test('order is updatedDate newest first, then id; a change moves a template to the top', async (t) => {
  const { ctx, create, names, staff } = await setup(t)
  const a = await create({ name: 'A' })
  await create({ name: 'B' })
  await create({ name: 'C' })
  t.same(await names('/apis/v2/templates'), ['C', 'B', 'A'])
  ctx.clock.advance(60_000)
  await ctx.app.inject({ method: 'PATCH', url: `/apis/v2/templates/${a.id}`, payload: { status: 'ARCHIVED' }, headers: { authorization: staff.authorization } })
  t.same(await names('/apis/v2/templates'), ['A', 'C', 'B'])
  t.same(await names('/apis/v2/templates?status=ARCHIVED'), ['A'])

  // Created in the same instant: the id decides.
  const same = [await create({ name: 'X1' })]
  ctx.clock.advance(-60_000)
  same.push(await create({ name: 'X2' }))
  const ids = same.map((s) => s.id).sort()
  const listed = (await names('/apis/v2/templates?search=X')).map((n) => same.find((s) => s.name === n)!.id)
  t.same(listed, ids)
})

t.test('each filter alone, and combined with AND', async (t) => {
  const { create, get, venue } = await setup(t)
  const v: TestVenue = venue
  const ref = (id: string) => ({ items: [{ id }] })
  await create({ name: 'Hall clinic', type: 'EVENT', status: 'PUBLISHED', description: 'Serve and VOLLEY drills', data: { subtype: 'CLINIC' }, areas: ref(v.hall.id) })
  await create({ name: 'Pod social', type: 'EVENT', status: 'DRAFT', data: { subtype: 'SOCIAL' }, pods: ref(v.pod.id), courts: ref(v.court1.id) })
  await create({ name: 'Field league', type: 'SERIES', status: 'PUBLISHED', data: { subtype: 'LEAGUE' }, areas: ref(v.field.id), courts: ref(v.court2.id) })
  await create({ name: 'North camp', type: 'SERIES', status: 'ARCHIVED', description: 'Holiday camp', data: { subtype: 'CLINIC' }, regions: ref(v.north.id) })
  await create({ name: 'Annex volleys', type: 'EVENT', status: 'PUBLISHED', data: { subtype: 7 }, areas: ref(v.annex.id) })

  const cases: Array<[string, string[]]> = [
    ['type=EVENT', ['Annex volleys', 'Pod social', 'Hall clinic']],
    ['type=SERIES', ['North camp', 'Field league']],
    ['status=PUBLISHED', ['Annex volleys', 'Field league', 'Hall clinic']],
    ['status=ARCHIVED', ['North camp']],
    ['search=volley', ['Annex volleys', 'Hall clinic']],
    ['search=VOLLEY', ['Annex volleys', 'Hall clinic']],
    ['search=holiday%20CAMP', ['North camp']],
    ['search=po', ['Pod social']],
    ['search=zzz', []],
    ['search=%22quoted%22', []],
    [`areaId=${v.hall.id}`, ['Hall clinic']],
    [`areaId=${v.field.id}`, ['Field league']],
    ['areaId=nowhere', []],
    [`regionId=${v.north.id}`, ['Annex volleys', 'North camp', 'Hall clinic']],
    [`regionId=${v.south.id}`, ['Field league']],
    [`podId=${v.pod.id}`, ['Pod social']],
    [`courtId=${v.court1.id}`, ['Pod social']],
    [`courtId=${v.court2.id}`, ['Field league']],
    ['subtype=CLINIC', ['North camp', 'Hall clinic']],
    ['subtype=7', [], ],
    ['type=EVENT&status=PUBLISHED', ['Annex volleys', 'Hall clinic']],
    ['type=SERIES&subtype=CLINIC', ['North camp']],
    [`regionId=${v.north.id}&type=EVENT`, ['Annex volleys', 'Hall clinic']],
    [`regionId=${v.north.id}&areaId=${v.hall.id}`, ['Hall clinic']],
    [`regionId=${v.north.id}&areaId=${v.field.id}`, []],
    [`podId=${v.pod.id}&courtId=${v.court1.id}&status=DRAFT`, ['Pod social']],
    [`podId=${v.pod.id}&courtId=${v.court2.id}`, []],
    [`search=l&regionId=${v.north.id}&subtype=CLINIC`, ['North camp', 'Hall clinic']],
    [`search=camp&status=PUBLISHED`, []],
    [`search=league&courtId=${v.court2.id}&type=SERIES&status=PUBLISHED&subtype=LEAGUE&regionId=${v.south.id}&areaId=${v.field.id}`, ['Field league']]
  ]
  for (const [query, expected] of cases) {
    const body = (await get(`/apis/v2/templates?${query}`)).json()
    t.same(body.items.map((i: { name: string }) => i.name), expected, query)
    t.equal(body._total, expected.length, `${query}: the total counts the same matches`)
  }
})

t.test("a search's pages carry the total of its matches: first, middle, last, past the end, none", async (t) => {
  const { ctx, create, get, staff } = await setup(t)
  for (let i = 1; i <= 25; i++) await create({ name: `Padel ${String(i).padStart(2, '0')}`, status: i % 5 ? 'DRAFT' : 'PUBLISHED' })
  await create({ name: 'Squash 01', description: 'Padel players welcome' })
  await create({ name: 'Tennis 01' })
  const pageOf = async (query: string) => {
    const res = await get(`/apis/v2/templates?${query}`)
    t.equal(res.statusCode, 200, query)
    const body = res.json()
    return { names: (body.items as Array<{ name: string }>).map((i) => i.name), pagination: body._pagination, total: body._total, links: body._links }
  }
  // The text index gives the page newest first with one neighbour each side (for listTemplates'
  // check): page 2 of 10 is matches 10 to 21 of 26, read without sorting the others.
  const around = await templateListQueries(ctx.app.db, { search: 'padel', ipp: 10, page: 2 }).rows.execute()
  t.same(around.map((r) => r.name), ['Padel 17', ...Array.from({ length: 11 }, (_, i) => `Padel ${String(16 - i).padStart(2, '0')}`)])
  // Where finding them reads every match anyway (PostgreSQL), the page carries the count: one search a request.
  if (searchReadsEveryMatch(ctx.app.db)) t.same(around.map((r) => Number((r as { total?: unknown }).total)), around.map(() => 26), 'the total rides with the page')
  const first = await pageOf('search=padel&ipp=10')
  t.same(first.pagination, { page: 1, ipp: 10, count: 10, total: 26 })
  t.equal(first.total, 26)
  t.same(first.names.slice(0, 3), ['Squash 01', 'Padel 25', 'Padel 24'], 'newest change first, the description matching too')
  t.same(first.links.next, { href: '/apis/v2/templates?search=padel&page=2&ipp=10' })
  const last = await pageOf('search=padel&ipp=10&page=3')
  t.same(last.pagination, { page: 3, ipp: 10, count: 6, total: 26 })
  t.same(last.names, ['Padel 06', 'Padel 05', 'Padel 04', 'Padel 03', 'Padel 02', 'Padel 01'])
  const past = await pageOf('search=padel&ipp=10&page=7')
  t.same(past.pagination, { page: 7, ipp: 10, count: 0, total: 26 }, 'a page past the end still counts every match')
  t.same(past.links.prev, { href: '/apis/v2/templates?search=padel&page=3&ipp=10' })
  t.same((await pageOf('search=padel&status=PUBLISHED&ipp=2&page=2')).pagination, { page: 2, ipp: 2, count: 2, total: 5 }, 'with another filter')
  t.same((await pageOf('search=padel&status=ARCHIVED&page=2')).pagination, { page: 2, ipp: 20, count: 0, total: 0 })
  t.same((await pageOf('search=badminton')).pagination, { page: 1, ipp: 20, count: 0, total: 0 })
  t.same((await pageOf('search=pa&ipp=5')).pagination, { page: 1, ipp: 5, count: 5, total: 26 }, 'a search shorter than three characters pages the same way')
  // The total follows a change at once (the read cache is keyed by the query, and any write retires it).
  const [newest] = (await get('/apis/v2/templates?search=padel%2025')).json().items as Array<{ id: string }>
  ctx.clock.advance(60_000)
  await ctx.app.inject({ method: 'PATCH', url: `/apis/v2/templates/${newest!.id}`, payload: { name: 'Renamed' }, headers: { authorization: staff.authorization } })
  t.same((await pageOf('search=padel&ipp=10&page=3')).pagination, { page: 3, ipp: 10, count: 5, total: 25 })
})

t.test("a search's pages follow the list's order whatever order the writes came in: later, earlier, in one millisecond", async (t) => {
  const { ctx, create, get, staff } = await setup(t)
  const made: Array<{ id: string; name: string }> = []
  for (let i = 1; i <= 24; i++) made.push(await create({ name: `Court ${i}`, ...(i % 3 ? {} : { description: `near the hall court` }), status: i % 4 ? 'DRAFT' : 'PUBLISHED' }))
  for (let i = 1; i <= 6; i++) made.push(await create({ name: `Field ${i}`, description: i % 2 ? 'five-a-side' : 'a court next door' }))
  const patch = async (at: string, template: { id: string }, body: object) => {
    ctx.clock.set(at)
    const res = await ctx.app.inject({ method: 'PATCH', url: `/apis/v2/templates/${template.id}`, payload: body, headers: { authorization: staff.authorization } })
    t.equal(res.statusCode, 200, res.body)
  }
  const latest = ctx.clock.now().getTime()
  // Moved to the top, one after another; then two stamped earlier than most (a clock set back, or
  // another server's clock behind this one's), which land inside the list, not at its top.
  await patch(new Date(latest + 60_000).toISOString(), made[3]!, { status: 'PUBLISHED' })
  await patch(new Date(latest + 120_000).toISOString(), made[10]!, { name: 'Court 11 renamed' })
  await patch(new Date(latest - 15.5 * 60_000).toISOString(), made[20]!, { status: 'ARCHIVED' })
  await patch(new Date(latest - 27.25 * 60_000).toISOString(), made[1]!, { description: 'indoor court' })

  /** Every page of `query` against the list without a search (the updated_at index's order), filtered here. */
  const check = async (label: string, query: Record<string, string>, keep: (t: { name: string; description: string | null; status: string }) => boolean) => {
    const all = (await get('/apis/v2/templates?ipp=100')).json().items as Array<{ id: string; name: string; description: string | null; status: string }>
    const expected = all.filter(keep).map((i) => i.id)
    for (const ipp of [1, 4, 7]) {
      const pages = Math.ceil(expected.length / ipp) + 1
      for (let page = 1; page <= pages; page++) {
        const res = await get(`/apis/v2/templates?${new URLSearchParams({ ...query, ipp: String(ipp), page: String(page) })}`)
        const body = res.json()
        t.same(
          (body.items as Array<{ id: string }>).map((i) => i.id),
          expected.slice((page - 1) * ipp, page * ipp),
          `${label}, ipp ${ipp}, page ${page}`
        )
        t.equal(body._total, expected.length, `${label}, ipp ${ipp}, page ${page}: total`)
      }
    }
    return expected
  }
  const holds = (text: string) => (i: { name: string; description: string | null }) => `${i.name}\n${i.description ?? ''}`.toLowerCase().includes(text)
  const courts = await check('court', { search: 'court' }, holds('court'))
  t.equal(courts.length, 27, 'every Court, and the fields whose description says court')
  // The text index alone gives these pages: no two matches share a millisecond yet.
  for (const page of [1, 2, 5]) {
    const around = await templateListQueries(ctx.app.db, { search: 'court', ipp: 5, page }).rows.execute()
    t.same(around.map((r) => r.id), courts.slice(Math.max((page - 1) * 5 - 1, 0), page * 5 + 1), `newest first from the index, page ${page}`)
  }
  await check('court, published', { search: 'court', status: 'PUBLISHED' }, (i) => holds('court')(i) && i.status === 'PUBLISHED')
  await check('short search', { search: 'co' }, holds('co'))

  // Five templates written in one millisecond, in the reverse of their ids' order: the index has
  // them newest first, which is not the list's order (id order within the millisecond), and the
  // search's pages must still follow the list.
  const same = [made[5]!]
  for (let i = 1; i <= 4; i++) same.push(await create({ name: `Court same ${i}`, status: i % 2 ? 'DRAFT' : 'PUBLISHED' }))
  const at = new Date(latest + 180_000).toISOString()
  for (const template of same.toSorted((a, b) => (a.id < b.id ? 1 : -1))) await patch(at, template, { description: 'court same time' })
  const indexed = (await templateListQueries(ctx.app.db, { search: 'same time', ipp: 5 }).rows.execute()).map((r) => r.id)
  t.same(indexed, same.map((s) => s.id).toSorted().toReversed(), 'the text index alone gives them out of the list order')
  await check('court, with ties', { search: 'court' }, holds('court'))
  await check('same time', { search: 'same time' }, holds('same time'))
  await check('court, with ties, published', { search: 'court', status: 'PUBLISHED' }, (i) => holds('court')(i) && i.status === 'PUBLISHED')
  await check('short search, with ties', { search: 'co' }, holds('co'))
})

t.test('filters follow changes and deletions', async (t) => {
  const { ctx, create, names, venue, staff } = await setup(t)
  const tpl = await create({ name: 'Moving', areas: { items: [{ id: venue.hall.id }] } })
  t.same(await names(`/apis/v2/templates?regionId=${venue.north.id}`), ['Moving'])
  ctx.clock.advance(1000)
  await ctx.app.inject({
    method: 'PATCH',
    url: `/apis/v2/templates/${tpl.id}`,
    payload: { name: 'Moved', areas: { items: [{ id: venue.field.id }] }, data: { subtype: 'NEW' } },
    headers: { authorization: staff.authorization }
  })
  t.same(await names(`/apis/v2/templates?regionId=${venue.north.id}`), [])
  t.same(await names(`/apis/v2/templates?regionId=${venue.south.id}`), ['Moved'])
  t.same(await names('/apis/v2/templates?search=moving'), [])
  t.same(await names('/apis/v2/templates?search=moved'), ['Moved'])
  t.same(await names('/apis/v2/templates?subtype=NEW'), ['Moved'])
})

t.test("a one-place list's total follows creations, place changes, deletions and cascades", async (t) => {
  const { ctx, create, get, venue, staff } = await setup(t)
  const total = async (query: string) => (await get(`/apis/v2/templates?${query}`)).json()._total as number
  const a = await create({ name: 'A', areas: { items: [{ id: venue.hall.id }] } })
  const b = await create({ name: 'B', areas: { items: [{ id: venue.hall.id }] }, regions: { items: [{ id: venue.north.id }] } })
  t.equal(await total(`areaId=${venue.hall.id}`), 2)
  t.equal(await total(`regionId=${venue.north.id}`), 2, 'B lies in north twice over (region and area) and counts once')
  t.equal(await total(`areaId=${venue.field.id}`), 0, 'a place no template names')
  await ctx.app.inject({
    method: 'PATCH',
    url: `/apis/v2/templates/${a.id}`,
    payload: { areas: { items: [{ id: venue.field.id }] } },
    headers: { authorization: staff.authorization }
  })
  t.equal(await total(`areaId=${venue.hall.id}`), 1)
  t.equal(await total(`areaId=${venue.field.id}`), 1)
  await ctx.app.inject({ method: 'DELETE', url: `/apis/v2/templates/${b.id}`, headers: { authorization: staff.authorization } })
  t.equal(await total(`areaId=${venue.hall.id}`), 0, 'a deletion (its references go by cascade)')
  t.equal(await total(`regionId=${venue.north.id}`), 0)
  // What the index holds and what the counts say agree for every place.
  const counted = await ctx.app.db.selectFrom('template_refs').select(['kind', 'ref_id', (eb) => eb.fn.countAll<number>().as('n')]).groupBy(['kind', 'ref_id']).execute()
  const kept = await ctx.app.db.selectFrom('template_ref_counts').selectAll().where('total', '>', 0).execute()
  t.same(
    kept.map((k) => `${k.kind} ${k.ref_id} ${k.total}`).sort(),
    counted.map((c) => `${c.kind} ${c.ref_id} ${c.n}`).sort()
  )
})

/** Every list filter, alone and combined. */
const LIST_FILTERS = (venue: Awaited<ReturnType<typeof setup>>['venue']): TemplateListQuery[] => [
  { type: 'EVENT' },
  { status: 'DRAFT' },
  { subtype: 'CLINIC' },
  { search: 'clinic' },
  { areaId: venue.hall.id },
  { regionId: venue.north.id },
  { podId: venue.pod.id },
  { courtId: venue.court1.id },
  { type: 'EVENT', status: 'PUBLISHED', subtype: 'CLINIC' },
  { areaId: venue.hall.id, type: 'SERIES', status: 'DRAFT' },
  { regionId: venue.north.id, podId: venue.pod.id, courtId: venue.court1.id },
  { search: 'clinic', areaId: venue.hall.id, status: 'DRAFT' }

]

/** The plan SQLite would follow for each query of a list request. */
async function plans(db: Parameters<typeof templateListQueries>[0], query: TemplateListQuery): Promise<string[]> {
  const { rows, count } = templateListQueries(db, query)
  const out: string[] = []
  for (const q of [rows, count]) {
    const compiled = q.compile()
    const result = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${compiled.sql}`, [...compiled.parameters]))
    out.push(result.rows.map((r) => r.detail).join('\n'))
  }
  return out
}

/**
 * PostgreSQL's plans for the same queries with sequential scans priced out: a table with no index
 * for a filter is still scanned, so "Seq Scan on templates" means a filter no index serves.
 */
async function postgresPlans(db: Parameters<typeof templateListQueries>[0], query: TemplateListQuery): Promise<string[]> {
  const { rows, count } = templateListQueries(db, query)
  return db.transaction().execute(async (tx) => {
    await sql`set local enable_seqscan = off`.execute(tx)
    const out: string[] = []
    for (const q of [rows, count]) {
      const compiled = q.compile()
      const result = await tx.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain ${compiled.sql}`, [...compiled.parameters]))
      out.push(result.rows.map((r) => r['QUERY PLAN']).join('\n'))
    }
    return out
  })
}

t.test('EXPLAIN QUERY PLAN: every filter is an index search, never a scan of templates', async (t) => {
  const { ctx, create, venue } = await setup(t)
  await create({ name: 'Some template', areas: { items: [{ id: venue.hall.id }] } })
  const db = ctx.app.db
  if (dialectOf(db) === 'postgres') {
    // The same filters on PostgreSQL: the planner picks among the indexes, so only this is promised.
    for (const filter of LIST_FILTERS(venue)) {
      const [rowsPlan, countPlan] = await postgresPlans(db, { ...filter, page: 3, ipp: 20 })
      for (const [what, plan] of [['page', rowsPlan!], ['count', countPlan!]] as const) {
        const label = `${what} of ${JSON.stringify(filter)}:\n${plan}`
        t.notMatch(plan, /Seq Scan on templates\b/, label)
        t.notMatch(plan, /Seq Scan on template_(refs|search)\b/, label)
      }
    }
    return
  }
  const filters = LIST_FILTERS(venue)
  for (const filter of filters) {
    const [rowsPlan, countPlan] = await plans(db, { ...filter, page: 3, ipp: 20 })
    for (const [what, plan] of [['page', rowsPlan!], ['count', countPlan!]] as const) {
      const label = `${what} of ${JSON.stringify(filter)}:\n${plan}`
      t.notMatch(plan, /\bSCAN templates\b/, label)
      t.match(plan, /SEARCH (templates|template_refs|template_ref_counts) USING|VIRTUAL TABLE INDEX \d+:M/, label)
    }
    if (filter.search === undefined) t.notMatch(rowsPlan, /TEMP B-TREE/, `the index gives the page in order: ${JSON.stringify(filter)}\n${rowsPlan}`)
    else {
      // The page's query counts the matches too (listTemplates runs no second search) and reads
      // whole rows only for the page: by primary key, after the sort.
      t.equal(rowsPlan!.match(/VIRTUAL TABLE INDEX \d+:M/g)?.length, 1, `one search of the text index: ${rowsPlan}`)
      t.match(rowsPlan, /\nSCAN page\nSEARCH templates USING INTEGER PRIMARY KEY \(rowid=\?\)$/, rowsPlan)
    }
  }
  for (const filter of filters.slice(4, 8)) {
    const [, countPlan] = await plans(db, filter)
    t.match(countPlan, /SEARCH template_ref_counts USING PRIMARY KEY/, `one place: its total is one look-up, ${JSON.stringify(filter)}`)
  }
  const [unfiltered] = await plans(db, {})
  t.match(unfiltered, /SCAN templates USING INDEX templates_updated/, 'without filters the order index walks to the page')
  t.notMatch(unfiltered, /TEMP B-TREE/)
})

t.test('migration 0009 counts the references a database already holds', async (t) => {
  const { ctx, create, get, venue } = await setup(t)
  await create({ name: 'A', areas: { items: [{ id: venue.hall.id }] } })
  await create({ name: 'B', areas: { items: [{ id: venue.hall.id }] }, courts: { items: [{ id: venue.court1.id }] } })
  // As a database made before the counts existed: the table and triggers gone, then the migration again.
  await m0009.down(ctx.app.db)
  await m0009.up(ctx.app.db)
  t.equal((await get(`/apis/v2/templates?areaId=${venue.hall.id}`)).json()._total, 2)
  t.equal((await get(`/apis/v2/templates?courtId=${venue.court1.id}`)).json()._total, 1)
  t.equal((await get(`/apis/v2/templates?regionId=${venue.north.id}`)).json()._total, 2)
})

t.test("migration 0031 puts the templates a database already holds in the list's order for the search", async (t) => {
  const { ctx, create, get, names, staff } = await setup(t)
  const made = []
  for (let i = 1; i <= 6; i++) made.push(await create({ name: `Lesson ${i}` }))
  ctx.clock.advance(60_000)
  await ctx.app.inject({ method: 'PATCH', url: `/apis/v2/templates/${made[1]!.id}`, payload: { name: 'Lesson 2 moved' }, headers: { authorization: staff.authorization } })
  const listed = ['Lesson 2 moved', 'Lesson 6', 'Lesson 5', 'Lesson 4', 'Lesson 3', 'Lesson 1']
  t.same(await names('/apis/v2/templates?search=lesson'), listed)
  // As a database from before it: seq in creation order, the search rows under those numbers. In a
  // transaction, as the migrator runs it: PostgreSQL's temporary table belongs to one connection.
  await ctx.app.db.transaction().execute((tx) => m0031.down(tx))
  t.same(await names('/apis/v2/templates?search=lesson&ipp=2'), ['Lesson 1', 'Lesson 2 moved'], 'oldest first: out of the list order')
  // A time the order has no place for (a clock far off once): the migration stops, naming the template.
  const farOff = made[4]!
  const { updated_at: was } = await ctx.app.db.selectFrom('templates').select('updated_at').where('id', '=', farOff.id).executeTakeFirstOrThrow()
  await ctx.app.db.updateTable('templates').set({ updated_at: '2150-01-01T00:00:00.000Z' }).where('id', '=', farOff.id).execute()
  await t.rejects(ctx.app.db.transaction().execute((tx) => m0031.up(tx)), new RegExp(`template ${farOff.id} was last written at "2150-01-01T00:00:00.000Z", which has no place in the list's order`))
  await ctx.app.db.updateTable('templates').set({ updated_at: was }).where('id', '=', farOff.id).execute()
  await ctx.app.db.transaction().execute((tx) => m0031.up(tx))
  for (const [page, expected] of [[1, listed.slice(0, 2)], [2, listed.slice(2, 4)], [3, listed.slice(4)]] as const) {
    t.same(await names(`/apis/v2/templates?search=lesson&ipp=2&page=${page}`), expected, `page ${page}`)
  }
  t.same(await names('/apis/v2/templates?search=moved'), ['Lesson 2 moved'])
  await create({ name: 'Lesson 7' })
  t.same((await names('/apis/v2/templates?search=lesson&ipp=2')), ['Lesson 7', 'Lesson 2 moved'], 'a template written after it goes to the top')
  t.equal((await get('/apis/v2/templates?search=lesson')).json()._total, 7)
})
