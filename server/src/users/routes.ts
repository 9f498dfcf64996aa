import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { userRoutes } from '@club/contract'
import { currentUser } from '../plugins/auth.js'
import { getDefaultPaymentMethod } from './payment-methods.js'
import { toUser } from './service.js'

const users: FastifyPluginAsyncTypebox = async (app) => {
  app.route({
    ...userRoutes.current,
    preHandler: app.auth.apiKeyOrBearer(),
    // The guard read the user with the credential: no second query.
    handler: async (request) => toUser(currentUser(request))
  })

  app.route({
    ...userRoutes.currentPaymentMethod,
    preHandler: app.auth.apiKeyOrBearer(),
    handler: async (request) => getDefaultPaymentMethod(app.db, currentUser(request).id)
  })
}

export default users
