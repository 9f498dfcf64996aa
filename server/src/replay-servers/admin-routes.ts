// The admin's routes around the recording boxes (admin Bearer; a camera's snapshot also staff). They
// address a box by its record id, never by its serverId.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { replayServerAdminRoutes as routes } from '@club/contract'
import { type ReplayServerDeps } from './service.js'
import { approveReplayServerClaim, approveReplayServer, deleteReplayServer, getReplayServer, listReplayServers, rejectReplayServer, rejectReplayServerClaim, revokeReplayServer, rotateReplayServerToken, setReplayServerConfig, setReplayServerTargetVersion } from './decisions.js'
import { boxCallDeps } from './box-call.js'
import { fetchCameraSnapshot } from './snapshots.js'
import { fleetSummary } from './fleet.js'
import { activeRollouts } from '../agent-rollouts/service.js'
import { recordSnapshotAccess } from '../footage-access/service.js'
import { currentUser } from '../plugins/auth.js'

export function registerAdminRoutes(instance: FastifyInstance, deps: ReplayServerDeps): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>()
  const onRequest = app.auth.bearer({ roles: ['admin'] })
  const db = app.db

  app.route({ ...routes.fleet, onRequest, handler: async () => fleetSummary(db, deps, activeRollouts) })
  app.route({ ...routes.list, onRequest, handler: async (request) => listReplayServers(db, request.query, deps) })
  app.route({ ...routes.get, onRequest, handler: async (request) => getReplayServer(db, request.params.id, deps) })
  app.route({ ...routes.approve, onRequest, handler: async (request) => approveReplayServer(db, request.params.id, request.body, deps) })
  app.route({ ...routes.reject, onRequest, handler: async (request) => rejectReplayServer(db, request.params.id, deps) })
  app.route({ ...routes.revoke, onRequest, handler: async (request) => revokeReplayServer(db, request.params.id, deps) })
  app.route({
    ...routes.approveClaim,
    onRequest,
    handler: async (request) => approveReplayServerClaim(db, request.params.id, request.params.claimId, deps)
  })
  app.route({
    ...routes.rejectClaim,
    onRequest,
    handler: async (request) => rejectReplayServerClaim(db, request.params.id, request.params.claimId, deps)
  })
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
  const snapshotDeps = boxCallDeps(app.config, deps.tokenKey)
  app.route({
    ...routes.cameraSnapshot,
    // Staff set up and check courts too; a picture of a court is not an admin's decision.
    onRequest: app.auth.bearer({ roles: ['admin', 'staff'] }),
    handler: async (request, reply) => {
      const { picture, courtIds } = await fetchCameraSnapshot(db, request.params.id, request.params.cameraId, snapshotDeps, request.log)
      // A picture of people on court is a look at footage: logged before it is handed over.
      const viewer = { who: currentUser(request), address: request.ip }
      await recordSnapshotAccess(db, viewer, { replayServerId: request.params.id, cameraId: request.params.cameraId, courtIds }, deps.clock.now())
      return reply.type('image/jpeg').header('cache-control', 'no-store').send(picture)
    }
  })
  app.route({
    ...routes.setTargetVersion,
    onRequest,
    handler: async (request) => setReplayServerTargetVersion(db, request.params.id, request.body, deps)
  })
}
