// The venue structure templates point at (regions, areas in a region, pods in an area, courts in an
// area or pod), and the events and series templates are made from. The reference lists no endpoints
// for them; these are admin-only resources under /apis/v2/admin.
import Type, { type Static, type TSchema } from 'typebox'
import {
  DateTime,
  ErrorBody,
  IdParams,
  ItemRef,
  ItemRefCollection,
  ItemRefCollectionInput,
  Links,
  Nullable,
  PageQuery,
  PagedCollection,
  bearerSecurity,
  defineRoutes
} from './common.js'

const Name = Type.String({ minLength: 1, maxLength: 200 })
const Description = Type.String({ maxLength: 10000 })
/** Lower-case letters, digits and single dashes; derived from the name when not given. */
export const Slug = Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z0-9]+(-[a-z0-9]+)*$' })
const Stamps = { createdDate: DateTime(), updatedDate: DateTime(), _links: Links }
const Named = { id: Type.String(), name: Type.String(), slug: Type.String() }

export const Region = Type.Object({ ...Named, ...Stamps })
export type Region = Static<typeof Region>
export const Area = Type.Object({ ...Named, region: ItemRef, ...Stamps })
export type Area = Static<typeof Area>
export const Pod = Type.Object({ ...Named, area: ItemRef, ...Stamps })
export type Pod = Static<typeof Pod>
export const Court = Type.Object({ ...Named, area: ItemRef, pod: Nullable(ItemRef), ...Stamps })
export type Court = Static<typeof Court>

const strict = { additionalProperties: false } as const
export const RegionCreate = Type.Object({ name: Name, slug: Type.Optional(Slug) }, strict)
export type RegionCreate = Static<typeof RegionCreate>
export const AreaCreate = Type.Object({ name: Name, slug: Type.Optional(Slug), region: ItemRef }, strict)
export type AreaCreate = Static<typeof AreaCreate>
export const PodCreate = Type.Object({ name: Name, slug: Type.Optional(Slug), area: ItemRef }, strict)
export type PodCreate = Static<typeof PodCreate>
export const CourtCreate = Type.Object({ name: Name, slug: Type.Optional(Slug), area: ItemRef, pod: Type.Optional(Nullable(ItemRef)) }, strict)
export type CourtCreate = Static<typeof CourtCreate>
/** A place keeps its parents; to move one, create it anew where it belongs. */
export const VenuePatch = Type.Object({ name: Type.Optional(Name), slug: Type.Optional(Slug) }, strict)
export type VenuePatch = Static<typeof VenuePatch>

const EventType = Type.String({ minLength: 1, maxLength: 100, examples: ['CLINIC', 'LEAGUE', 'SOCIAL'] })
const Subtype = Type.String({ minLength: 1, maxLength: 100 })
const Tags = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 100 })

export const Event = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  type: Type.String(),
  subtype: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  startDate: DateTime(),
  endDate: DateTime(),
  areas: ItemRefCollection,
  pods: ItemRefCollection,
  courts: ItemRefCollection,
  series: Nullable(ItemRef),
  recordMatch: Type.Boolean({ description: 'With MATCH_RECORDING=events: its whole interval on each of its filmed courts becomes a match' }),
  ...Stamps
})
export type Event = Static<typeof Event>

const EventPlaces = {
  areas: Type.Optional(ItemRefCollectionInput),
  pods: Type.Optional(ItemRefCollectionInput),
  courts: Type.Optional(ItemRefCollectionInput)
}
export const EventCreate = Type.Object(
  {
    name: Name,
    description: Type.Optional(Nullable(Description)),
    type: EventType,
    subtype: Type.Optional(Nullable(Subtype)),
    tags: Type.Optional(Tags),
    startDate: DateTime(),
    endDate: DateTime({ description: 'After startDate' }),
    ...EventPlaces,
    series: Type.Optional(Nullable(ItemRef)),
    recordMatch: Type.Optional(Type.Boolean({ default: false }))
  },
  strict
)
export type EventCreate = Static<typeof EventCreate>
export const EventPatch = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Nullable(Description)),
    type: Type.Optional(EventType),
    subtype: Type.Optional(Nullable(Subtype)),
    tags: Type.Optional(Tags),
    startDate: Type.Optional(DateTime()),
    endDate: Type.Optional(DateTime()),
    ...EventPlaces,
    series: Type.Optional(Nullable(ItemRef)),
    recordMatch: Type.Optional(Type.Boolean())
  },
  strict
)
export type EventPatch = Static<typeof EventPatch>

export const Series = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  type: Type.String(),
  subtype: Nullable(Type.String()),
  events: ItemRefCollection,
  ...Stamps
})
export type Series = Static<typeof Series>
export const SeriesCreate = Type.Object(
  { name: Name, description: Type.Optional(Nullable(Description)), type: EventType, subtype: Type.Optional(Nullable(Subtype)) },
  strict
)
export type SeriesCreate = Static<typeof SeriesCreate>
export const SeriesPatch = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Nullable(Description)),
    type: Type.Optional(EventType),
    subtype: Type.Optional(Nullable(Subtype))
  },
  strict
)
export type SeriesPatch = Static<typeof SeriesPatch>

