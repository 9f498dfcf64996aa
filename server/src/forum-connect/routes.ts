import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { oauth2Routes } from '@club/contract'
import { currentUser } from '../plugins/auth.js'
import { getUser } from '../users/service.js'
import { authorizeForum, forumConnectSettings } from './service.js'

const forumConnect: FastifyPluginAsyncTypebox = async (app) => {
  const settings = forumConnectSettings(app.config)

  app.route({
    ...oauth2Routes.forumConnect,
    preHandler: app.auth.bearer(),
    handler: async (request, reply) => {
      const user = await getUser(app.db, currentUser(request).id)
      const answer = await authorizeForum(app.db, user, request.body, { settings, clock: app.clock })
      return reply.code(201).header('cache-control', 'no-store').send(answer)
    }
  })
}

export default forumConnect
