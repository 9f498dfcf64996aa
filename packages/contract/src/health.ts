// What an operator's tools call: liveness and readiness probes, and the Prometheus metrics.
import Type, { type Static } from 'typebox'
import { ErrorBody, defineRoutes, noSecurity } from './common.js'

export const Liveness = Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false })
export type Liveness = Static<typeof Liveness>

/** Each part checked, by name: "ok", "not configured", or what failed. */
export const ReadinessChecks = Type.Record(Type.String(), Type.String(), {
  description: 'Each dependency checked (database, migrations, smtp, redis) and its state: ok, not configured, or what failed'
})
export const Readiness = Type.Object({ status: Type.Literal('ready'), checks: ReadinessChecks }, { additionalProperties: false })
export type Readiness = Static<typeof Readiness>

export const healthRoutes = defineRoutes({
  live: {
    method: 'GET',
    url: '/health/live',
    schema: {
      operationId: 'getLiveness',
      summary: 'The process answers',
      description: 'For a service manager or a liveness probe: 200 whenever the process can answer at all. No credential; not rate limited.',
      tags: ['operations'],
      security: noSecurity,
      response: { 200: Liveness }
    }
  },
  ready: {
    method: 'GET',
    url: '/health/ready',
    schema: {
      operationId: 'getReadiness',
      summary: 'The server can serve requests',
      description:
        'For a load balancer: 200 when the database answers a query in time, its migrations are current and, when configured, ' +
        "the mail relay (SMTP_URL) accepts a connection; 503 naming each failing part otherwise. Redis (REDIS_URL) is reported " +
        'but never makes it 503: without Redis the rate limits let requests through. No credential; nothing secret shown.',
      tags: ['operations'],
      security: noSecurity,
      response: { 200: Readiness, 503: ErrorBody }
    }
  },
  metrics: {
    method: 'GET',
    url: '/metrics',
    schema: {
      operationId: 'getMetrics',
      summary: 'Metrics in the Prometheus text format',
      description:
        'Request counts and latencies by route and status, database query time, read-cache hits and misses, status polls, ' +
        'recording boxes by status and online, job runs, phone and mail sends, and the process (event-loop lag, memory). ' +
        'Needs METRICS_TOKEN as a Bearer token when the server has one set; open otherwise.',
      tags: ['operations'],
      security: [{ metricsToken: [] }, {}],
      produces: ['text/plain'],
      response: {
        200: Type.String({ description: 'Prometheus exposition format, version 0.0.4' }),
        401: ErrorBody
      }
    }
  }
})
