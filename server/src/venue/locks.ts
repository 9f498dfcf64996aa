// Court locking (issue 14): from COURT_LOCK_MINUTES before an event starts until it ends, the
// court-locking job holds a lock on it (event_locks). While it holds, the event and the places it
// names cannot be changed or deleted, nor a pod or court inside an area or pod it names. A lock
// holds until its locked_until, whether or not the job has released it yet: readers pass their now.
import type { DbOrTx } from '../db/database.js'
import { ConflictError } from '../errors.js'

type LockableKind = 'region' | 'area' | 'pod' | 'court' | 'event'

interface PlaceLock {
  eventId: string
  lockedUntil: string
}

/** The (kind, id) pairs an event would have to name to hold this place: itself and what contains it. */
async function holders(db: DbOrTx, kind: 'area' | 'pod' | 'court', id: string): Promise<Array<[string, string]>> {
  if (kind === 'area') return [['area', id]]
  if (kind === 'pod') {
    const pod = await db.selectFrom('pods').select('area_id').where('id', '=', id).executeTakeFirst()
    return pod ? [['pod', id], ['area', pod.area_id]] : [['pod', id]]
  }
  const court = await db.selectFrom('courts').select(['area_id', 'pod_id']).where('id', '=', id).executeTakeFirst()
  const pairs: Array<[string, string]> = [['court', id]]
  if (court?.pod_id) pairs.push(['pod', court.pod_id])
  if (court) pairs.push(['area', court.area_id])
  return pairs
}

/** The lock held on a place or event at `now`, the one lasting longest when several events hold it. */
export async function lockOn(db: DbOrTx, kind: LockableKind, id: string, now: Date): Promise<PlaceLock | undefined> {
  if (kind === 'region') return undefined
  const at = now.toISOString()
  if (kind === 'event') {
    const lock = await db
      .selectFrom('event_locks')
      .select(['event_id', 'locked_until'])
      .where('event_id', '=', id)
      .where('released_at', 'is', null)
      .where('locked_until', '>', at)
      .executeTakeFirst()
    return lock && { eventId: lock.event_id, lockedUntil: lock.locked_until }
  }
  const pairs = await holders(db, kind, id)
  const lock = await db
    .selectFrom('event_locks')
    .innerJoin('event_refs', 'event_refs.event_id', 'event_locks.event_id')
    .select(['event_locks.event_id', 'event_locks.locked_until'])
    .where('event_locks.released_at', 'is', null)
    .where('event_locks.locked_until', '>', at)
    .where((eb) => eb.or(pairs.map(([k, ref]) => eb.and([eb('event_refs.kind', '=', k as 'area'), eb('event_refs.ref_id', '=', ref)]))))
    .orderBy('event_locks.locked_until', 'desc')
    .executeTakeFirst()
  return lock && { eventId: lock.event_id, lockedUntil: lock.locked_until }
}

/** A 409 naming the lock when an event holds this place (or is itself locked). */
export async function assertUnlocked(db: DbOrTx, kind: LockableKind, id: string, now: Date): Promise<void> {
  const lock = await lockOn(db, kind, id, now)
  if (!lock) return
  const what = kind === 'event' ? `event ${id} is locked` : `${kind} ${id} is locked by event ${lock.eventId}`
  throw new ConflictError(`${what} until ${lock.lockedUntil} (it starts within COURT_LOCK_MINUTES or is under way); change it after the event ends`)
}
