// Templates and their version history. Every change is a read-modify-write inside one transaction:
// SQLite runs one transaction at a time on the connection, so racing writers get consecutive
// versions, and the (template_id, version) primary key would refuse a collision regardless.
import { randomUUID } from 'node:crypto'
import { sql, type Expression, type Selectable, type SelectQueryBuilder } from 'kysely'
import type {
  ChangeAction,
  Template,
  TemplateCreate,
  TemplateFromSource,
  TemplateListQuery,
  TemplatePatch,
  TemplateStatus,
  TemplateType,
  TemplateVersion
} from '@club/contract'
import { systemClock, type Clock } from '../clock.js'
import { compiledOnce, runCompiled } from '../db/compiled.js'
import type { DbOrTx } from '../db/database.js'
import { readThrough } from '../db/read-cache.js'
import { textContains } from '../db/sql.js'
import type { Database, TemplatesTable as TemplatesColumns, TemplateVersionsTable } from '../db/schema.js'
import { BadRequestError, ConflictError, NotFoundError, PreconditionFailedError, quote } from '../errors.js'
import { recordEvent } from '../events/outbox.js'
import { parsePackageTemplateData } from '../packages/template-data.js'
import { pageRequest, paged } from '../paging.js'
import { eventWithPlaces, seriesWithEvents } from '../venue/events.js'
import { checkPlaces, groupPlaces, placeKinds, refCollection, type Places } from '../venue/places.js'
import { eventTemplateData, seriesTemplateData, unionPlaces } from './sources.js'

type TemplatesTable = Selectable<TemplatesColumns>

export const templatePlaces = ['regions', 'areas', 'pods', 'courts'] as const

/** What a version records: everything a client can change. */
export interface TemplateContent {
  name: string
  description: string | null
  status: TemplateStatus
  data: Record<string, unknown>
  places: Places
}

export interface Actor {
  id: string
}

export const templatePath = (id?: string) => `/apis/v2/templates${id === undefined ? '' : `/${id}`}`

/** What a template and each of its versions show alike: the content a version records. */
function contentFields(
  row: { id: string; name: string; description: string | null; status: TemplateStatus; version: number; data: string },
  places: Places,
  self: string
) {
  return {
    id: row.id,
    _links: { self: { href: self } },
    name: row.name,
    ...(row.description === null ? {} : { description: row.description }),
    status: row.status,
    version: row.version,
    data: JSON.parse(row.data) as Record<string, unknown>,
    regions: refCollection(places.regions, self),
    areas: refCollection(places.areas, self),
    pods: refCollection(places.pods, self),
    courts: refCollection(places.courts, self)
  }
}

export function toTemplate(row: TemplatesTable, places: Places): Template {
  return {
    ...contentFields(row, places, templatePath(row.id)),
    type: row.type,
    createdBy: { id: row.created_by },
    lastUpdatedBy: { id: row.last_updated_by },
    createdDate: row.created_at,
    updatedDate: row.updated_at
  }
}

export function toTemplateVersion(row: TemplateVersionsTable): TemplateVersion {
  return {
    ...contentFields(row, JSON.parse(row.places) as Places, `${templatePath(row.template_id)}/versions/${row.version}`),
    changedBy: { id: row.changed_by },
    changedDate: row.changed_at,
    changeAction: row.change_action
  }
}

/** The ETag of a template answer: its version, as a strong entity tag. */
export const etagOf = (version: number) => `"${version}"`

/** RFC 9110 section 13.1.1: `*`, or a list of strong entity tags. A bare number is taken as its tag. */
export function ifMatchAllows(header: string | undefined, version: number): boolean {
  if (header === undefined) return true
  return header.split(',').some((tag) => {
    const t = tag.trim()
    return t === '*' || t === etagOf(version) || t === String(version)
  })
}

function checkIfMatch(header: string | undefined, row: TemplatesTable): void {
  if (!ifMatchAllows(header, row.version)) {
    throw new PreconditionFailedError(`template ${row.id} is at version ${row.version}, not ${quote(header)}; read it again and retry`)
  }
}

