// Templates with version history.
import Type, { type Static } from 'typebox'
import {
  Collection,
  DateTime,
  ErrorBody,
  IdParams,
  ItemRef,
  ItemRefCollection,
  ItemRefCollectionInput,
  Links,
  PageQuery,
  PagedCollection,
  bearerSecurity,
  defineRoutes
} from './common.js'

export const TemplateType = Type.Enum(['EVENT', 'SERIES', 'PACKAGE'])
export type TemplateType = Static<typeof TemplateType>
export const TemplateStatus = Type.Enum(['DRAFT', 'PUBLISHED', 'ARCHIVED'])
export type TemplateStatus = Static<typeof TemplateStatus>
export const ChangeAction = Type.Enum(['CREATE', 'UPDATE', 'ROLLBACK'])
export type ChangeAction = Static<typeof ChangeAction>

export const Template = Type.Object({
  id: Type.String(),
  _links: Links,
  type: TemplateType,
  status: TemplateStatus,
  name: Type.String(),
  description: Type.Optional(Type.String()),
  version: Type.Integer({ minimum: 1 }),
  data: Type.Record(Type.String(), Type.Unknown()),
  regions: ItemRefCollection,
  areas: ItemRefCollection,
  pods: ItemRefCollection,
  courts: ItemRefCollection,
  createdBy: ItemRef,
  lastUpdatedBy: ItemRef,
  createdDate: DateTime(),
  updatedDate: DateTime()
})
export type Template = Static<typeof Template>

export const TemplateVersion = Type.Object({
  id: Type.String(),
  _links: Links,
  version: Type.Integer({ minimum: 1 }),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  status: TemplateStatus,
  data: Type.Record(Type.String(), Type.Unknown()),
  regions: ItemRefCollection,
  areas: ItemRefCollection,
  pods: ItemRefCollection,
  courts: ItemRefCollection,
  changedBy: ItemRef,
  changedDate: DateTime(),
  changeAction: ChangeAction
})
export type TemplateVersion = Static<typeof TemplateVersion>

/** The free-form content of a template; `subtype`, when a string, is what the list filters on. */
export const TemplateData = Type.Record(Type.String(), Type.Unknown(), {
  description: 'Free-form content. Templates made from an event or a series hold its type, subtype, description, durationMinutes and tags (and a series its schedule).'
})
const Name = Type.String({ minLength: 1, maxLength: 200 })
const Description = Type.String({ maxLength: 10000 })

/** Where a template applies. Each is `{items: [{id}]}`; every id must name an existing record. */
export const TemplatePlaces = {
  regions: Type.Optional(ItemRefCollectionInput),
  areas: Type.Optional(ItemRefCollectionInput),
  pods: Type.Optional(ItemRefCollectionInput),
  courts: Type.Optional(ItemRefCollectionInput)
}

export const TemplateCreate = Type.Object(
  { name: Name, description: Type.Optional(Description), type: TemplateType, status: Type.Optional(TemplateStatus), data: TemplateData, ...TemplatePlaces },
  { additionalProperties: false }
)
export type TemplateCreate = Static<typeof TemplateCreate>

/** Every field optional; a collection given replaces the old one; `description: null` removes it. */
export const TemplatePatch = Type.Object(
  { name: Type.Optional(Name), description: Type.Optional(Type.Union([Description, Type.Null()], { description: 'null removes the description' })), status: Type.Optional(TemplateStatus), data: Type.Optional(TemplateData), ...TemplatePlaces },
  { additionalProperties: false }
)
export type TemplatePatch = Static<typeof TemplatePatch>

/** The body of from-event and from-series: places given here replace the source's. */
export const TemplateFromSource = Type.Object(
  { name: Name, description: Type.Optional(Description), status: Type.Optional(TemplateStatus), ...TemplatePlaces },
  { additionalProperties: false }
)
export type TemplateFromSource = Static<typeof TemplateFromSource>

export const TemplateRollback = Type.Object({ version: Type.Integer({ minimum: 1 }) }, { additionalProperties: false })
export type TemplateRollback = Static<typeof TemplateRollback>

const Filter = (description: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 200, description }))

export const TemplateListQuery = Type.Object(
  {
    ...PageQuery,
    type: Type.Optional(TemplateType),
    status: Type.Optional(TemplateStatus),
    search: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        pattern: '^[^\\u0000-\\u001f\\u007f]+$',
        description: 'Case-insensitive substring of the name or the description; no control characters'
      })
    ),
    areaId: Filter('Templates whose areas include this area'),
    subtype: Filter("Templates whose data.subtype is exactly this"),
    regionId: Filter('Templates whose regions include this region, or whose areas lie in it'),
    podId: Filter('Templates whose pods include this pod'),
    courtId: Filter('Templates whose courts include this court')
  },
  { additionalProperties: false }
)
export type TemplateListQuery = Static<typeof TemplateListQuery>

export const TemplateCollection = PagedCollection(Template)
export type TemplateCollection = Static<typeof TemplateCollection>
export const TemplateVersionCollection = Collection(TemplateVersion)
export type TemplateVersionCollection = Static<typeof TemplateVersionCollection>

export const TemplateVersionParams = Type.Object({ id: IdParams.properties.id, version: Type.Integer({ minimum: 1 }) })
export type TemplateVersionParams = Static<typeof TemplateVersionParams>
export const EventIdParams = Type.Object({ eventId: IdParams.properties.id })
export type EventIdParams = Static<typeof EventIdParams>
export const SeriesIdParams = Type.Object({ seriesId: IdParams.properties.id })
export type SeriesIdParams = Static<typeof SeriesIdParams>

