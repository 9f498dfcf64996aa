// "Do not film" intervals of a court: staff and admins list, add and remove them.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { doNotFilmRoutes as routes } from '@club/contract'
import { currentUser } from '../plugins/auth.js'
import { createDoNotFilmInterval, deleteDoNotFilmInterval, listDoNotFilmIntervals } from './service.js'

const doNotFilm: FastifyPluginAsyncTypebox = async (app) => {
  const onRequest = app.auth.bearer({ roles: ['staff', 'admin'] })
  app.route({ ...routes.list, onRequest, handler: async (request) => listDoNotFilmIntervals(app.db, request.params.id, request.query, app.clock) })
  app.route({
    ...routes.create,
    onRequest,
    handler: async (request, reply) =>
      reply.code(201).send(await createDoNotFilmInterval(app.db, request.params.id, request.body, currentUser(request), app.clock))
  })
  app.route({
    ...routes.delete,
    onRequest,
    handler: async (request, reply) => {
      await deleteDoNotFilmInterval(app.db, request.params.id, request.params.intervalId)
      return reply.code(204).send(null)
    }
  })
}

export default doNotFilm