/** JSON with object keys sorted, so that equal content compares equal whatever the key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v
  )
}

async function placesOf(db: DbOrTx, templateIds: string[]): Promise<Map<string, Places>> {
  const rows =
    templateIds.length === 0
      ? []
      : await db
          .selectFrom('template_refs')
          .select(['template_id', 'kind', 'ref_id'])
          .where('template_id', 'in', templateIds)
          .where('kind', '!=', 'in_region')
          .orderBy('template_id')
          .orderBy('position')
          .execute()
  return new Map(templateIds.map((id) => [id, groupPlaces([...templatePlaces], rows.filter((r) => r.template_id === id))]))
}

async function findTemplate(db: DbOrTx, id: string): Promise<TemplatesTable> {
  const row = (await runCompiled(db, templateQuery, [id]))[0]
  if (!row) throw new NotFoundError(`template ${quote(id)} not found`)
  return row
}

/** A template read is the API's commonest: both its queries are compiled once (db/compiled.ts). */
const templateQuery = compiledOnce((db) => db.selectFrom('templates').selectAll().where('id', '=', ''))
const templatePlacesQuery = compiledOnce((db) =>
  db.selectFrom('template_refs').select(['kind', 'ref_id']).where('template_id', '=', '').where('kind', '!=', 'in_region').orderBy('position')
)

/** One template as the API shows it. */
export async function getTemplate(db: DbOrTx, id: string): Promise<Template> {
  const row = await findTemplate(db, id)
  const refs = await runCompiled(db, templatePlacesQuery, [id, 'in_region'])
  return toTemplate(row, groupPlaces([...templatePlaces], refs))
}

/**
 * A template from the read cache while neither templates nor their places changed: every write to
 * them moves the cache's stamp, so the read after a PATCH is fresh. The same object is handed out
 * until then, so the HTTP layer serialises it once (reply.ts).
 */
export async function getKeptTemplate(db: DbOrTx, id: string): Promise<Template> {
  return readThrough(db, { name: 'templates', tables: ['templates', 'template_refs'] }, id, () => getTemplate(db, id))
}

const asInput = (ids: string[]) => ({ items: ids.map((id) => ({ id })) })

/** The places a request body names, checked to exist; collections it leaves out are absent. */
function placesInput(body: Partial<Record<(typeof templatePlaces)[number], { items: Array<{ id: string }> } | undefined>>) {
  return { regions: body.regions, areas: body.areas, pods: body.pods, courts: body.courts }
}

const noPlaces = (): Places => ({ regions: [], areas: [], pods: [], courts: [] })

/**
 * Writes `content` as `version` of the template: the row, its places (and the regions it lies in,
 * for the regionId filter), its search entry and the version record. `existing` is the stored row;
 * without it, `create` names the new template.
 */
const MAX_DATA_DEPTH = 32

/** `data` is free-form, but a nesting deep enough to overflow the stack when serialised is refused. */
function checkDepth(value: unknown, field: string, depth = 0): void {
  if (depth > MAX_DATA_DEPTH) throw new BadRequestError(`${field} is nested deeper than ${MAX_DATA_DEPTH} levels`)
  if (value !== null && typeof value === 'object') {
    for (const child of Object.values(value)) checkDepth(child, field, depth + 1)
  }
}