export const AdminListQuery = Type.Object({ ...PageQuery }, strict)
export type AdminListQuery = Static<typeof AdminListQuery>

/** The five admin routes of one resource: create, list, get, patch, delete. */
function adminRoutes<M extends TSchema, C extends TSchema, P extends TSchema>(
  collection: string,
  noun: string,
  model: M,
  create: C,
  patch: P,
  deleteRule: string
) {
  const url = `/apis/v2/admin/${collection}`
  const common = { tags: ['admin'], security: bearerSecurity }
  const guarded = { 401: ErrorBody, 403: ErrorBody }
  const admins = 'Admins only.'
  // operationIds by the contract's convention: createRegion, listRegions, getRegion, updateRegion, deleteRegion.
  const one = noun[0]!.toUpperCase() + noun.slice(1)
  const all = collection[0]!.toUpperCase() + collection.slice(1)
  return defineRoutes({
    create: {
      method: 'POST',
      url,
      schema: {
        operationId: `create${one}`,
        ...common,
        summary: `Create a ${noun}`,
        description: `${admins} A reference to something that does not exist is a 400 naming the field.`,
        body: create,
        response: { 201: model, 400: ErrorBody, ...guarded, 409: ErrorBody }
      }
    },
    list: {
      method: 'GET',
      url,
      schema: {
        operationId: `list${all}`,
        ...common,
        summary: `List ${collection}`,
        description: `${admins} Oldest first.`,
        querystring: AdminListQuery,
        response: { 200: PagedCollection(model), 400: ErrorBody, ...guarded }
      }
    },
    get: {
      method: 'GET',
      url: `${url}/:id`,
      schema: { operationId: `get${one}`, ...common, summary: `A ${noun}`, description: admins, params: IdParams, response: { 200: model, ...guarded, 404: ErrorBody } }
    },
    patch: {
      method: 'PATCH',
      url: `${url}/:id`,
      schema: {
        operationId: `update${one}`,
        ...common,
        summary: `Change a ${noun}`,
        description: admins,
        params: IdParams,
        body: patch,
        response: { 200: model, 400: ErrorBody, ...guarded, 404: ErrorBody, 409: ErrorBody }
      }
    },
    delete: {
      method: 'DELETE',
      url: `${url}/:id`,
      schema: {
        operationId: `delete${one}`,
        ...common,
        summary: `Delete a ${noun}`,
        description: `${admins} ${deleteRule}`,
        params: IdParams,
        response: { 204: Type.Null({ description: 'No content' }), ...guarded, 404: ErrorBody, 409: ErrorBody }
      }
    }
  })
}

// Court locking (issue 14): from COURT_LOCK_MINUTES before an event starts until it ends, its places
// and the event itself answer 409 to changes; a court's GET shows the lock.
export const LockedCourt = Type.Object({
  ...Court.properties,
  lockedUntil: Nullable(DateTime({ description: 'Until when an event holds the court (the event, its pod or its area): changes are a 409 until then' })),
  lockingEvent: Nullable(ItemRef)
})
export type LockedCourt = Static<typeof LockedCourt>

/** The court routes, whose GET answers with the lock. */
function withCourtLock<R extends ReturnType<typeof adminRoutes>>(routes: R) {
  const get = routes.get
  return { ...routes, get: { ...get, schema: { ...get.schema, description: `${get.schema.description} Shows the lock an event holds on it.`, response: { ...get.schema.response, 200: LockedCourt } } } }
}
const locked = 'While an event holds it (COURT_LOCK_MINUTES before its start until its end), changing or deleting it is a 409.'

const inUse = 'is a 409 while templates or events refer to it'
export const regionRoutes = adminRoutes('regions', 'region', Region, RegionCreate, VenuePatch, `A region with areas, or one that ${inUse}.`)
export const areaRoutes = adminRoutes('areas', 'area', Area, AreaCreate, VenuePatch, `An area with pods or courts, or one that ${inUse}.`)
export const podRoutes = adminRoutes('pods', 'pod', Pod, PodCreate, VenuePatch, `A pod with courts, or one that ${inUse}.`)
export const courtRoutes = withCourtLock(adminRoutes('courts', 'court', Court, CourtCreate, VenuePatch, `A court that ${inUse}. ${locked}`))
export const eventRoutes = adminRoutes('events', 'event', Event, EventCreate, EventPatch, 'Templates made from it keep their content.')
export const seriesRoutes = adminRoutes('series', 'series', Series, SeriesCreate, SeriesPatch, 'Its events stay, outside any series.')
