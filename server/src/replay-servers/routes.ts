// The replay-server routes: the two a recording box calls (no authorization header: registration is
// open and rate limited, the serverId is the status call's secret) and the admin's routes around them.
import type { FastifyReply } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { replayServerDeviceRoutes } from '@club/contract'
import { sha256Hex } from '../crypto.js'
import { routeRateLimit } from '../plugins/rate-limit.js'
import { registerAdminRoutes } from './admin-routes.js'
import { deviceTokenKey, pollReplayServerStatus, registerReplayServer, type ReplayServerDeps } from './service.js'

/** RFC 9110 section 13.1.2: a list of entity tags, weak ones compared weakly, or `*`. */
function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  return header.split(',').some((tag) => {
    const t = tag.trim()
    return t === '*' || t.replace(/^W\//, '') === etag
  })
}

/** Sends text that is already JSON: Fastify passes a string with a JSON content type through as it is. */
function sendJson(reply: FastifyReply, json: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json)
}

const replayServers: FastifyPluginAsyncTypebox = async (app) => {
  if (!app.config.DEVICE_TOKEN_SECRET) {
    app.log.warn(
      'DEVICE_TOKEN_SECRET is not set: device tokens derive from a key kept in the database, so a copy of the database yields them; set it in production'
    )
  }
  const deps: ReplayServerDeps = {
    clock: app.clock,
    tokenKey: await deviceTokenKey(app.db, app.config, app.clock),
    pollIntervalSeconds: app.config.REPLAY_POLL_INTERVAL_SECONDS
  }

  app.route({
    ...replayServerDeviceRoutes.register,
    config: routeRateLimit({ max: app.config.REPLAY_REGISTRATION_RATE_LIMIT_MAX, timeWindowMs: 60_000, what: 'replay-server registrations' }),
    handler: async (request) => registerReplayServer(app.db, request.body, deps)
  })

  app.route({
    ...replayServerDeviceRoutes.status,
    handler: async (request, reply) => {
      const answer = await pollReplayServerStatus(app.db, request.params.serverId, request.query, deps)
      // Serialised once, by the route's own schema, so the ETag is the hash of exactly what is sent.
      const body = reply.serialize(answer) as string
      const etag = `"${sha256Hex(body)}"`
      // The answer may carry the access token: no shared cache may keep it.
      reply.header('etag', etag).header('cache-control', 'no-store')
      // No payload at all (the 304 schema's null only documents that): send(null) serialises "null"
      // and announces Content-Length: 4 on a 304, which strict HTTP clients wait for (autocannon hung).
      if (matchesIfNoneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send(undefined as never)
      return sendJson(reply, body)
    }
  })

  registerAdminRoutes(app, deps)
}

export default replayServers
