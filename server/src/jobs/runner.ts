// Runs a scheduled job by name through the run table (runs.ts), counting it in the metrics and
// logging its outcome; a webhook, the scheduler and `club jobs run` differ only in trigger and key.
import type { JobName, JobTrigger } from '@club/contract'
import type { Metrics } from '../health/metrics.js'
import type { ScheduledJobDeps } from './deps.js'
import { scheduledJobs } from './registry.js'
import { JobFailedError, runRecorded, type RunOutcome } from './runs.js'

export interface JobRunRequest {
  trigger: JobTrigger
  key?: string
  delivery?: string
  /** As of when the job runs; now by default. */
  date?: Date
}

export class JobRunner {
  constructor(
    readonly deps: ScheduledJobDeps,
    private readonly metrics?: Metrics
  ) {}

  async run(job: JobName, request: JobRunRequest): Promise<RunOutcome> {
    const { db, clock, log } = this.deps
    const date = request.date ?? clock.now()
    try {
      const outcome = await runRecorded(db, clock, { job, ...request, date }, () => scheduledJobs[job].run(this.deps, date))
      this.metrics?.jobRuns.inc({ job, outcome: outcome.kind === 'ran' ? 'succeeded' : outcome.kind })
      if (outcome.kind === 'ran') log?.info({ job, trigger: request.trigger, delivery: request.delivery, counts: outcome.run.counts }, 'job run finished')
      return outcome
    } catch (err) {
      this.metrics?.jobRuns.inc({ job, outcome: 'failed' })
      log?.error({ err, job, trigger: request.trigger, delivery: request.delivery, runId: err instanceof JobFailedError ? err.runId : undefined }, 'job run failed')
      throw err
    }
  }
}
