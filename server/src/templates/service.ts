// Templates and their version history. Every change is a read-modify-write inside one transaction:
// SQLite runs one transaction at a time on the connection, so racing writers get consecutive
// versions, and the (template_id, version) primary key would refuse a collision regardless.
import { randomUUID } from 'node:crypto'
import { type Selectable } from 'kysely'
import type {
  ChangeAction,
  Template,
  TemplateCreate,
  TemplateFromSource,
  TemplatePatch,
  TemplateStatus,
  TemplateType,
  TemplateVersion
} from '@club/contract'
import { systemClock, type Clock } from '../clock.js'
import { compiledOnce, runCompiled } from '../db/compiled.js'
import type { DbOrTx } from '../db/database.js'
import { readThrough } from '../db/read-cache.js'
import type { TemplatesTable as TemplatesColumns, TemplateVersionsTable } from '../db/schema.js'
import { BadRequestError, ConflictError, NotFoundError, PreconditionFailedError, quote } from '../errors.js'
import { recordEvent } from '../events/outbox.js'
import { parsePackageTemplateData } from '../packages/template-data.js'
import { eventWithPlaces, seriesWithEvents } from '../venue/events.js'
import { checkPlaces, groupPlaces, placeKinds, refCollection, type Places } from '../venue/places.js'
import { eventTemplateData, seriesTemplateData, unionPlaces } from './sources.js'

export type TemplatesTable = Selectable<TemplatesColumns>

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

export async function placesOf(db: DbOrTx, templateIds: string[]): Promise<Map<string, Places>> {
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

/** Slots per millisecond of templates.seq (migration 0031): every seq stays within 2^53 until the year 2109. */
const LIST_PLACE_SLOTS = 2048

/**
 * The seq of a template written at `now`, which is also its search row's rowid: minus the
 * millisecond times 2,048, less 2,047, plus the first free slot of that millisecond. Whatever order
 * the writes come in, a smaller seq never has an older updated_at, so the search reads its pages
 * newest first from the text index in the index's own order, ascending (templates/list.ts; FTS5
 * walks a doclist forwards about twice as fast as backwards). Template writes run one at a time
 * (SQLite's one writer, PostgreSQL's exclusive write lock), so two cannot take the same slot.
 */
async function listPlace(tx: DbOrTx, now: string): Promise<number> {
  const first = -(Date.parse(now) * LIST_PLACE_SLOTS) - (LIST_PLACE_SLOTS - 1)
  const last = first + LIST_PLACE_SLOTS - 1
  if (!Number.isSafeInteger(first)) throw new RangeError(`a template cannot be written at ${now}: its place in the list would pass 2^53`)
  const taken = await tx
    .selectFrom('templates')
    .select((eb) => eb.fn.max('seq').as('highest'))
    .where('seq', '>=', first)
    .where('seq', '<=', last)
    .executeTakeFirst()
  const seq = taken?.highest == null ? first : Number(taken.highest) + 1
  // 2,048 template writes stamped with one millisecond: only a clock that stands still makes them.
  if (seq > last) throw new RangeError(`more than ${LIST_PLACE_SLOTS} template writes at ${now}: the clock is not moving`)
  return seq
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
  const seq = await listPlace(tx, now)
  let row: TemplatesTable
  if (existing) {
    row = { ...existing, ...fields, seq, version: existing.version + 1 }
    await tx.updateTable('templates').set({ ...fields, seq, version: row.version }).where('id', '=', row.id).execute()
    await tx.deleteFrom('template_refs').where('template_id', '=', row.id).execute()
    await tx.deleteFrom('template_search').where('rowid', '=', existing.seq).execute()
  } else {
    row = { ...create!, ...fields, seq, version: 1, created_by: actor.id, created_at: now }
    await tx.insertInto('templates').values(row).execute()
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
