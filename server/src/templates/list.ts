// The template list: every filter (places, type, search, dates) as one query, its page and its count,
// and the kept pages of the read cache. A search goes to the trigram-indexed copy of names and
// descriptions (see db/sql.ts textContains), whose rowid is the list's order (migration 0031).
import { sql, type SelectQueryBuilder } from 'kysely'
import type { TemplateListQuery } from '@club/contract'
import type { DbOrTx } from '../db/database.js'
import { readThrough } from '../db/read-cache.js'
import { searchMatches, searchReadsEveryMatch } from '../db/sql.js'
import type { Database } from '../db/schema.js'
import { pageRequest, paged } from '../paging.js'

import { placesOf, toTemplate, templatePath, type TemplatesTable } from './service.js'

type Filtered = SelectQueryBuilder<Database, 'templates', object>

/** The search rows holding `search` (migration 0003's trigram-indexed copy of names and descriptions), as `matches`. */
function searchedTemplates(db: DbOrTx, search: string) {
  return searchMatches(db, 'template_search', [{ name: 'name', nullable: false }, { name: 'description', nullable: true }], search)
}

type RefFilter = ['court' | 'pod' | 'area' | 'in_region', string]
type RefsQuery = SelectQueryBuilder<Database, 'template_refs', object>

/** Keeps the rows whose template also has each of `refs`; `templateId` names the column to match. */
function withRefs<Q extends SelectQueryBuilder<Database, any, object>>(query: Q, refs: RefFilter[], templateId: 'templates.id' | 'template_refs.template_id'): Q {
  let filtered = query
  for (const [kind, refId] of refs) {
    filtered = filtered.where(({ exists, selectFrom }) =>
      exists(
        selectFrom('template_refs as also')
          .select('also.template_id')
          .whereRef('also.template_id', '=', sql.ref(templateId))
          .where('also.kind', '=', kind)
          .where('also.ref_id', '=', refId)
      )
    ) as Q
  }
  return filtered
}

/**
 * The list query for the filters, without its selection, and the order that the driving index
 * gives. The most selective index drives (search, then court, pod, area, region, then the
 * templates' own column indexes) through a CROSS JOIN, which SQLite never reorders; the other
 * filters are checked on each row it yields. `refsOnly` is set when only place filters are given:
 * the same matches from template_refs alone, since a reference always has its template (foreign
 * key, cascading delete).
 */
function filteredTemplates(
  db: DbOrTx,
  query: TemplateListQuery
): { query: Filtered; refsOnly?: RefsQuery; refFilters: RefFilter[]; order: [string, string] } {
  const refFilters = (
    [
      ['court', query.courtId],
      ['pod', query.podId],
      ['area', query.areaId],
      ['in_region', query.regionId]
    ] as const
  ).filter((f): f is [(typeof f)[0], string] => f[1] !== undefined)

  let filtered: Filtered
  let order: [string, string] = ['templates.updated_at', 'templates.id']
  let others: RefFilter[] = refFilters
  let refsOnly: RefsQuery | undefined
  const templateColumns = query.type !== undefined || query.status !== undefined || query.subtype !== undefined
  const search = query.search
  if (search !== undefined) {
    // The text index drives: its rowid is templates.seq, the list's order (migration 0031).
    filtered = (searchedTemplates(db, search) as unknown as SelectQueryBuilder<Database, 'templates', object>)
      .crossJoin('templates')
      .whereRef('templates.seq', '=', sql.ref('matches.rowid')) as unknown as Filtered
  } else if (refFilters.length > 0) {
    const [[kind, refId], ...rest] = refFilters
    others = rest
    order = ['template_refs.updated_at', 'template_refs.template_id']
    const driver = db.selectFrom('template_refs').where('template_refs.kind', '=', kind).where('template_refs.ref_id', '=', refId)
    if (!templateColumns) refsOnly = withRefs(driver, others, 'template_refs.template_id')
    filtered = driver.crossJoin('templates').whereRef('templates.id', '=', 'template_refs.template_id') as unknown as Filtered
  } else {
    filtered = db.selectFrom('templates')
  }
  filtered = withRefs(filtered, others, 'templates.id')
  if (query.type !== undefined) filtered = filtered.where('templates.type', '=', query.type)
  if (query.status !== undefined) filtered = filtered.where('templates.status', '=', query.status)
  if (query.subtype !== undefined) filtered = filtered.where('templates.subtype', '=', query.subtype)
  return { query: filtered, ...(refsOnly ? { refsOnly } : {}), refFilters, order }
}

