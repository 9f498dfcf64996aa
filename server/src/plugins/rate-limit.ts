// Rate limits (@fastify/rate-limit): counted in this process, or in Redis when REDIS_URL is set so
// that every server process shares one count. The global limit applies to requests that carry an
// API key: 300 per 60 s per client IP by default, shared by every route. Routes that need their own
// limit (open endpoints) spread `routeRateLimit(...)` into their `config`.
import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify'
import rateLimit from '@fastify/rate-limit'
import fp from 'fastify-plugin'
import { TooManyRequestsError } from '../errors.js'

function describeWindow(ms: number): string {
  const seconds = Math.round(ms / 1000)
  return seconds % 3600 === 0 ? `${seconds / 3600} hour(s)` : seconds % 60 === 0 ? `${seconds / 60} minute(s)` : `${seconds} seconds`
}

/**
 * A route's own limit, counted apart from the API-key limit and applied to every caller.
 * `keyGenerator` defaults to the client IP (which `TRUST_PROXY` decides).
 */
export function routeRateLimit(options: {
  max: number
  timeWindowMs: number
  keyGenerator?: (request: FastifyRequest) => string
  what?: string
}) {
  return {
    rateLimit: {
      max: options.max,
      timeWindow: options.timeWindowMs,
      allowList: () => false,
      ...(options.keyGenerator ? { keyGenerator: options.keyGenerator } : {}),
      errorResponseBuilder: (_request: FastifyRequest, context: { max: number; ttl: number }) =>
        new TooManyRequestsError(
          `Too many ${options.what ?? 'requests'}: at most ${context.max} per ${describeWindow(options.timeWindowMs)}; retry in ${Math.ceil(context.ttl / 1000)} seconds`
        )
    }
  }
}

/**
 * A second limit on a route that already has one, counted under its own key (e.g. per e-mail
 * address from the body), as a preHandler. @fastify/rate-limit runs only one of its own hooks per
 * request, so this one uses `createRateLimit` and answers the refusal itself. In Redis every keyed
 * limit counts under one namespace (they belong to no route), so each keyGenerator starts with a
 * name of its own (`password-reset:`, `guest-replays-court:`).
 */
export function keyedRateLimit(
  app: FastifyInstance,
  options: { max: number; timeWindowMs: number; keyGenerator: (request: FastifyRequest) => string; what: string }
): preHandlerAsyncHookHandler {
  const limit = app.createRateLimit({
    max: options.max,
    timeWindow: options.timeWindowMs,
    keyGenerator: options.keyGenerator,
    allowList: () => false
  })
  return async function keyedRateLimitGuard(request) {
    const result = await limit(request)
    if (!result.isAllowed && result.isExceeded) {
      throw new TooManyRequestsError(
        `Too many ${options.what}: at most ${options.max} per ${describeWindow(options.timeWindowMs)}; retry in ${result.ttlInSeconds} seconds`,
        result.ttlInSeconds
      )
    }
  }
}

export default fp(
  async function rateLimits(app: FastifyInstance) {
    const windowMs = app.config.API_KEY_RATE_LIMIT_WINDOW_SECONDS * 1000
    const store = app.redis
      ? {
          redis: app.redis,
          // Every route's count (and every keyed one) gets a key under this, so clubs sharing a Redis
          // each keep their own.
          nameSpace: `${app.config.REDIS_KEY_PREFIX}rate-limit:`,
          // A count that fails (Redis away or slow) lets the request through: the limits fail open
          // rather than refuse everyone; plugins/redis.ts logs the outage.
          skipOnError: true
        }
      : {}
    await app.register(rateLimit, {
      ...store,
      global: true,
      max: app.config.API_KEY_RATE_LIMIT_MAX,
      timeWindow: windowMs,
      // Only requests that present an API key count against the integration limit.
      allowList: (request) => request.headers['x-api-key'] === undefined,
      errorResponseBuilder: (_request, context) =>
        new TooManyRequestsError(
          `Rate limit exceeded: at most ${context.max} requests with an API key per ${describeWindow(windowMs)}; retry in ${Math.ceil(context.ttl / 1000)} seconds`
        )
    })
  },
  { name: 'rate-limit', dependencies: ['services', 'redis'] }
)
