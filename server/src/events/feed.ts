// The event feed as GET /apis/v2/events answers it: a page of the outbox from a cursor, with the
// links to read on from. The query's types are checked here (the contract takes them as one string).
import type { EventFeedPage, EventFeedQuery } from '@club/contract'
import type { DbOrTx } from '../db/database.js'
import { DEFAULT_IPP } from '../paging.js'
import { listEvents, parseEventTypes } from './outbox.js'

const PATH = '/apis/v2/events'

export async function eventFeed(db: DbOrTx, query: EventFeedQuery): Promise<EventFeedPage> {
  const ipp = query.ipp ?? DEFAULT_IPP
  const types = parseEventTypes(query.types)
  const page = await listEvents(db, { after: query.after, types, limit: ipp })
  const href = (after: string | undefined) => {
    const params = new URLSearchParams()
    if (after !== undefined) params.set('after', after)
    if (query.types !== undefined) params.set('types', query.types)
    params.set('ipp', String(ipp))
    return { href: `${PATH}?${params.toString()}` }
  }
  // next always: the cursor to keep, whether or not more events are waiting now.
  return { items: page.events, _total: page.events.length, _links: { self: href(query.after), next: href(page.next) } }
}