/** `If-Match` with the version a client read: a write against any other version is refused with 412. */
export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ description: 'The ETag of the version this change is based on, e.g. "3"' }))
})

const tags = ['templates']
const security = bearerSecurity
const guarded = { 401: ErrorBody, 403: ErrorBody }
const roles = 'Staff and admins only; members get 403.'
const etag = 'The answer carries an `ETag` of the template version.'
const precondition = 'With `If-Match`, a template whose version differs answers 412 and nothing changes.'

export const templateRoutes = defineRoutes({
  list: {
    method: 'GET',
    url: '/apis/v2/templates',
    schema: {
      operationId: 'listTemplates',
      summary: 'List templates',
      description:
        `${roles} Every query parameter is optional. The reference marks all of them required; this is treated as an error ` +
        'of the reference, since a list that needs every filter at once could not list everything. Filters combine with AND. ' +
        '`page` is 1-based; `ipp` defaults to 20 and may be at most 100 (more is a 400). A page past the end answers 200 with ' +
        'no items. Order: `updatedDate` newest first, then `id`.',
      tags,
      security,
      querystring: TemplateListQuery,
      response: { 200: TemplateCollection, 400: ErrorBody, ...guarded }
    }
  },
  create: {
    method: 'POST',
    url: '/apis/v2/templates',
    schema: {
      operationId: 'createTemplate',
      summary: 'Create a template (version 1)',
      description: `${roles} ${etag} A region, area, pod or court that does not exist is a 400 naming the field.`,
      tags,
      security,
      body: TemplateCreate,
      response: { 201: Template, 400: ErrorBody, ...guarded }
    }
  },
  get: {
    method: 'GET',
    url: '/apis/v2/templates/:id',
    schema: {
      operationId: 'getTemplate',
      summary: 'A template',
      description: `${roles} ${etag}`,
      tags,
      security,
      params: IdParams,
      response: { 200: Template, ...guarded, 404: ErrorBody }
    }
  },
  patch: {
    method: 'PATCH',
    url: '/apis/v2/templates/:id',
    schema: {
      operationId: 'updateTemplate',
      summary: 'Change a template',
      description:
        `${roles} ${etag} A change records a new version (changeAction UPDATE); a PATCH that changes nothing records none. ` +
        precondition,
      tags,
      security,
      params: IdParams,
      headers: IfMatchHeaders,
      body: TemplatePatch,
      response: { 200: Template, 400: ErrorBody, ...guarded, 404: ErrorBody, 412: ErrorBody }
    }
  },
  delete: {
    method: 'DELETE',
    url: '/apis/v2/templates/:id',
    schema: {
      operationId: 'deleteTemplate',
      summary: 'Delete a template and its versions',
      description: `${roles} ${precondition} A PACKAGE template a product issues is a 409 naming the product: archive it instead.`,
      tags,
      security,
      params: IdParams,
      headers: IfMatchHeaders,
      response: { 204: Type.Null({ description: 'No content' }), ...guarded, 404: ErrorBody, 409: ErrorBody, 412: ErrorBody }
    }
  },
  versions: {
    method: 'GET',
    url: '/apis/v2/templates/:id/versions',
    schema: {
      operationId: 'listTemplateVersions',
      summary: "A template's versions, newest first",
      description: roles,
      tags,
      security,
      params: IdParams,
      response: { 200: TemplateVersionCollection, ...guarded, 404: ErrorBody }
    }
  },
  version: {
    method: 'GET',
    url: '/apis/v2/templates/:id/versions/:version',
    schema: {
      operationId: 'getTemplateVersion',
      summary: 'One version of a template',
      description: `${roles} Not in the reference: the target of each version's \`_links.self\`.`,
      tags,
      security,
      params: TemplateVersionParams,
      response: { 200: TemplateVersion, 400: ErrorBody, ...guarded, 404: ErrorBody }
    }
  },
  rollback: {
    method: 'POST',
    url: '/apis/v2/templates/:id/rollback',
    schema: {
      operationId: 'rollbackTemplate',
      summary: "Restore a version's content as a new version",
      description:
        `${roles} ${etag} Records a new version with changeAction ROLLBACK. An unknown version is 404. ` +
        `A version naming a place that no longer exists is 409. ${precondition}`,
      tags,
      security,
      params: IdParams,
      headers: IfMatchHeaders,
      body: TemplateRollback,
      response: { 200: Template, 400: ErrorBody, ...guarded, 404: ErrorBody, 409: ErrorBody, 412: ErrorBody }
    }
  },
  fromEvent: {
    method: 'POST',
    url: '/apis/v2/templates/from-event/:eventId',
    schema: {
      operationId: 'createTemplateFromEvent',
      summary: 'Create an EVENT template from an event',
      description:
        `${roles} ${etag} \`data\` holds the event's type, subtype, description, durationMinutes and tags; the areas, pods ` +
        'and courts are the event\'s unless the body gives them. An unknown event is 404.',
      tags,
      security,
      params: EventIdParams,
      body: TemplateFromSource,
      response: { 201: Template, 400: ErrorBody, ...guarded, 404: ErrorBody }
    }
  },
  fromSeries: {
    method: 'POST',
    url: '/apis/v2/templates/from-series/:seriesId',
    schema: {
      operationId: 'createTemplateFromSeries',
      summary: 'Create a SERIES template from a series',
      description:
        `${roles} ${etag} \`data\` holds the series' type, subtype, description, its events' durationMinutes and tags, and ` +
        'its schedule pattern; the areas, pods and courts are those of its events unless the body gives them. An unknown series is 404.',
      tags,
      security,
      params: SeriesIdParams,
      body: TemplateFromSource,
      response: { 201: Template, 400: ErrorBody, ...guarded, 404: ErrorBody }
    }
  }
})
