// "Do not film": a court is not filmed for an interval (a junior camp, a private event). Staff and
// admins mark it; the boxes filming the court stop those cameras for the interval (their status answer
// carries it) and no replay can be asked for a moment inside it.
import Type, { type Static } from 'typebox'
import { AuthErrors, DateTime, ErrorBody, IdParams, ItemRef, Links, Nullable, PageQuery, PagedCollection, bearerSecurity, defineRoutes } from './common.js'

export const DoNotFilmInterval = Type.Object({
  id: Type.String(),
  court: ItemRef,
  start: DateTime(),
  end: DateTime(),
  reason: Type.String({ description: 'What it is for, as staff typed it (a junior camp, a private event)' }),
  createdBy: Nullable(ItemRef),
  createdDate: DateTime(),
  _links: Links
})
export type DoNotFilmInterval = Static<typeof DoNotFilmInterval>

export const DoNotFilmIntervalRequest = Type.Object(
  {
    start: DateTime({ description: 'From when (may be now or earlier: the box stops at once)' }),
    end: DateTime({ description: 'Until when: after start, in the future, at most 366 days after start' }),
    reason: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', description: 'What it is for' })
  },
  { additionalProperties: false }
)
export type DoNotFilmIntervalRequest = Static<typeof DoNotFilmIntervalRequest>

export const DoNotFilmListQuery = Type.Object(
  {
    past: Type.Optional(Type.Boolean({ default: false, description: 'Also the intervals that have ended' })),
    ...PageQuery
  },
  { additionalProperties: false }
)
export type DoNotFilmListQuery = Static<typeof DoNotFilmListQuery>

export const DoNotFilmIntervalParams = Type.Object({
  id: IdParams.properties.id,
  intervalId: Type.String({ minLength: 1, maxLength: 100 })
})
export type DoNotFilmIntervalParams = Static<typeof DoNotFilmIntervalParams>

const common = { tags: ['admin'], security: bearerSecurity }

export const doNotFilmRoutes = defineRoutes({
  list: {
    method: 'GET',
    url: '/apis/v2/admin/courts/:id/do-not-film',
    schema: {
      operationId: 'listDoNotFilmIntervals',
      ...common,
      summary: "A court's \"do not film\" intervals, soonest first",
      description: 'Staff and admins. Those under way or to come; `past=true` adds those that ended. 404: no such court.',
      params: IdParams,
      querystring: DoNotFilmListQuery,
      response: { 200: PagedCollection(DoNotFilmInterval), 400: ErrorBody, ...AuthErrors, 404: ErrorBody }
    }
  },
  create: {
    method: 'POST',
    url: '/apis/v2/admin/courts/:id/do-not-film',
    schema: {
      operationId: 'createDoNotFilmInterval',
      ...common,
      summary: 'Mark a court not to be filmed for an interval',
      description:
        'Staff and admins. The boxes whose cameras film the court learn it with their next status poll and stop those ' +
        'cameras from start to end (a camera filming several courts stops too); no replay of the court may overlap it (409). ' +
        'Footage recorded before it was made stays on the box as long as the box keeps footage. 400: end not after start, ' +
        'end already past, or longer than 366 days; 404: no such court.',
      params: IdParams,
      body: DoNotFilmIntervalRequest,
      response: { 201: DoNotFilmInterval, 400: ErrorBody, ...AuthErrors, 404: ErrorBody }
    }
  },
  delete: {
    method: 'DELETE',
    url: '/apis/v2/admin/courts/:id/do-not-film/:intervalId',
    schema: {
      operationId: 'deleteDoNotFilmInterval',
      ...common,
      summary: 'Remove a "do not film" interval: the court is filmed again',
      description: 'Staff and admins. The boxes start the cameras again with their next poll. 404: no such court or interval.',
      params: DoNotFilmIntervalParams,
      response: { 204: Type.Null(), 400: ErrorBody, ...AuthErrors, 404: ErrorBody }
    }
  }
})
