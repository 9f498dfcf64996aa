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

/** The membership jobs keep their own run record (membership_job_runs) too; this adds their counts to the shared one. */
const membershipJob =
  (run: typeof runChargeJob | typeof runGrantJob) =>
  async (deps: ScheduledJobDeps, date: Date): Promise<JobResult> => {
    const outcome = await run(deps.db, date, { clock: deps.clock, provider: deps.provider })
    return { counts: outcome.counts, note: `membership job run ${outcome.id}` }
  }

export const scheduledJobs: Record<JobName, ScheduledJob> = {
  'court-locking': { run: runCourtLocking, schedule: 'JOB_SCHEDULE_COURT_LOCKING', receiver: webhookRoutes.courtLocking },
  reminder: { run: runReminders, schedule: 'JOB_SCHEDULE_REMINDER', receiver: webhookRoutes.reminder },
  summary: { run: runSummary, schedule: 'JOB_SCHEDULE_SUMMARY', receiver: webhookRoutes.summary },
  'users-cleanup': { run: runUsersCleanup, schedule: 'JOB_SCHEDULE_USERS_CLEANUP', receiver: webhookRoutes.usersCleanup },
  'replays-cleanup': { run: runReplaysCleanup, schedule: 'JOB_SCHEDULE_REPLAYS_CLEANUP', receiver: webhookRoutes.replaysCleanup },
  'membership-charge': { run: membershipJob(runChargeJob), schedule: 'JOB_SCHEDULE_MEMBERSHIP_CHARGE' },
  'membership-grant': { run: membershipJob(runGrantJob), schedule: 'JOB_SCHEDULE_MEMBERSHIP_GRANT' },
  'packages-expiry': { run: runPackagesExpiry, schedule: 'JOB_SCHEDULE_PACKAGES_EXPIRY' }
}

export const jobNames = Object.keys(scheduledJobs) as JobName[]
