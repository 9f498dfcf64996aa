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

/** A camera's id in its box's configuration. */
export const CameraId = Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9._-]+$' })

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

/** A page of a list whose item type is a parameter, for code generic over it (a client reading every page). */
export type Paged<T> = Omit<Static<ReturnType<typeof PagedCollection<TSchema>>>, 'items'> & { items: T[] }

/** A product category such as POD_SHOP, APPAREL or EQUIPMENT: upper case, digits and underscores. */
export const Category = Type.String({ minLength: 1, maxLength: 50, pattern: '^[A-Z][A-Z0-9_]*$' })

/** An amount in currency units with what it is: a line's discount or tax. */
export const DescribedAmount = Type.Object({ amount: Type.Number(), description: Type.String() })

export const DateTime = (options: { description?: string } = {}) => Type.String({ format: 'date-time', ...options })
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/** The error answers a Bearer- or API-key-protected route may give, for its response map. */
export const AuthErrors = { 401: ErrorBody, 403: ErrorBody }
export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) })
export type IdParams = Static<typeof IdParams>

/**
 * The ways a caller proves who it is, as the OpenAPI document declares them. The device's access token
 * and the box's local API use `bearerAuth` too: to a client they are all a Bearer token.
 */
/**
 * The club's OAuth2 scopes (the reference leaves their values open; PROTOCOLS.md): what a token from the
 * token endpoint may be used for. An API key is `api`.
 */
export const oauth2Scopes = {
  api: "Everything the user's role allows; what the password grant gives when no scope is asked for",
  read: 'GET and HEAD only, and not the staff or admin routes',
  replays: 'The replay routes and GET users/current; a web view token has it',
  profile: 'GET users/current only; a web view token has it'
} as const
export type OAuth2Scope = keyof typeof oauth2Scopes

const tokenUrl = '/apis/v2/oauth2/token'

export const securitySchemes = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    description:
      "An access token from the token endpoint, a recording box's device token, or a court page guest's token (the replay " +
      'operations only). An operation that names no `oauth2` ' +
      'scope needs a token with the scope `api` (or `read`, for a GET or HEAD a member may call).'
  },
  oauth2: {
    type: 'oauth2',
    description:
      'The scopes a token from the token endpoint carries. A token used beyond its scope is answered 403 with ' +
      '`error: insufficient_scope` and `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"` (RFC 6750 section 3.1). ' +
      'A client is registered with the scopes it may ask for; asking for more is `invalid_scope`. Staff and admin ' +
      'operations need `api`. The authorization code grant (POST /apis/v2/oauth2/authorizations) gives the scopes the same way.',
    flows: {
      password: { tokenUrl, scopes: oauth2Scopes },
      clientCredentials: { tokenUrl, scopes: oauth2Scopes }
    }
  },
  apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'An API key issued to an integration' },
  clientBasic: { type: 'http', scheme: 'basic', description: "An OAuth2 client's id and secret (RFC 6749 section 2.3.1)" },
  metricsToken: { type: 'http', scheme: 'bearer', description: "The server's METRICS_TOKEN, for a monitoring system's scrapes" },
  webhookSignature: {
    type: 'apiKey',
    in: 'header',
    name: 'webhook-signature',
    description:
      'Standard Webhooks: `webhook-id`, `webhook-timestamp` (Unix seconds, within 5 minutes of the server clock) and ' +
      '`webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` under the key of WEBHOOK_SECRET ' +
      '(whsec_ + base64); several signatures space-separated while keys rotate. `club webhooks sign PATH` prints the headers.'
  }
} as const
export type SecurityScheme = keyof typeof securitySchemes

/** One way to satisfy an operation: every scheme named must be present. `{}` means no credential. */
export type SecurityRequirement = Partial<Record<SecurityScheme, string[]>>

/** The groups the platform's operations are filed under in the OpenAPI document, each with what it holds. */
export const apiTags = {
  oauth2: 'Tokens, authorization codes, the web view token, forum sign-on and password reset',
  users: 'The signed-in user',
  signup: 'Phone verification while signing up',
  templates: 'Event and series templates and their versions (staff and admins)',
  admin: 'Regions, areas, pods, courts, events and series (admins)',
  'replay-servers': 'What a venue recording box calls: registration and its status poll',
  'replay-servers (admin)': 'Approving and administering recording boxes (admins)',
  'agent-releases': "Recording box software: its packages, signed with the club's release key, and that key",
  memberships: 'Membership plans, subscriptions, enrollments and the membership jobs',
  replays: "A player's replay of a court: asked for, cut and uploaded by the box, downloaded",
  'footage-access (admin)': 'The footage access log: every look at footage of people (admins)',
  packages: 'Packages of redeemable items (court bookings, guest passes, replays) and their redemptions',
  products: 'The product catalogue, products on sale and buying them',
  'product-offerings': 'Product offerings (deprecated)',
  operations: 'Health checks for load balancers and service managers, metrics for monitoring systems',
  webhooks: 'Receivers a scheduler calls to run the scheduled jobs (Standard Webhooks signatures)',
  jobs: 'Runs of the scheduled jobs and the daily summaries (admins)',
  'webhook-endpoints (admin)': 'Where the platform sends its events, signed (Standard Webhooks); their deliveries and attempts (admins)',
  events: 'The event feed: what changed, for integrators keeping another system in step (admins)'
} as const

/** Declares one route: method, url and Fastify schema; the server spreads it into `app.route`. */
export interface RouteContract {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  url: string
  schema: {
    /**
     * The operation's stable name, which generated clients turn into a method name: verb + noun in the
     * spec's words (packages/contract/README.md). Required so that no route can be added without one.
     */
    operationId: string
    summary?: string
    description?: string
    tags?: string[]
    deprecated?: boolean
    /** Required as well: `[]` says "no credential needed", which tools would otherwise read as unknown. */
    security: SecurityRequirement[]
    consumes?: string[]
    produces?: string[]
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

export const bearerSecurity: SecurityRequirement[] = [{ bearerAuth: [] }]
export const apiKeyOrBearerSecurity: SecurityRequirement[] = [{ apiKey: [] }, { bearerAuth: [] }]
/** For routes anyone may call (registration, password reset, phone verification): stated, not left out. */
export const noSecurity: SecurityRequirement[] = []
/**
 * A user's own routes that a narrower token than `api` may call as well: an API key, or a Bearer token with
 * `api` or one of `narrower`. The server's auth guard reads the scopes from here, so this is the one place
 * that says which scope a route needs; a route that names none needs `api`.
 */
export const scopedSecurity = (...narrower: OAuth2Scope[]): SecurityRequirement[] => [
  { apiKey: [] },
  ...(['api', ...narrower] as OAuth2Scope[]).map((scope) => ({ oauth2: [scope] }))
]
