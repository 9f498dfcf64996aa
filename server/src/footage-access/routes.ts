// The footage access log as admins read it, and the notice of what is recorded and for how long.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { footageAccessRoutes } from '@club/contract'
import { footageNotice, listFootageAccess } from './service.js'

const footageAccess: FastifyPluginAsyncTypebox = async (app) => {
  app.route({ ...footageAccessRoutes.list, onRequest: app.auth.bearer({ roles: ['admin'] }), handler: (request) => listFootageAccess(app.db, request.query) })
  app.route({ ...footageAccessRoutes.notice, handler: async () => footageNotice(app.config) })
}

export default footageAccess
