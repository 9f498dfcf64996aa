// The replays/cleanup job: deletes replays older than REPLAY_RETENTION_DAYS from their storage and
// catalogue. The catalogue comes with the replays issue (15); until then there is nothing to count,
// and the run says so rather than report a clean zero.
import type { JobResult } from './runs.js'
import type { ScheduledJobDeps } from './deps.js'

export async function runReplaysCleanup(deps: ScheduledJobDeps, _date: Date): Promise<JobResult> {
  return {
    counts: {},
    note: `the server keeps no replay catalogue yet (the replays issue adds it): nothing was counted or deleted; replays older than ${deps.config.REPLAY_RETENTION_DAYS} days will be deleted once it exists`
  }
}
