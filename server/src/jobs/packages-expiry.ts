// The packages' expiry job: a package past its expiration date is EXPIRED whatever its row says
// (the API derives it from expiration_date, lists and filters included), and this writes it to the
// status column too, so that the stored value agrees with what readers see, for reports and SQL
// run over the table. Batches of BATCH_SIZE rows per transaction, on the packages issue's table
// (migration 0013).
import { sql } from 'kysely'
import { rowidOf } from '../db/database.js'
import type { JobResult } from './runs.js'
import { BATCH_SIZE, count, type ScheduledJobDeps } from './deps.js'

export async function runPackagesExpiry(deps: ScheduledJobDeps, date: Date): Promise<JobResult> {
  const { db } = deps
  const at = date.toISOString()
  const now = deps.clock.now().toISOString()
  const counts: Record<string, number> = {}
  for (;;) {
    const result = await db.transaction().execute((tx) =>
      sql`update packages set status = 'EXPIRED', updated_at = ${now}
          where ${rowidOf(tx)} in (select ${rowidOf(tx)} from packages where status in ('ACTIVE', 'EXHAUSTED') and expiration_date <= ${at} limit ${BATCH_SIZE})`.execute(tx)
    )
    const updated = Number(result.numAffectedRows ?? 0n)
    count(counts, 'expired', updated)
    if (updated < BATCH_SIZE) return { counts }
  }
}
