// What admins read of the scheduled jobs: every run, and the daily summaries.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { jobRunRoutes, summaryRoutes } from '@club/contract'
import { listJobRuns } from './runs.js'
import { listSummaries } from './summary.js'

const jobs: FastifyPluginAsyncTypebox = async (app) => {
  const admins = app.auth.bearer({ roles: ['admin'] })
  app.route({ ...jobRunRoutes.list, onRequest: admins, handler: (request) => listJobRuns(app.db, request.query) })
  app.route({ ...summaryRoutes.list, onRequest: admins, handler: (request) => listSummaries(app.db, request.query, app.config.CURRENCY) })
}

export default jobs
