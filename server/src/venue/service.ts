// Regions, areas (in a region), pods (in an area) and courts (in an area, optionally in a pod).
// The four share one shape and one set of rules, described per kind by `venueKinds`.
import { randomUUID } from 'node:crypto'
import type { Area, AreaCreate, Court, CourtCreate, LockedCourt, Pod, PodCreate, Region, RegionCreate, VenuePatch } from '@club/contract'
import { sql, type Kysely } from 'kysely'
import type { Clock } from '../clock.js'
import type { DbOrTx } from '../db/database.js'
import { BadRequestError, ConflictError, NotFoundError, quote } from '../errors.js'
import { pageRequest, paged, type PageRequest } from '../paging.js'
import { assertUnlocked, lockOn } from './locks.js'
import { checkPlace, placeKinds, type PlaceCollection } from './places.js'

interface ParentField {
  /** The body and answer field. */
  field: 'region' | 'area' | 'pod'
  column: 'region_id' | 'area_id' | 'pod_id'
  collection: PlaceCollection
  optional: boolean
}

interface VenueKind {
  collection: PlaceCollection
  parents: ParentField[]
  /** Records that keep this one from being deleted. */
  children: Array<{ collection: PlaceCollection; column: 'region_id' | 'area_id' | 'pod_id' }>
}

const parent = (field: ParentField['field'], optional = false): ParentField => ({
  field,
  column: `${field}_id`,
  collection: `${field}s` as PlaceCollection,
  optional
})

export const venueKinds = {
  regions: { collection: 'regions', parents: [], children: [{ collection: 'areas', column: 'region_id' }] },
  areas: {
    collection: 'areas',
    parents: [parent('region')],
    children: [
      { collection: 'pods', column: 'area_id' },
      { collection: 'courts', column: 'area_id' }
    ]
  },
  pods: { collection: 'pods', parents: [parent('area')], children: [{ collection: 'courts', column: 'pod_id' }] },
  courts: { collection: 'courts', parents: [parent('area'), parent('pod', true)], children: [] }
} satisfies Record<PlaceCollection, VenueKind>

/** What each kind's create body and answer are. */
export interface VenueModels {
  regions: { create: RegionCreate; model: Region }
  areas: { create: AreaCreate; model: Area }
  pods: { create: PodCreate; model: Pod }
  courts: { create: CourtCreate; model: Court }
}

type VenueRow = { id: string; name: string; slug: string; created_at: string; updated_at: string } & Partial<
  Record<ParentField['column'], string | null>
>

// The four tables differ only in their parent columns, which `venueKinds` describes; Kysely cannot
// type a table chosen at run time, so this module queries them untyped.
const untyped = (db: DbOrTx) => db as unknown as Kysely<Record<string, VenueRow>>

export function venuePath(collection: PlaceCollection, id?: string): string {
  return `/apis/v2/admin/${collection}${id === undefined ? '' : `/${id}`}`
}

export function toVenueItem<C extends PlaceCollection>(collection: C, row: VenueRow): VenueModels[C]['model'] {
  const item: Record<string, unknown> = { id: row.id, name: row.name, slug: row.slug }
  for (const p of venueKinds[collection].parents as ParentField[]) {
    const id = row[p.column]
    item[p.field] = id ? { id } : null
  }
  return { ...item, createdDate: row.created_at, updatedDate: row.updated_at, _links: { self: { href: venuePath(collection, row.id) } } } as never
}

/** "Court 1 (Indoor)" → "court-1-indoor". */
export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 90)
    .replace(/-+$/, '')
}

async function slugTaken(db: DbOrTx, collection: PlaceCollection, slug: string, exceptId?: string): Promise<boolean> {
  let query = untyped(db).selectFrom(collection as string).select('id').where('slug', '=', slug)
  if (exceptId) query = query.where('id', '!=', exceptId)
  return (await query.executeTakeFirst()) !== undefined
}

/** A slug given by the caller must be free (409); one derived from the name gets a number until it is. */
async function chooseSlug(db: DbOrTx, collection: PlaceCollection, name: string, given?: string): Promise<string> {
  const noun = placeKinds[collection].kind
  if (given !== undefined) {
    if (await slugTaken(db, collection, given)) throw new ConflictError(`a ${noun} with slug ${quote(given)} already exists`)
    return given
  }
  const base = slugify(name) || noun
  for (let n = 1; ; n++) {
    const slug = n === 1 ? base : `${base}-${n}`
    if (!(await slugTaken(db, collection, slug))) return slug
  }
}

export async function createVenueItem<C extends PlaceCollection>(
  db: DbOrTx,
  collection: C,
  input: VenueModels[C]['create'],
  clock: Clock
): Promise<VenueModels[C]['model']> {
  const kind: VenueKind = venueKinds[collection]
  const fields = input as unknown as Record<string, { id: string } | null | undefined> & { name: string; slug?: string }
  return db.transaction().execute(async (tx) => {
    const row: VenueRow = { id: randomUUID(), name: fields.name, slug: '', created_at: '', updated_at: '' }
    for (const p of kind.parents) {
      const ref = fields[p.field]
      row[p.column] = ref ? await checkPlace(tx, p.collection, ref.id, `body.${p.field}.id`) : null
    }
    if (row.pod_id) {
      const pod = await untyped(tx).selectFrom('pods' as string).select('area_id').where('id', '=', row.pod_id).executeTakeFirstOrThrow()
      if (pod.area_id !== row.area_id) throw new BadRequestError(`body.pod.id: pod ${row.pod_id} is not in area ${row.area_id}`)
    }
    row.slug = await chooseSlug(tx, collection, fields.name, fields.slug)
    row.created_at = row.updated_at = clock.now().toISOString()
    await untyped(tx).insertInto(collection as string).values(row).execute()
    return toVenueItem(collection, row)
  })
}

