// What the event tests read: every event in the outbox so far (or after a mark), oldest first.
import type { EventType, PlatformEvent } from '@club/contract'
import type { Db } from '../db/database.js'
import { listEvents } from './outbox.js'

export interface EventReader {
  /** Events since the last call (all of them on the first), optionally of these types only. */
  next(types?: EventType[]): Promise<PlatformEvent[]>
}

export function eventReader(db: Db): EventReader {
  let after: string | undefined
  return {
    async next(types) {
      const events: PlatformEvent[] = []
      for (;;) {
        const page = await listEvents(db, { after, limit: 100 })
        events.push(...page.events)
        after = page.next
        if (page.events.length < 100) break
      }
      return types ? events.filter((e) => types.includes(e.type)) : events
    }
  }
}
