// The admin's routes around the recording boxes (admin Bearer only). They address a box by its record
// id, never by its serverId.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { replayServerAdminRoutes as routes } from '@club/contract'
import {
  approveReplayServer,
  deleteReplayServer,
  getReplayServer,
  listReplayServers,
  rejectReplayServer,
  revokeReplayServer,
  rotateReplayServerToken,
  setReplayServerConfig,
  setReplayServerTargetVersion,
  type ReplayServerDeps
} from './service.js'

export function registerAdminRoutes(instance: FastifyInstance, deps: ReplayServerDeps): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>()
  const preHandler = app.auth.bearer({ roles: ['admin'] })
  const db = app.db

  app.route({ ...routes.list, preHandler, handler: async (request) => listReplayServers(db, request.query, deps) })
  app.route({ ...routes.get, preHandler, handler: async (request) => getReplayServer(db, request.params.id, deps) })
  app.route({ ...routes.approve, preHandler, handler: async (request) => approveReplayServer(db, request.params.id, request.body, deps) })
  app.route({ ...routes.reject, preHandler, handler: async (request) => rejectReplayServer(db, request.params.id, deps) })
  app.route({ ...routes.revoke, preHandler, handler: async (request) => revokeReplayServer(db, request.params.id, deps) })
  app.route({ ...routes.rotateToken, preHandler, handler: async (request) => rotateReplayServerToken(db, request.params.id, deps) })
  app.route({
    ...routes.delete,
    preHandler,
    handler: async (request, reply) => {
      await deleteReplayServer(db, request.params.id)
      return reply.code(204).send(null)
    }
  })
  app.route({ ...routes.setConfig, preHandler, handler: async (request) => setReplayServerConfig(db, request.params.id, request.body, deps) })
  app.route({
    ...routes.setTargetVersion,
    preHandler,
    handler: async (request) => setReplayServerTargetVersion(db, request.params.id, request.body, deps)
  })
}
