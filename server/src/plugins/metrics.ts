// Counts every answer (one onResponse hook) and every database statement into the app's Metrics.
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { sql } from 'kysely'
import { replayServerDeviceRoutes } from '@club/contract'
import { observeQueries } from '../db/database.js'
import { readCacheStats } from '../db/read-cache.js'
import { Metrics } from '../health/metrics.js'
import { onlineSince } from '../replay-servers/service.js'

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics
  }
}

const STATUS_POLL_ROUTE = replayServerDeviceRoutes.status.url

export default fp(
  async function metrics(app: FastifyInstance) {
    const db = app.db
    const metrics = new Metrics({
      readCaches: () => readCacheStats(db),
      boxes: async () => {
        const since = onlineSince(app.clock.now(), app.config.REPLAY_POLL_INTERVAL_SECONDS)
        const { rows } = await sql<{ status: string; online: number | null; count: number }>`
          select status, case when last_seen_at >= ${since} then 1 else 0 end as online, count(*) as count from replay_servers group by 1, 2`.execute(db)
        const merged = new Map<string, { status: string; online: boolean; count: number }>()
        for (const row of rows) {
          const online = row.online === 1
          const key = `${row.status} ${online}`
          const entry = merged.get(key) ?? { status: row.status, online, count: 0 }
          entry.count += Number(row.count)
          merged.set(key, entry)
        }
        return [...merged.values()]
      }
    })
    app.decorate('metrics', metrics)
    observeQueries(db, (ms, text) => metrics.observeQuery(ms, text))
    app.addHook('onClose', async () => observeQueries(db, undefined))

    // The route's pattern, never the raw URL: ids in paths would make a series per id.
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched'
      metrics.observeRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000)
      if (route === STATUS_POLL_ROUTE) metrics.statusPolls.inc({ answer: String(reply.statusCode) })
      done()
    })
  },
  { name: 'metrics', dependencies: ['services'] }
)
