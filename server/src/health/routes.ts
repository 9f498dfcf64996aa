// The operator's routes: liveness, readiness and metrics. No user credential, not rate limited, and
// their request lines at debug unless they fail: probes and scrapes every few seconds would bury
// every other line.
import { timingSafeEqual } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { healthRoutes } from '@club/contract'
import { sha256Hex } from '../crypto.js'
import { ServiceUnavailableError, UnauthorizedError } from '../errors.js'
import { checkReadiness, readinessChecks } from './readiness.js'

const quiet = { config: { rateLimit: false as const, quietLog: true } }

/** Whether `authorization` is "Bearer <token>", compared in constant time (hashes of equal length). */
function bearerMatches(authorization: string | undefined, token: string): boolean {
  const sent = /^Bearer +(\S+) *$/i.exec(authorization ?? '')?.[1] ?? ''
  return timingSafeEqual(Buffer.from(sha256Hex(sent), 'hex'), Buffer.from(sha256Hex(token), 'hex'))
}

const health: FastifyPluginAsyncTypebox = async (app) => {
  const checks = readinessChecks(app.db, app.config, app.redis)

  app.route({ ...healthRoutes.live, ...quiet, handler: async () => ({ status: 'ok' as const }) })

  app.route({
    ...healthRoutes.ready,
    ...quiet,
    handler: async (request) => {
      const { checks: states, failed } = await checkReadiness(checks)
      if (failed.length > 0) {
        // At warn: a failing dependency is worth a line even though probes are quiet.
        request.log.warn({ checks: states }, 'not ready')
        throw new ServiceUnavailableError(`not ready: ${failed.join('; ')}`)
      }
      return { status: 'ready' as const, checks: states }
    }
  })

  app.route({
    ...healthRoutes.metrics,
    ...quiet,
    handler: async (request, reply) => {
      const token = app.config.METRICS_TOKEN
      if (token && !bearerMatches(request.headers.authorization, token)) {
        throw new UnauthorizedError('the metrics need METRICS_TOKEN as a Bearer token', 'Bearer realm="metrics"')
      }
      return reply.type(app.metrics.contentType).send(await app.metrics.text())
    }
  })
}

export default health
