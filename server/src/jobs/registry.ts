// Every scheduled job by name: what it runs, the setting holding its schedule, and its receiver's
// route when it has one. The receivers, the built-in scheduler and `club jobs run` all come here.
import { webhookRoutes, type JobName } from '@club/contract'
import type { jobScheduleKeys } from '../config.js'
import { runChargeJob } from './membership-charge.js'
import { runGrantJob } from './membership-grant.js'
import { runCourtLocking } from './court-locking.js'
import { runPackagesExpiry } from './packages-expiry.js'
import { runReminders } from './reminder.js'
import { runReplaysCleanup } from './replays-cleanup.js'
import type { JobResult } from './runs.js'
import { runSummary } from './summary.js'
import { runUsersCleanup } from './users-cleanup.js'
import type { ScheduledJobDeps } from './deps.js'

export interface ScheduledJob {
  run(deps: ScheduledJobDeps, date: Date): Promise<JobResult>
  schedule: (typeof jobScheduleKeys)[number]
  /** The webhook receiver that runs it (webhooks/routes.ts); the membership and packages jobs have none. */
  receiver?: (typeof webhookRoutes)[keyof typeof webhookRoutes]
}

/**
 * A run that found nothing to do says so: its headline counts start at 0 (`{"expired": 0}`, not `{}`),
 * and what it did is added to them.
 */
const counting =
  (idle: Record<string, number>, run: ScheduledJob['run']): ScheduledJob['run'] =>
  async (deps, date) => {
    const result = await run(deps, date)
    return { ...result, counts: { ...idle, ...result.counts } }
  }

/** The membership jobs keep their own run record (membership_job_runs) too; this adds their counts to the shared one. */
const membershipJob =
  (run: typeof runChargeJob | typeof runGrantJob) =>
  async (deps: ScheduledJobDeps, date: Date): Promise<JobResult> => {
    const outcome = await run(deps.db, date, { clock: deps.clock, provider: deps.provider })
    return { counts: outcome.counts, note: `membership job run ${outcome.id}` }
  }

export const scheduledJobs: Record<JobName, ScheduledJob> = {
  'court-locking': { run: counting({ locked: 0, released: 0 }, runCourtLocking), schedule: 'JOB_SCHEDULE_COURT_LOCKING', receiver: webhookRoutes.courtLocking },
  reminder: { run: counting({ renewal: 0, pause_end: 0, package_expiry: 0 }, runReminders), schedule: 'JOB_SCHEDULE_REMINDER', receiver: webhookRoutes.reminder },
  summary: { run: counting({ made: 0 }, runSummary), schedule: 'JOB_SCHEDULE_SUMMARY', receiver: webhookRoutes.summary },
  'users-cleanup': { run: counting({ users_erased: 0 }, runUsersCleanup), schedule: 'JOB_SCHEDULE_USERS_CLEANUP', receiver: webhookRoutes.usersCleanup },
  'replays-cleanup': { run: counting({ expired: 0 }, runReplaysCleanup), schedule: 'JOB_SCHEDULE_REPLAYS_CLEANUP', receiver: webhookRoutes.replaysCleanup },
  'membership-charge': { run: membershipJob(runChargeJob), schedule: 'JOB_SCHEDULE_MEMBERSHIP_CHARGE' },
  'membership-grant': { run: membershipJob(runGrantJob), schedule: 'JOB_SCHEDULE_MEMBERSHIP_GRANT' },
  'packages-expiry': { run: counting({ expired: 0 }, runPackagesExpiry), schedule: 'JOB_SCHEDULE_PACKAGES_EXPIRY' }
}

export const jobNames = Object.keys(scheduledJobs) as JobName[]
