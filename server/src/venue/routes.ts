// Admin-only endpoints for the venue structure, events and series: /apis/v2/admin/<collection>.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { areaRoutes, courtRoutes, eventRoutes, podRoutes, regionRoutes, seriesRoutes } from '@club/contract'
import type { Clock } from '../clock.js'
import type { DbOrTx } from '../db/database.js'
import { createEvent, createSeries, deleteEvent, deleteSeries, getEvent, getSeries, listEvents, listSeries, patchEvent, patchSeries } from './events.js'
import type { PlaceCollection } from './places.js'
import { createVenueItem, deleteVenueItem, getLockedCourt, getVenueItem, listVenueItems, patchVenueItem } from './service.js'

type AdminRoutes = typeof regionRoutes

/** The five operations of one admin resource, each a service call. */
interface AdminService {
  create(db: DbOrTx, body: never, clock: Clock): Promise<unknown>
  list(db: DbOrTx, query: { page?: number; ipp?: number }): Promise<unknown>
  get(db: DbOrTx, id: string, clock: Clock): Promise<unknown>
  patch(db: DbOrTx, id: string, body: never, clock: Clock): Promise<unknown>
  delete(db: DbOrTx, id: string, clock: Clock): Promise<void>
}

function venueService(collection: PlaceCollection): AdminService {
  return {
    create: (db, body, clock) => createVenueItem(db, collection, body, clock),
    list: (db, query) => listVenueItems(db, collection, query),
    get: (db, id) => getVenueItem(db, collection, id),
    patch: (db, id, body, clock) => patchVenueItem(db, collection, id, body, clock),
    delete: (db, id, clock) => deleteVenueItem(db, collection, id, clock)
  }
}

// The route schemas differ per resource, but the handlers only pass the validated request on; the
// contract's schemas (not these types) are what Fastify validates and serialises with.
function registerAdminResource(app: FastifyInstance, routes: AdminRoutes, service: AdminService, onRequest: onRequestAsyncHookHandler) {
  const id = (request: FastifyRequest) => (request.params as { id: string }).id
  app.route({
    ...routes.create,
    onRequest,
    handler: async (request, reply) => reply.code(201).send(await service.create(app.db, request.body as never, app.clock))
  })
  app.route({ ...routes.list, onRequest, handler: async (request) => service.list(app.db, request.query as { page?: number; ipp?: number }) })
  app.route({ ...routes.get, onRequest, handler: async (request) => service.get(app.db, id(request), app.clock) })
  app.route({ ...routes.patch, onRequest, handler: async (request) => service.patch(app.db, id(request), request.body as never, app.clock) })
  app.route({
    ...routes.delete,
    onRequest,
    handler: async (request, reply) => {
      await service.delete(app.db, id(request), app.clock)
      return reply.code(204).send()
    }
  })
}

const venue: FastifyPluginAsyncTypebox = async (app) => {
  // On request, before validation: a caller who is not an admin gets 401/403, never a 400.
  const onRequest = app.auth.bearer({ roles: ['admin'] })
  const register = (routes: object, service: AdminService) =>
    registerAdminResource(app as unknown as FastifyInstance, routes as AdminRoutes, service, onRequest)
  register(regionRoutes, venueService('regions'))
  register(areaRoutes, venueService('areas'))
  register(podRoutes, venueService('pods'))
  register(courtRoutes, { ...venueService('courts'), get: (db, id, clock) => getLockedCourt(db, id, clock.now()) })
  register(eventRoutes, { create: createEvent, list: listEvents, get: getEvent, patch: patchEvent, delete: deleteEvent })
  register(seriesRoutes, { create: createSeries, list: listSeries, get: getSeries, patch: patchSeries, delete: deleteSeries })
}

export default venue