async function store(
  tx: DbOrTx,
  existing: TemplatesTable | undefined,
  create: { id: string; type: TemplateType } | undefined,
  content: TemplateContent,
  action: ChangeAction,
  actor: Actor,
  now: string
): Promise<Template> {
  checkDepth(content.data, 'body.data')
  if ((existing?.type ?? create?.type) === 'PACKAGE') parsePackageTemplateData(content.data)
  const subtype = typeof content.data.subtype === 'string' ? content.data.subtype : null
  const fields = {
    name: content.name,
    description: content.description,
    status: content.status,
    data: JSON.stringify(content.data),
    subtype,
    last_updated_by: actor.id,
    updated_at: now
  }
  let row: TemplatesTable
  if (existing) {
    row = { ...existing, ...fields, version: existing.version + 1 }
    await tx.updateTable('templates').set({ ...fields, version: row.version }).where('id', '=', row.id).execute()
    await tx.deleteFrom('template_refs').where('template_id', '=', row.id).execute()
    await tx.deleteFrom('template_search').where('rowid', '=', row.seq).execute()
  } else {
    const values = { ...create!, ...fields, version: 1, created_by: actor.id, created_at: now }
    const { seq } = await tx.insertInto('templates').values(values).returning('seq').executeTakeFirstOrThrow()
    row = { ...values, seq }
  }

  const refs = templatePlaces.flatMap((collection) =>
    content.places[collection].map((ref_id, position) => ({ kind: placeKinds[collection].kind, ref_id, position }))
  )
  const areaRegions =
    content.places.areas.length === 0
      ? []
      : (await tx.selectFrom('areas').select('region_id').where('id', 'in', content.places.areas).execute()).map((a) => a.region_id)
  const inRegions = [...new Set([...content.places.regions, ...areaRegions])].map((ref_id, position) => ({ kind: 'in_region' as const, ref_id, position }))
  const rows = [...refs, ...inRegions].map((r) => ({ ...r, template_id: row.id, updated_at: now }))
  if (rows.length > 0) await tx.insertInto('template_refs').values(rows).execute()
  await tx.insertInto('template_search').values({ rowid: row.seq, name: row.name, description: row.description }).execute()

  await tx
    .insertInto('template_versions')
    .values({
      id: randomUUID(),
      template_id: row.id,
      version: row.version,
      name: content.name,
      description: content.description,
      status: content.status,
      data: fields.data,
      places: JSON.stringify(content.places),
      changed_by: actor.id,
      changed_at: now,
      change_action: action
    })
    .execute()
  const template = toTemplate(row, content.places)
  // A new version (created, updated, rolled back) is what integrators are told of.
  await recordEvent(tx, { type: existing ? 'template.updated' : 'template.created', resourceId: row.id, data: template }, new Date(now))
  return template
}

export interface NewTemplate {
  type: TemplateType
  name: string
  description?: string | null
  status?: TemplateStatus
  data: Record<string, unknown>
}

/** Creates version 1. `places` are those the caller has already checked. */
async function createChecked(tx: DbOrTx, input: NewTemplate, places: Partial<Places>, actor: Actor, clock: Clock): Promise<Template> {
  const content: TemplateContent = {
    name: input.name,
    description: input.description ?? null,
    status: input.status ?? 'DRAFT',
    data: input.data,
    places: { ...noPlaces(), ...places }
  }
  return store(tx, undefined, { id: randomUUID(), type: input.type }, content, 'CREATE', actor, clock.now().toISOString())
}

export async function createTemplate(db: DbOrTx, input: TemplateCreate, actor: Actor, clock: Clock): Promise<Template> {
  return db.transaction().execute(async (tx) => createChecked(tx, input, await checkPlaces(tx, placesInput(input)), actor, clock))
}

/** An EVENT template holding the event's content; its places unless the body names others. */
export async function createTemplateFromEvent(db: DbOrTx, eventId: string, body: TemplateFromSource, actor: Actor, clock: Clock): Promise<Template> {
  return db.transaction().execute(async (tx) => {
    const { event, places } = await eventWithPlaces(tx, eventId)
    const given = await checkPlaces(tx, placesInput(body))
    const input = { type: 'EVENT' as const, name: body.name, description: body.description ?? event.description, status: body.status, data: eventTemplateData(event) }
    return createChecked(tx, input, { ...places, ...given }, actor, clock)
  })
}

