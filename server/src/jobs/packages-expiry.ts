// The packages' expiry job: a package past its expiration date is EXPIRED whatever its row says
// (the API derives it from expiration_date, lists and filters included), and this writes it to the
// status column too, so that the stored value agrees with what readers see, for reports and SQL
// run over the table. Batches of BATCH_SIZE rows per transaction, on the packages issue's table
// (migration 0013).
import { recordPackageEvent } from '../packages/answers.js'
import type { JobResult } from './runs.js'
import { BATCH_SIZE, count, type ScheduledJobDeps } from './deps.js'

export async function runPackagesExpiry(deps: ScheduledJobDeps, date: Date): Promise<JobResult> {
  const { db } = deps
  const at = date.toISOString()
  const now = deps.clock.now()
  const counts: Record<string, number> = {}
  for (;;) {
    // Each package expired is told to integrators (package.expired) in the batch's transaction.
    const updated = await db.transaction().execute(async (tx) => {
      const due = await tx.selectFrom('packages').select('id').where('status', 'in', ['ACTIVE', 'EXHAUSTED']).where('expiration_date', '<=', at).limit(BATCH_SIZE).execute()
      if (due.length === 0) return 0
      const ids = due.map((row) => row.id)
      await tx.updateTable('packages').set({ status: 'EXPIRED', updated_at: now.toISOString() }).where('id', 'in', ids).execute()
      for (const id of ids) await recordPackageEvent(tx, id, 'package.expired', now)
      return ids.length
    })
    count(counts, 'expired', updated)
    if (updated < BATCH_SIZE) return { counts }
  }
}
