// Footage takedowns: staff and admins take a court's footage down and follow each box's deletion; the
// box confirms its deletion with its device token.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { footageTakedownDeviceRoutes, footageTakedownRoutes as routes } from '@club/contract'
import { currentDevice, currentUser } from '../plugins/auth.js'
import { deviceTokenKey } from '../replay-servers/service.js'
import { replayDeps } from '../replays/deps.js'
import { confirmFootageDeletion, createFootageTakedown, getFootageTakedown, listFootageTakedowns } from './service.js'

const footageTakedowns: FastifyPluginAsyncTypebox = async (app) => {
  const deps = { ...replayDeps(app.config, app.clock, await deviceTokenKey(app.db, app.config, app.clock)), retentionDays: app.config.REPLAY_RETENTION_DAYS }
  const onRequest = app.auth.bearer({ roles: ['staff', 'admin'] })
  app.route({ ...routes.list, onRequest, handler: async (request) => listFootageTakedowns(app.db, request.params.id, request.query) })
  app.route({ ...routes.get, onRequest, handler: async (request) => getFootageTakedown(app.db, request.params.id, request.params.takedownId) })
  app.route({
    ...routes.create,
    onRequest,
    handler: async (request, reply) => reply.code(201).send(await createFootageTakedown(app.db, request.params.id, request.body, currentUser(request), deps))
  })
  app.route({
    ...footageTakedownDeviceRoutes.confirm,
    onRequest: app.auth.device(),
    handler: async (request) => confirmFootageDeletion(app.db, currentDevice(request), request.params.id, request.body, app.clock.now())
  })
}

export default footageTakedowns