async function findRow(db: DbOrTx, collection: PlaceCollection, id: string): Promise<VenueRow> {
  const row = await untyped(db).selectFrom(collection as string).selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw new NotFoundError(`${placeKinds[collection].kind} ${quote(id)} not found`)
  return row
}

export async function getVenueItem<C extends PlaceCollection>(db: DbOrTx, collection: C, id: string): Promise<VenueModels[C]['model']> {
  return toVenueItem(collection, await findRow(db, collection, id))
}

/** A court with the lock an event holds on it at `now`. */
export async function getLockedCourt(db: DbOrTx, id: string, now: Date): Promise<LockedCourt> {
  const court = await getVenueItem(db, 'courts', id)
  const lock = await lockOn(db, 'court', id, now)
  return { ...court, lockedUntil: lock?.lockedUntil ?? null, lockingEvent: lock ? { id: lock.eventId } : null }
}

/** One page of a whole table in `order` (then id), with the count of its rows. */
export async function pageOfTable<R>(db: DbOrTx, table: string, order: string, query: { page?: number; ipp?: number }) {
  const page: PageRequest = pageRequest(query)
  const [rows, count] = await Promise.all([
    untyped(db).selectFrom(table).selectAll().orderBy(sql.ref(order)).orderBy('id').limit(page.ipp).offset(page.offset).execute(),
    untyped(db).selectFrom(table).select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  return { rows: rows as R[], total: Number(count.total), page }
}

export async function listVenueItems<C extends PlaceCollection>(db: DbOrTx, collection: C, query: { page?: number; ipp?: number }) {
  const { rows, total, page } = await pageOfTable<VenueRow>(db, collection, 'created_at', query)
  return paged(rows.map((row) => toVenueItem(collection, row)), total, page, venuePath(collection), query)
}

export async function patchVenueItem<C extends PlaceCollection>(
  db: DbOrTx,
  collection: C,
  id: string,
  patch: VenuePatch,
  clock: Clock
): Promise<VenueModels[C]['model']> {
  return db.transaction().execute(async (tx) => {
    const row = await findRow(tx, collection, id)
    await assertUnlocked(tx, placeKinds[collection].kind, id, clock.now())
    if (patch.slug !== undefined && patch.slug !== row.slug && (await slugTaken(tx, collection, patch.slug, id))) {
      throw new ConflictError(`a ${placeKinds[collection].kind} with slug ${quote(patch.slug)} already exists`)
    }
    const changed = { name: patch.name ?? row.name, slug: patch.slug ?? row.slug }
    if (changed.name === row.name && changed.slug === row.slug) return toVenueItem(collection, row)
    const updated = { ...row, ...changed, updated_at: clock.now().toISOString() }
    await untyped(tx).updateTable(collection as string).set({ name: updated.name, slug: updated.slug, updated_at: updated.updated_at }).where('id', '=', id).execute()
    return toVenueItem(collection, updated)
  })
}

/** Deletes a place nothing else stands on or refers to; otherwise a 409 saying what is in the way. */
export async function deleteVenueItem(db: DbOrTx, collection: PlaceCollection, id: string, clock: Clock): Promise<void> {
  const kind: VenueKind = venueKinds[collection]
  const noun = placeKinds[collection].kind
  await db.transaction().execute(async (tx) => {
    await findRow(tx, collection, id)
    await assertUnlocked(tx, noun, id, clock.now())
    for (const child of kind.children) {
      const found = await untyped(tx).selectFrom(child.collection as string).select('id').where(child.column, '=', id).executeTakeFirst()
      if (found) throw new ConflictError(`${noun} ${id} still has ${child.collection}; delete them first`)
    }
    const template = await tx.selectFrom('template_refs').select('template_id').where('kind', '=', noun).where('ref_id', '=', id).executeTakeFirst()
    if (template) throw new ConflictError(`${noun} ${id} is used by template ${template.template_id}`)
    if (noun !== 'region') {
      const event = await tx.selectFrom('event_refs').select('event_id').where('kind', '=', noun).where('ref_id', '=', id).executeTakeFirst()
      if (event) throw new ConflictError(`${noun} ${id} is used by event ${event.event_id}`)
    }
    if (noun === 'area') {
      const box = await tx.selectFrom('replay_servers').select('id').where('area_id', '=', id).executeTakeFirst()
      if (box) throw new ConflictError(`area ${id} is where replay server ${box.id} records; move or delete it first`)
    }
    await untyped(tx).deleteFrom(collection as string).where('id', '=', id).execute()
  })
}
