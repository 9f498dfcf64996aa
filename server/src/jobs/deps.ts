// What every scheduled job is given: plain dependencies, so a test passes a ManualClock and real
// everything else.
import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import { sql, type RawBuilder } from 'kysely'
import { rowidOf, type Db } from '../db/database.js'
import type { Mailer } from '../password-reset/mailer.js'
import type { PaymentProvider } from '../payments/provider.js'

export interface ScheduledJobDeps {
  db: Db
  clock: Clock
  config: Config
  provider: PaymentProvider
  /** Made on first use: a job that mails nothing opens no connection to the relay. */
  mailer: () => Mailer
  log?: FastifyBaseLogger
}

/** Rows a purge or an update touches per transaction, so a large table is never locked for long. */
export const BATCH_SIZE = 500

/** Adds `n` to counts[outcome], leaving zero counts out so a run's record shows only what happened. */
export function count(counts: Record<string, number>, outcome: string, n = 1): void {
  if (n > 0) counts[outcome] = (counts[outcome] ?? 0) + n
}

/** Deletes the rows of `table` matching `condition`, BATCH_SIZE at a time; answers how many. */
export async function purge(db: Db, table: string, condition: RawBuilder<unknown>): Promise<number> {
  let total = 0
  for (;;) {
    const result = await db
      .transaction()
      .execute((tx) =>
        sql`delete from ${sql.table(table)} where ${rowidOf(tx)} in (select ${rowidOf(tx)} from ${sql.table(table)} where ${condition} limit ${BATCH_SIZE})`.execute(tx)
      )
    const deleted = Number(result.numAffectedRows ?? 0n)
    total += deleted
    if (deleted < BATCH_SIZE) return total
  }
}
