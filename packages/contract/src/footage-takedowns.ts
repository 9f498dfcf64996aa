// Footage takedowns: staff take down a court's footage for an interval (a parent's request, a private
// moment filmed). Every replay of those minutes is taken down, no replay of them may be asked for
// again, and each box of the court's area deletes them from every camera filming the court, then
// confirms; the takedown shows each box's deletion, pending or done.
import Type, { type Static } from 'typebox'
import { AuthErrors, DateTime, ErrorBody, IdParams, ItemRef, Links, Nullable, PageQuery, PagedCollection, bearerSecurity, defineRoutes } from './common.js'

export const FootageDeletionStatus = Type.Enum(['PENDING', 'DELETED'])
export type FootageDeletionStatus = Static<typeof FootageDeletionStatus>

/** One box's part of a takedown: told to delete the minutes, and whether it says it did. */
export const FootageDeletion = Type.Object({
  replayServer: ItemRef,
  status: FootageDeletionStatus,
  deletedDate: Nullable(DateTime({ description: 'When the box confirmed; null while PENDING' })),
  deletedFiles: Nullable(Type.Integer({ minimum: 0, description: 'How many segment files the box deleted (0: it held none of those minutes any more)' }))
})
export type FootageDeletion = Static<typeof FootageDeletion>

export const FootageTakedown = Type.Object({
  id: Type.String(),
  court: ItemRef,
  start: DateTime(),
  end: DateTime(),
  reason: Type.String({ description: 'Why, as staff typed it' }),
  /** The replay whose takedown made it; null: asked for the court's interval. */
  replay: Nullable(ItemRef),
  replaysTakenDown: Type.Integer({ minimum: 0, description: 'How many replays of those minutes it took down' }),
  deletions: Type.Array(FootageDeletion, { description: "Each box of the court's area when it was made, oldest first" }),
  createdBy: Nullable(ItemRef),
  createdDate: DateTime(),
  _links: Links
})
export type FootageTakedown = Static<typeof FootageTakedown>

export const FootageTakedownRequest = Type.Object(
  {
    start: DateTime({ description: 'From when' }),
    end: DateTime({ description: 'Until when: after start, not in the future, at most REPLAY_RETENTION_DAYS after start' }),
    reason: Type.String({ minLength: 1, maxLength: 500, pattern: '\\S', description: 'Why; kept with the takedown, shown to staff' })
  },
  { additionalProperties: false }
)
export type FootageTakedownRequest = Static<typeof FootageTakedownRequest>

export const FootageTakedownListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false })
export type FootageTakedownListQuery = Static<typeof FootageTakedownListQuery>

export const FootageTakedownParams = Type.Object({
  id: IdParams.properties.id,
  takedownId: Type.String({ minLength: 1, maxLength: 100 })
})
export type FootageTakedownParams = Static<typeof FootageTakedownParams>

/** What a box is told to delete (its status answer): the minutes of every camera filming the court. */
export const FootageTakedownOrder = Type.Object({ id: Type.String(), court: ItemRef, start: DateTime(), end: DateTime() })
export type FootageTakedownOrder = Static<typeof FootageTakedownOrder>

export const FootageDeletionReport = Type.Object(
  { deletedFiles: Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'How many segment files it deleted' }) },
  { additionalProperties: false }
)
export type FootageDeletionReport = Static<typeof FootageDeletionReport>

const common = { tags: ['admin'], security: bearerSecurity }

export const footageTakedownRoutes = defineRoutes({
  list: {
    method: 'GET',
    url: '/apis/v2/admin/courts/:id/takedowns',
    schema: {
      operationId: 'listFootageTakedowns',
      ...common,
      summary: "A court's footage takedowns, newest first, with each box's deletion",
      description: 'Staff and admins. 404: no such court.',
      params: IdParams,
      querystring: FootageTakedownListQuery,
      response: { 200: PagedCollection(FootageTakedown), 400: ErrorBody, ...AuthErrors, 404: ErrorBody }
    }
  },
  get: {
    method: 'GET',
    url: '/apis/v2/admin/courts/:id/takedowns/:takedownId',
    schema: {
      operationId: 'getFootageTakedown',
      ...common,
      summary: 'One footage takedown with each box\'s deletion, pending or confirmed',
      description: 'Staff and admins. 404: no such court or takedown.',
      params: FootageTakedownParams,
      response: { 200: FootageTakedown, 400: ErrorBody, ...AuthErrors, 404: ErrorBody }
    }
  },
  create: {
    method: 'POST',
    url: '/apis/v2/admin/courts/:id/takedowns',
    schema: {
      operationId: 'createFootageTakedown',
      ...common,
      summary: "Take down a court's footage for an interval: its replays, new requests and the boxes' recordings",
      description:
        'Staff and admins. Every replay of the court (or cut from a camera filming it) overlapping the interval becomes ' +
        'TAKEN_DOWN and its clip leaves the bucket; a replay overlapping it is refused from now on (409 naming the takedown); ' +
        "each box of the court's area learns it with its next status poll, deletes those minutes of every camera filming the " +
        'court and confirms. 400 naming the field: end not after start, end in the future (use "do not film" for footage ' +
        'not yet recorded), longer than REPLAY_RETENTION_DAYS, no such court (params.id). 502: a clip could not be deleted ' +
        'from its bucket now; the takedown stands and replays/cleanup deletes it.',
      params: IdParams,
      body: FootageTakedownRequest,
      response: { 201: FootageTakedown, 400: ErrorBody, ...AuthErrors, 502: ErrorBody }
    }
  }
})

export const footageTakedownDeviceRoutes = defineRoutes({
  confirm: {
    method: 'PUT',
    url: '/apis/v2/replay-servers/device/footage-takedowns/:id/deletion',
    schema: {
      operationId: 'confirmFootageDeletion',
      summary: 'The box deleted a takedown\'s minutes',
      description:
        "The box's access token as Bearer. Sent once the segments of every camera filming the court that overlap the " +
        'takedown are deleted; the takedown then leaves its status answer. A second confirmation keeps the first. ' +
        '404: no takedown told to this box.',
      tags: ['replay-servers'],
      security: bearerSecurity,
      params: IdParams,
      body: FootageDeletionReport,
      response: { 200: FootageDeletion, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody }
    }
  }
})
