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
  const onRequest = app.auth.bearer({ roles: ['admin'] })
  const db = app.db

  app.route({ ...routes.list, onRequest, handler: async (request) => listReplayServers(db, request.query, deps) })
  app.route({ ...routes.get, onRequest, handler: async (request) => getReplayServer(db, request.params.id, deps) })
  app.route({ ...routes.approve, onRequest, handler: async (request) => approveReplayServer(db, request.params.id, request.body, deps) })
  app.route({ ...routes.reject, onRequest, handler: async (request) => rejectReplayServer(db, request.params.id, deps) })
  app.route({ ...routes.revoke, onRequest, handler: async (request) => revokeReplayServer(db, request.params.id, deps) })
  app.route({ ...routes.rotateToken, onRequest, handler: async (request) => rotateReplayServerToken(db, request.params.id, deps) })
  app.route({
    ...routes.delete,
    onRequest,
    handler: async (request, reply) => {
      await deleteReplayServer(db, request.params.id)
      return reply.code(204).send(null)
    }
  })
  app.route({ ...routes.setConfig, onRequest, handler: async (request) => setReplayServerConfig(db, request.params.id, request.body, deps) })
  app.route({
    ...routes.setTargetVersion,
    onRequest,
    handler: async (request) => setReplayServerTargetVersion(db, request.params.id, request.body, deps)
  })
}
