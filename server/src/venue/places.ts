// References to places (regions, areas, pods, courts) in request bodies: every id must name an
// existing record, or the request is a 400 naming the field; never a dangling reference.
import type { ItemRefCollection, ItemRefCollectionInput } from '@club/contract'
import type { DbOrTx } from '../db/database.js'
import { BadRequestError, quote } from '../errors.js'

export const placeKinds = {
  regions: { kind: 'region', table: 'regions' },
  areas: { kind: 'area', table: 'areas' },
  pods: { kind: 'pod', table: 'pods' },
  courts: { kind: 'court', table: 'courts' }
} as const
export type PlaceCollection = keyof typeof placeKinds
export type PlaceKind = (typeof placeKinds)[PlaceCollection]['kind']

/** Ids of places by collection, in the order given, without repeats. */
export type Places<C extends PlaceCollection = PlaceCollection> = Record<C, string[]>

/**
 * The ids of each collection present in `input`, checked to exist. `context` prefixes the field
 * named in the 400 ("body.areas.items.1.id").
 */
export async function checkPlaces<C extends PlaceCollection>(
  db: DbOrTx,
  input: Partial<Record<C, ItemRefCollectionInput | undefined>>,
  context = 'body'
): Promise<Partial<Places<C>>> {
  const checked: Partial<Places<C>> = {}
  for (const collection of Object.keys(input) as C[]) {
    const given = input[collection]
    if (!given || !(collection in placeKinds)) continue
    const ids = given.items.map((ref) => ref.id)
    const { kind, table } = placeKinds[collection]
    const found = new Set(
      ids.length === 0 ? [] : (await db.selectFrom(table).select('id').where('id', 'in', [...new Set(ids)]).execute()).map((r) => r.id)
    )
    const missing = ids.findIndex((id) => !found.has(id))
    if (missing >= 0) throw new BadRequestError(`${context}.${collection}.items.${missing}.id: no ${kind} with id ${quote(ids[missing], { alwaysQuoted: true })}`)
    checked[collection] = [...new Set(ids)]
  }
  return checked
}

/** Checks a single reference (an area's region, a court's pod) the same way. */
export async function checkPlace(db: DbOrTx, collection: PlaceCollection, id: string, field: string): Promise<string> {
  const { kind, table } = placeKinds[collection]
  const row = await db.selectFrom(table).select('id').where('id', '=', id).executeTakeFirst()
  if (!row) throw new BadRequestError(`${field}: no ${kind} with id ${quote(id, { alwaysQuoted: true })}`)
  return row.id
}

/** A collection of references as every answer carries it; `self` is the resource that holds it. */
export function refCollection(ids: string[], self: string): ItemRefCollection {
  return { items: ids.map((id) => ({ id })), _total: ids.length, _links: { self: { href: self } } }
}

/** Groups (kind, ref_id) rows, already in their order, into the place collections. */
export function groupPlaces<C extends PlaceCollection>(collections: C[], rows: Array<{ kind: string; ref_id: string }>): Places<C> {
  const places = Object.fromEntries(collections.map((c) => [c, [] as string[]])) as Places<C>
  for (const row of rows) {
    const collection = collections.find((c) => placeKinds[c].kind === row.kind)
    if (collection) places[collection].push(row.ref_id)
  }
  return places
}
