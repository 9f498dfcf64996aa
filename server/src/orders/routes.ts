// Orders: a member's own charges and refunds; staff see everyone's.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { orderRoutes } from '@club/contract'
import { currentUser } from '../plugins/auth.js'
import { getOrder, listOrders } from './service.js'

const orders: FastifyPluginAsyncTypebox = async (app) => {
  const signedIn = app.auth.apiKeyOrBearer()
  app.route({ ...orderRoutes.list, onRequest: signedIn, handler: (request) => listOrders(app.db, request.query, currentUser(request), orderRoutes.list.url) })
  app.route({ ...orderRoutes.get, onRequest: signedIn, handler: (request) => getOrder(app.db, request.params.id, currentUser(request)) })
}

export default orders
