// Shapes every area of the API shares: references, links, the collection and the error body.
import Type, { type Static, type TSchema } from 'typebox'

/** A reference to another resource by its unique identifier. */
export const ItemRef = Type.Object({ id: Type.String({ minLength: 1 }) }, { additionalProperties: false })
export type ItemRef = Static<typeof ItemRef>

export const Link = Type.Object({ href: Type.String() })
export type Link = Static<typeof Link>

/** `self` always; collections add `next` and `prev` where they exist. */
export const Links = Type.Object(
  { self: Link, next: Type.Optional(Link), prev: Type.Optional(Link) },
  { additionalProperties: Link }
)
export type Links = Static<typeof Links>

/** The platform's collection shape: `items`, `_total`, `_links`. */
export function Collection<T extends TSchema>(item: T) {
  return Type.Object({ items: Type.Array(item), _total: Type.Integer({ minimum: 0 }), _links: Links })
}

/**
 * A collection of ItemRef as a request body may carry it: only `items` is required on input,
 * `_total` and `_links` are accepted and ignored.
 */
export const ItemRefCollectionInput = Type.Object(
  {
    items: Type.Array(ItemRef, { maxItems: 1000 }),
    _total: Type.Optional(Type.Integer({ minimum: 0 })),
    _links: Type.Optional(Links)
  },
  { additionalProperties: false }
)
export type ItemRefCollectionInput = Static<typeof ItemRefCollectionInput>

export const ItemRefCollection = Collection(ItemRef)
export type ItemRefCollection = Static<typeof ItemRefCollection>

/**
 * The error body of every failed request. The reference types `message` as "object";
 * the platform always sends a human-readable string that names what was wrong.
 */
export const ErrorBody = Type.Object(
  {
    statusCode: Type.Integer(),
    message: Type.String(),
    error: Type.String()
  },
  { $id: 'Error', description: 'The error shape of every failed request' }
)
export type ErrorBody = Static<typeof ErrorBody>

/** Entries of the `errors` arrays on subscriptions, enrollments and phone verification sessions. */
export const ValidationError = Type.Object({
  code: Type.String(),
  message: Type.String(),
  details: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])
})
export type ValidationError = Static<typeof ValidationError>

/** Paging of lists: `page` is 1-based, `ipp` items per page (default 20, at most 100). */
export const PageQuery = {
  // The ceiling keeps (page - 1) * ipp an integer SQLite accepts as an OFFSET.
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1, description: '1-based page number, at most 1,000,000' })),
  ipp: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Items per page, at most 100' }))
}

export const Pagination = Type.Object({
  page: Type.Integer(),
  ipp: Type.Integer(),
  count: Type.Integer({ description: 'Items on this page' }),
  total: Type.Integer({ description: 'All matching items' })
})
export type Pagination = Static<typeof Pagination>

/** A paged collection: the collection shape plus `_pagination`. */
export function PagedCollection<T extends TSchema>(item: T) {
  return Type.Object({
    items: Type.Array(item),
    _pagination: Pagination,
    _total: Type.Integer({ minimum: 0 }),
    _links: Links
  })
}

export const DateTime = (options: { description?: string } = {}) => Type.String({ format: 'date-time', ...options })
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/** The error answers a Bearer- or API-key-protected route may give, for its response map. */
export const AuthErrors = { 401: ErrorBody, 403: ErrorBody }
export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) })
export type IdParams = Static<typeof IdParams>

/** Declares one route: method, url and Fastify schema; the server spreads it into `app.route`. */
export interface RouteContract {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  url: string
  schema: {
    summary?: string
    description?: string
    tags?: string[]
    deprecated?: boolean
    security?: Array<Record<string, string[]>>
    consumes?: string[]
    params?: TSchema
    querystring?: TSchema
    headers?: TSchema
    body?: TSchema
    response: Record<number, TSchema>
  }
}

/** Identity function that keeps each route's literal type while checking it is a RouteContract. */
export function defineRoutes<const T extends Record<string, RouteContract>>(routes: T): T {
  return routes
}

export const bearerSecurity: Array<Record<string, string[]>> = [{ bearerAuth: [] }]
export const apiKeyOrBearerSecurity: Array<Record<string, string[]>> = [{ apiKey: [] }, { bearerAuth: [] }]
