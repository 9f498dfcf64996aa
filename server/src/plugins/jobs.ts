// The scheduled jobs' runner and the built-in scheduler, shared by the receivers, the admin routes
// and main.ts (which starts the scheduler when SCHEDULER=internal). Closing the app stops the
// scheduler's tasks and waits for its runs.
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { countedMailer } from '../health/metrics.js'
import { JobRunner } from '../jobs/runner.js'
import { JobScheduler } from '../jobs/scheduler.js'
import { createMailer, type Mailer } from '../password-reset/mailer.js'

declare module 'fastify' {
  interface FastifyInstance {
    jobs: JobRunner
    scheduler: JobScheduler
  }
}

export default fp(
  async function jobs(app: FastifyInstance) {
    let mailer: Mailer | undefined
    const runner = new JobRunner(
      {
        db: app.db,
        clock: app.clock,
        config: app.config,
        provider: app.paymentProvider,
        mailer: () => (mailer ??= countedMailer(createMailer(app.config, app.log), app.metrics)),
        log: app.log
      },
      app.metrics
    )
    const scheduler = new JobScheduler(runner, app.config, app.clock)
    app.decorate('jobs', runner)
    app.decorate('scheduler', scheduler)
    app.addHook('onClose', async () => {
      await scheduler.stop()
      await mailer?.close()
    })
  },
  { name: 'jobs', dependencies: ['services', 'metrics'] }
)
