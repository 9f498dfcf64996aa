import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { userRoutes } from '@club/contract'
import { currentUser } from '../plugins/auth.js'
import { getDefaultPaymentMethod } from './payment-methods.js'
import { getUser, toUser } from './service.js'

const users: FastifyPluginAsyncTypebox = async (app) => {
  app.route({
    ...userRoutes.current,
    preHandler: app.auth.apiKeyOrBearer(),
    handler: async (request) => toUser(await getUser(app.db, currentUser(request).id), '/apis/v2/users/current')
  })

  app.route({
    ...userRoutes.currentPaymentMethod,
    preHandler: app.auth.apiKeyOrBearer(),
    handler: async (request) => getDefaultPaymentMethod(app.db, currentUser(request).id)
  })
}

export default users
