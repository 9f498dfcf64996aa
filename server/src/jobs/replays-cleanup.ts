// The replays/cleanup job: replays older than REPLAY_RETENTION_DAYS lose their clip from the bucket
// they were stored in (file://, s3:// or gs://) and become EXPIRED in the catalogue, one at a time, so
// a run that stops half way leaves every replay either whole or expired. A clip the store could not
// delete is left for the next run. The footage access log's rows older than FOOTAGE_LOG_RETENTION_DAYS
// go too, in batches.
import { sql } from 'kysely'
import { DAY_MS } from '../instants.js'
import { deleteExpiredReplays } from '../replays/clips.js'
import { ReplayStorage } from '../replays/storage.js'
import { count, purge, type ScheduledJobDeps } from './deps.js'
import type { JobResult } from './runs.js'

export async function runReplaysCleanup(deps: ScheduledJobDeps, date: Date): Promise<JobResult> {
  // Deleting needs only the bucket's credentials; no download link is signed here.
  const storage = new ReplayStorage({ credentialsPath: deps.config.REPLAY_STORAGE_CREDENTIALS, linkKey: '', publicBaseUrl: deps.config.PUBLIC_BASE_URL })
  const counts: Record<string, number> = {}
  count(counts, 'expired', await deleteExpiredReplays(deps.db, storage, date, deps.config.REPLAY_RETENTION_DAYS, deps.config.MATCH_RETENTION_DAYS))
  const logKeptSince = new Date(date.getTime() - deps.config.FOOTAGE_LOG_RETENTION_DAYS * DAY_MS).toISOString()
  count(counts, 'footage_access_deleted', await purge(deps.db, 'footage_access', sql`created_at < ${logKeptSince}`))
  return { counts }
}