/** The two queries of a list request: its page of rows and the count of all matches. */
export function templateListQueries(db: DbOrTx, query: TemplateListQuery) {
  const page = pageRequest(query)
  const { query: filtered, refsOnly, refFilters, order } = filteredTemplates(db, query)
  if (query.search !== undefined) {
    // The text index gives the matches newest first, ascending (their rowid is templates.seq, the
    // list's order: migration 0031), and stops once the page is full, one match before it and one after
    // included: listTemplates checks those neighbours. Without a filter on templates' own columns
    // or places, the page's keys and the count read the text index alone. Where finding the page
    // reads every match anyway (PostgreSQL's), the page carries their count: one search, not two.
    const before = page.offset > 0 ? 1 : 0
    const bare = refFilters.length === 0 && query.type === undefined && query.status === undefined && query.subtype === undefined
    const driver = bare ? (searchedTemplates(db, query.search) as unknown as Filtered) : filtered
    const carriesTotal = searchReadsEveryMatch(db)
    const keys = driver
      .select((eb) => [sql.ref<number>('matches.rowid').as('seq'), (carriesTotal ? eb.fn.countAll<number | string>().over() : eb.lit(null)).as('total')])
      .orderBy(sql.ref('matches.rowid'), 'asc')
      .limit(before + page.ipp + 1)
      .offset(page.offset - before)
    const newestFirst = db
      .selectFrom(keys.as('page'))
      .crossJoin('templates')
      .whereRef('templates.seq', '=', 'page.seq')
      .selectAll('templates')
      .select('page.total')
      .orderBy('page.seq', 'asc')
    // Templates written in one millisecond share it, and the list puts them in id order: then the
    // page comes sorted, as any other list's.
    const sorted = filtered.selectAll('templates').orderBy('templates.updated_at', 'desc').orderBy('templates.id', 'asc').limit(page.ipp).offset(page.offset)
    const count = driver.select((eb) => eb.fn.countAll<number>().as('total'))
    // Each inside a plain select: on PostgreSQL the matches make them begin `with`, which the
    // connection must count as a write of every table (db/postgres.ts), retiring every read cache.
    return {
      page,
      rows: newestFirst as unknown as SelectQueryBuilder<Database, 'templates', TemplatesTable & { total: number | string | null }>,
      count: db.selectFrom(count.as('counted')).select('counted.total') as unknown as typeof count,
      newestFirst: {
        before,
        sorted: db.selectFrom(sorted.as('sorted')).selectAll('sorted').orderBy('sorted.updated_at', 'desc').orderBy('sorted.id', 'asc') as unknown as typeof sorted,
        carriesTotal
      }
    }
  }
  // With only place filters, the count and the page's ids come from the template_refs index alone
  // and just the page's rows are read from templates. Joining inside made both grow with the matches
  // at a B-tree look-up each: the count over all of them, a deep page over every row it skipped.
  const rows: SelectQueryBuilder<Database, 'templates', TemplatesTable> = refsOnly
    ? (db
        .selectFrom(
          refsOnly
            .select(['template_refs.template_id', 'template_refs.updated_at'])
            .orderBy('template_refs.updated_at', 'desc')
            .orderBy('template_refs.template_id', 'asc')
            .limit(page.ipp)
            .offset(page.offset)
            .as('page')
        )
        .crossJoin('templates')
        .whereRef('templates.id', '=', 'page.template_id')
        .selectAll('templates')
        .orderBy('page.updated_at', 'desc')
        .orderBy('page.template_id', 'asc') as unknown as SelectQueryBuilder<Database, 'templates', TemplatesTable>)
    : filtered
        .selectAll('templates')
        .orderBy(sql.ref(order[0]), 'desc')
        .orderBy(sql.ref(order[1]), 'asc')
        .limit(page.ipp)
        .offset(page.offset)
  if (refsOnly && refFilters.length === 1) {
    // One place: its total is kept per reference (migration 0009), one look-up at any size.
    const [kind, refId] = refFilters[0]!
    const count = db.selectNoFrom((eb) =>
      eb.fn
        .coalesce(eb.selectFrom('template_ref_counts').select('total').where('kind', '=', kind).where('ref_id', '=', refId), eb.lit(0))
        .as('total')
    )
    return { page, rows, count }
  }
  const counted = (refsOnly as unknown as Filtered | undefined) ?? filtered
  return { page, rows, count: counted.select((eb) => eb.fn.countAll<number>().as('total')) }
}

/** One page of the templates matching every filter given, newest change first, then by id. */
export async function listTemplates(db: DbOrTx, query: TemplateListQuery) {
  const { page, rows: rowsQuery, count: countQuery, newestFirst } = templateListQueries(db, query)
  const [fetched, counted] = await Promise.all([
    rowsQuery.execute() as Promise<Array<TemplatesTable & { total?: number | string | null }>>,
    newestFirst?.carriesTotal ? undefined : countQuery.executeTakeFirstOrThrow()
  ])
  let rows: TemplatesTable[] = fetched
  if (newestFirst) {
    // Newest first is the list's order unless two of these rows, or a row and its neighbour
    // outside the page, were written in the same millisecond (see templateListQueries).
    const tied = fetched.some((row, i) => i > 0 && row.updated_at === fetched[i - 1]!.updated_at)
    rows = tied ? await newestFirst.sorted.execute() : fetched.slice(newestFirst.before, newestFirst.before + page.ipp)
  }
  // A page past the end has no row to carry the total: then it is asked.
  const total = counted?.total ?? fetched[0]?.total ?? (await countQuery.executeTakeFirstOrThrow()).total
  const places = await placesOf(db, rows.map((r) => r.id))
  const items = rows.map((row) => toTemplate(row, places.get(row.id)!))
  return paged(items, Number(total), page, templatePath(), query)
}

export type TemplatePage = Awaited<ReturnType<typeof listTemplates>>

/**
 * A page of the list from the read cache while no template or place reference changed. A page is
 * a page count, a search and three queries, so it is kept (and its text, by the HTTP layer); at
 * about 1 KB a template, pages get a tenth of the entries.
 */
export async function listKeptTemplates(db: DbOrTx, query: TemplateListQuery): Promise<TemplatePage> {
  const spec = { name: 'template-pages', tables: ['templates', 'template_refs', 'template_search'], share: 0.1 }
  return readThrough(db, spec, JSON.stringify(query), () => listTemplates(db, query))
}
