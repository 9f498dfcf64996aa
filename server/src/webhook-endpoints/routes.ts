// Webhook endpoints and their deliveries: admins only.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { webhookEndpointRoutes as routes } from '@club/contract'
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  listEndpointDeliveries,
  listWebhookEndpoints,
  retryEndpointDelivery,
  rotateWebhookEndpointSecret,
  updateWebhookEndpoint
} from './service.js'

const webhookEndpoints: FastifyPluginAsyncTypebox = async (app) => {
  const onRequest = app.auth.bearer({ roles: ['admin'] })
  app.route({ ...routes.list, onRequest, handler: async (request) => listWebhookEndpoints(app.db, request.query) })
  app.route({
    ...routes.create,
    onRequest,
    handler: async (request, reply) => {
      const created = await createWebhookEndpoint(app.db, request.body, await app.webhookEndpoints())
      // The worker sends to the endpoints it has seen: it sees this one now, not at the next poll.
      app.webhookDelivery.nudge()
      return reply.code(201).send(created)
    }
  })
  app.route({ ...routes.get, onRequest, handler: async (request) => getWebhookEndpoint(app.db, request.params.id) })
  app.route({
    ...routes.update,
    onRequest,
    handler: async (request) => {
      const endpoint = await updateWebhookEndpoint(app.db, request.params.id, request.body, await app.webhookEndpoints())
      // Enabled again: its waiting events go out now, not at the next poll.
      app.webhookDelivery.nudge()
      return endpoint
    }
  })
  app.route({
    ...routes.delete,
    onRequest,
    handler: async (request, reply) => {
      await deleteWebhookEndpoint(app.db, request.params.id)
      return reply.code(204).send(null)
    }
  })
  app.route({ ...routes.rotateSecret, onRequest, handler: async (request) => rotateWebhookEndpointSecret(app.db, request.params.id, await app.webhookEndpoints()) })
  app.route({ ...routes.listDeliveries, onRequest, handler: async (request) => listEndpointDeliveries(app.db, request.params.id, request.query) })
  app.route({
    ...routes.retryDelivery,
    onRequest,
    handler: async (request, reply) => {
      const delivery = await retryEndpointDelivery(app.db, request.params.id, request.params.deliveryId, app.clock)
      app.webhookDelivery.nudge()
      return reply.code(202).send(delivery)
    }
  })
}

export default webhookEndpoints