/** A SERIES template holding the series' content and schedule; its events' places unless the body names others. */
export async function createTemplateFromSeries(db: DbOrTx, seriesId: string, body: TemplateFromSource, actor: Actor, clock: Clock): Promise<Template> {
  return db.transaction().execute(async (tx) => {
    const { series, events, places } = await seriesWithEvents(tx, seriesId)
    const given = await checkPlaces(tx, placesInput(body))
    const input = { type: 'SERIES' as const, name: body.name, description: body.description ?? series.description, status: body.status, data: seriesTemplateData(series, events) }
    return createChecked(tx, input, { ...unionPlaces([...places.values()]), ...given }, actor, clock)
  })
}

/**
 * Runs `change` on the stored template inside one transaction, once `If-Match` (when sent) has
 * been checked against the version read in that same transaction.
 */
async function changeTemplate<T>(db: DbOrTx, id: string, ifMatch: string | undefined, change: (tx: DbOrTx, row: TemplatesTable) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (tx) => {
    const row = await findTemplate(tx, id)
    checkIfMatch(ifMatch, row)
    return change(tx, row)
  })
}

/** Applies a PATCH; one that changes nothing records no version and answers the template as it is. */
export async function patchTemplate(
  db: DbOrTx,
  id: string,
  patch: TemplatePatch,
  actor: Actor,
  clock: Clock,
  ifMatch?: string
): Promise<Template> {
  if (patch.data !== undefined) checkDepth(patch.data, 'body.data')
  return changeTemplate(db, id, ifMatch, async (tx, row) => {
    const places = (await placesOf(tx, [id])).get(id)!
    const current: TemplateContent = { name: row.name, description: row.description, status: row.status, data: JSON.parse(row.data), places }
    const next: TemplateContent = {
      name: patch.name ?? current.name,
      description: patch.description === undefined ? current.description : patch.description,
      status: patch.status ?? current.status,
      data: patch.data ?? current.data,
      places: { ...current.places, ...(await checkPlaces(tx, placesInput(patch))) }
    }
    if (canonical(next) === canonical(current)) return toTemplate(row, places)
    return store(tx, row, undefined, next, 'UPDATE', actor, clock.now().toISOString())
  })
}

async function findVersion(db: DbOrTx, id: string, version: number): Promise<TemplateVersionsTable> {
  const row = await db.selectFrom('template_versions').selectAll().where('template_id', '=', id).where('version', '=', version).executeTakeFirst()
  if (!row) throw new NotFoundError(`template ${quote(id)} has no version ${quote(version)}`)
  return row
}

/** Restores a version's content as a new version (changeAction ROLLBACK). */
export async function rollbackTemplate(
  db: DbOrTx,
  id: string,
  version: number,
  actor: Actor,
  clock: Clock,
  ifMatch?: string
): Promise<Template> {
  return changeTemplate(db, id, ifMatch, async (tx, row) => {
    const old = await findVersion(tx, id, version)
    const places = JSON.parse(old.places) as Places
    try {
      await checkPlaces(tx, Object.fromEntries(templatePlaces.map((c) => [c, asInput(places[c])])), `version ${version}`)
    } catch (err) {
      // A place removed since that version cannot come back: the version is fine, the venue changed.
      if (err instanceof BadRequestError) throw new ConflictError(`cannot restore: ${err.message}`)
      throw err
    }
    const content: TemplateContent = { name: old.name, description: old.description, status: old.status, data: JSON.parse(old.data), places }
    return store(tx, row, undefined, content, 'ROLLBACK', actor, clock.now().toISOString())
  })
}

/**
 * Deletes the template with its versions, places and search entry. A PACKAGE template a product sells
 * stays (the product would lose what it issues; a withdrawn one keeps it for the orders naming it): 409.
 */
