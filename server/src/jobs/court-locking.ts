// The court-locking job: an event's places freeze COURT_LOCK_MINUTES before it starts and thaw when
// it ends (venue/locks.ts says what a lock forbids). Each event is its own transaction, and one
// already locked or released (by another run) is left as it is.
import type { JobResult } from './runs.js'
import { count, type ScheduledJobDeps } from './deps.js'

export async function runCourtLocking(deps: ScheduledJobDeps, date: Date): Promise<JobResult> {
  const { db, config } = deps
  const at = date.toISOString()
  const lockFrom = new Date(date.getTime() + config.COURT_LOCK_MINUTES * 60_000).toISOString()
  const now = deps.clock.now().toISOString()
  const counts: Record<string, number> = {}
  const due = await db
    .selectFrom('events')
    .leftJoin('event_locks', 'event_locks.event_id', 'events.id')
    .select(['events.id', 'events.end_at'])
    .where('event_locks.event_id', 'is', null)
    .where('events.start_at', '<=', lockFrom)
    .where('events.end_at', '>', at)
    .orderBy('events.start_at')
    .execute()
  for (const event of due) {
    const inserted = await db.transaction().execute((tx) =>
      tx
        .insertInto('event_locks')
        .values({ event_id: event.id, locked_at: now, locked_until: event.end_at, released_at: null })
        .onConflict((oc) => oc.column('event_id').doNothing())
        .executeTakeFirst()
    )
    count(counts, Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1 ? 'locked' : 'locked_elsewhere')
  }
  const ended = await db.selectFrom('event_locks').select('event_id').where('released_at', 'is', null).where('locked_until', '<=', at).execute()
  for (const lock of ended) {
    const released = await db.transaction().execute((tx) =>
      tx.updateTable('event_locks').set({ released_at: now }).where('event_id', '=', lock.event_id).where('released_at', 'is', null).executeTakeFirst()
    )
    count(counts, Number(released.numUpdatedRows) === 1 ? 'released' : 'released_elsewhere')
  }
  return { counts }
}
