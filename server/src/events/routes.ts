// The event feed for integrators (issue 35): admins, by Bearer token or an admin's API key.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { eventFeedRoutes } from '@club/contract'
import { eventFeed } from './feed.js'

const events: FastifyPluginAsyncTypebox = async (app) => {
  app.route({ ...eventFeedRoutes.feed, onRequest: app.auth.apiKeyOrBearer({ roles: ['admin'] }), handler: (request) => eventFeed(app.db, request.query) })
}

export default events