export async function deleteTemplate(db: DbOrTx, id: string, ifMatch?: string, clock: Clock = systemClock): Promise<void> {
  await changeTemplate(db, id, ifMatch, async (tx, row) => {
    const product = await tx.selectFrom('products').select(['sku', 'status']).where('package_template_id', '=', id).orderBy('status').orderBy('sku').limit(1).executeTakeFirst()
    if (product) {
      const way = product.status === 'ON_SALE' ? 'point it at another template or delete it first, or' : 'orders name that withdrawn product, so'
      throw new ConflictError(`product ${product.sku} issues this PACKAGE template: ${way} archive the template (status ARCHIVED) instead of deleting it`)
    }
    // The template as it was: after its deletion no GET answers it.
    const places = (await placesOf(tx, [id])).get(id)!
    await recordEvent(tx, { type: 'template.deleted', resourceId: id, data: toTemplate(row, places) }, clock.now())
    await tx.deleteFrom('template_search').where('rowid', '=', row.seq).execute()
    await tx.deleteFrom('templates').where('id', '=', id).execute()
  })
}

export async function listVersions(db: DbOrTx, id: string) {
  await findTemplate(db, id)
  const rows = await db.selectFrom('template_versions').selectAll().where('template_id', '=', id).orderBy('version', 'desc').execute()
  return { items: rows.map(toTemplateVersion), _total: rows.length, _links: { self: { href: `${templatePath(id)}/versions` } } }
}

export async function getVersion(db: DbOrTx, id: string, version: number): Promise<TemplateVersion> {
  await findTemplate(db, id)
  return toTemplateVersion(await findVersion(db, id, version))
}

type Filtered = SelectQueryBuilder<Database, 'templates', object>

/** The search over the trigram-indexed copy of names and descriptions (migration 0003): see textContains. */
function searchCondition(db: DbOrTx, search: string): Expression<unknown> {
  return textContains(db, 'template_search', [{ name: 'name', nullable: false }, { name: 'description', nullable: true }], search)
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
    // The matches first, materialized, then their templates: left to choose, PostgreSQL's planner
    // walked templates in list order testing each row's text (all 100,000 of them once the page
    // also counts every match) or scanned the search table, where the trigram indexes find the
    // ~1% that match (EXPLAIN ANALYZE at 100,000 templates: 1,061 ms and 299 ms against 24 ms).
    filtered = db
      .with((cte) => cte('search_matches').materialized(), (w) => w.selectFrom('template_search').select('template_search.rowid').where(searchCondition(db, search) as never))
      .selectFrom('search_matches')
      .crossJoin('templates')
      .whereRef('templates.seq', '=', 'search_matches.rowid') as unknown as Filtered
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
  if (query.search !== undefined) {
    // A search sorts every match (the text index knows no order), so the page's keys carry the
    // count of all matches beside them, and only the page's rows are then read whole: the text
    // index is searched once a request instead of twice (page, then count), and the sort holds
    // three columns per match instead of whole rows. A page past the end has no row to carry the
    // total: listTemplates asks `count` then.
    const keys = filtered
      .select(['templates.seq', 'templates.updated_at', 'templates.id', (eb) => eb.fn.countAll<number | string>().over().as('total')])
      .orderBy('templates.updated_at', 'desc')
      .orderBy('templates.id', 'asc')
      .limit(page.ipp)
      .offset(page.offset)
    const searched = db
      .selectFrom(keys.as('page'))
      .crossJoin('templates')
      .whereRef('templates.seq', '=', 'page.seq')
      .selectAll('templates')
      .select('page.total')
      .orderBy('page.updated_at', 'desc')
      .orderBy('page.id', 'asc')
    return { page, rows: searched, count: filtered.select((eb) => eb.fn.countAll<number>().as('total')) }
  }
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
  const { page, rows: rowsQuery, count: countQuery } = templateListQueries(db, query)
  const [rows, count] = await Promise.all([
    rowsQuery.execute() as Promise<Array<TemplatesTable & { total?: number | string }>>,
    query.search === undefined ? countQuery.executeTakeFirstOrThrow() : undefined
  ])
  // A search's page carries its total (templateListQueries); an empty page asks for it.
  const total = count?.total ?? rows[0]?.total ?? (page.offset === 0 ? 0 : (await countQuery.executeTakeFirstOrThrow()).total)
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
