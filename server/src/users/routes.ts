import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { userDeletionRoutes, userRoutes } from '@club/contract'
import { currentUser, signedInUser } from '../plugins/auth.js'
import { getDefaultPaymentMethod } from './payment-methods.js'
import { requestUserDeletion, toUser } from './service.js'

const users: FastifyPluginAsyncTypebox = async (app) => {
  app.route({
    ...userRoutes.current,
    onRequest: app.auth.apiKeyOrBearer(),
    // The guard read the user with the credential: no second query.
    handler: async (request) => toUser(signedInUser(request))
  })

  app.route({
    ...userRoutes.currentPaymentMethod,
    onRequest: app.auth.apiKeyOrBearer(),
    handler: async (request) => getDefaultPaymentMethod(app.db, currentUser(request).id)
  })

  app.route({
    ...userDeletionRoutes.deleteCurrent,
    onRequest: app.auth.apiKeyOrBearer(),
    handler: async (request, reply) =>
      reply.code(202).send(await requestUserDeletion(app.db, currentUser(request).id, app.clock, app.config.USER_DELETION_GRACE_DAYS))
  })
}

export default users
