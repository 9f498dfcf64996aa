// The transactional outbox (issue 35): every change an integrator is told of writes its event row in
// the same transaction as the change, so a rollback leaves no event and a crash after the commit loses
// none. The feed (GET /apis/v2/events) and the webhook delivery worker read the rows afterwards.
//
// Interface:
// - recordEvent(trx, { type, resourceId, data }, now): inside the change's transaction (it throws
//   outside one). `data` is the resource as its GET route answers it; the serialised JSON is stored.
// - listEvents(db, { after, types, limit }): the feed's read, oldest first, with the next cursor.
// - eventsAfterSeq(db, seq, limit): the delivery worker's read, by seq, oldest first.
// - onEventsCommitted(db, listener): called right after each commit of this process that wrote
//   events, so the worker can deliver at once instead of at its next poll. Commits of other
//   processes (the CLI, a second server) are not told here: the worker must also poll.
//
// seq only grows in commit order: it is taken from the one-row outbox_sequence, whose row lock the
// transaction holds until it commits, so two event-writing transactions never commit out of order
// (on PostgreSQL too, without relying on the server's write lock). A reader that has seen seq N has
// seen every event numbered below N. SQLite numbers an event when it is written (its write
// transactions run one at a time anyway); PostgreSQL at the commit (migration 0032), so that the
// lock is held for the commit alone and evented writes of different rows run side by side.
import { randomUUID } from 'node:crypto'
import { eventTypes, type EventType, type PlatformEvent } from '@club/contract'
import { compiledInsert, compiledOnce, runCompiled } from '../db/compiled.js'
import { onCommit, type Db, type DbOrTx } from '../db/database.js'
import { eventsNumberedAtCommit } from '../db/sql.js'
import type { OutboxEventsTable } from '../db/schema.js'
import { BadRequestError } from '../errors.js'

export interface NewEvent {
  type: EventType
  /** The resource's id as its GET route shows it. */
  resourceId: string
  /** The resource as its GET route answers it after the change. */
  data: unknown
}

export type OutboxEventRow = OutboxEventsTable

// Every write of every evented change runs these two: built and compiled once (db/compiled.ts).
const nextSeqQuery = compiledOnce((db) =>
  db
    .updateTable('outbox_sequence')
    .set((eb) => ({ last_seq: eb('last_seq', '+', 1) }))
    .where('id', '=', 1)
    .returning('last_seq')
)
const insertNumberedEvent = compiledInsert('outbox_events', ['seq', 'id', 'type', 'resource_id', 'data', 'created_at'])
/** PostgreSQL's: seq left to its default, a provisional number the commit replaces (migration 0032). */
const insertEventToNumber = compiledInsert('outbox_events', ['id', 'type', 'resource_id', 'data', 'created_at'])

/** A URL's password (`rtsp://user:pass@camera`): up to the authority's last `@`, as a URL parser reads it. */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^/?#@\s:"]*):[^/?#\s"]*@/gi

/**
 * `text` with the password of every URL in it masked (`rtsp://user:***@camera`). Events go to every
 * webhook endpoint and to the feed's readers, who are integrators, not the club's admins: a camera's
 * feed URL (a box's configuration), a box's serverUrl or anything else a resource holds reaches them
 * without its credentials. The admin GET routes still answer them as stored.
 */
export function maskUrlPasswords(text: string): string {
  return text.replace(URL_PASSWORD, '$1:***@')
}

const maskedStrings = (_key: string, value: unknown): unknown => (typeof value === 'string' ? maskUrlPasswords(value) : value)

/** Writes the event in `trx`, the transaction making the change (a service's DbOrTx, checked); answers its id. */
export async function recordEvent(trx: DbOrTx, event: NewEvent, now: Date): Promise<{ id: string }> {
  // Outside a transaction the event and its change could part (one written, the other not).
  if (!trx.isTransaction) throw new Error('recordEvent runs inside the transaction of the change it reports')
  const id = `evt_${randomUUID().replaceAll('-', '')}`
  const row = { seq: undefined, id, type: event.type, resource_id: event.resourceId, data: JSON.stringify(event.data ?? null, maskedStrings), created_at: now.toISOString() }
  if (eventsNumberedAtCommit(trx)) {
    await insertEventToNumber(trx, row)
  } else {
    const [next] = await runCompiled(trx, nextSeqQuery, [1, 1])
    await insertNumberedEvent(trx, { ...row, seq: next!.last_seq })
  }
  return { id }
}

/** The event as the feed answers it (and as a delivery's body carries type, timestamp and data). */
export function toEvent(row: Pick<OutboxEventRow, 'id' | 'type' | 'resource_id' | 'data' | 'created_at'>): PlatformEvent {
  return { id: row.id, type: row.type, timestamp: row.created_at, resource: { id: row.resource_id }, data: JSON.parse(row.data) as unknown }
}

const CURSOR = /^evs:(0|[1-9][0-9]{0,15})$/

/** The opaque cursor after the event numbered `seq`. */
export function cursorAfter(seq: number): string {
  return Buffer.from(`evs:${seq}`).toString('base64url')
}

/** The seq a cursor stands after; a cursor this server never gave is a 400 naming `after`. */
export function seqOfCursor(cursor: string): number {
  const match = /^[A-Za-z0-9_-]{1,40}$/.test(cursor) ? CURSOR.exec(Buffer.from(cursor, 'base64url').toString('latin1')) : null
  const seq = match ? Number(match[1]) : NaN
  if (!Number.isSafeInteger(seq)) throw new BadRequestError('after is not a cursor this feed gave (take it from _links.next)')
  return seq
}

/** `types` as the feed's query gives it (comma-separated); an unknown one is a 400 naming `types`. */
export function parseEventTypes(types: string | undefined): EventType[] | undefined {
  if (types === undefined) return undefined
  const known = new Set<string>(eventTypes)
  const wanted = types.split(',').map((type) => type.trim())
  const unknown = wanted.filter((type) => !known.has(type))
  if (unknown.length > 0) throw new BadRequestError(`types names an unknown event type: ${JSON.stringify(unknown[0])} (known: see GET /apis/v2/openapi.json webhooks)`)
  return [...new Set(wanted)] as EventType[]
}

export interface EventPage {
  events: PlatformEvent[]
  /** The cursor after the last event answered, or the request's own when none was. */
  next: string
  /** The seq `next` stands after. */
  nextSeq: number
}

/** The feed: events after the cursor (from the oldest kept without one), oldest first. */
export async function listEvents(db: DbOrTx, options: { after?: string; types?: EventType[]; limit: number }): Promise<EventPage> {
  const afterSeq = options.after === undefined ? 0 : seqOfCursor(options.after)
  // A cursor past the newest event would read nothing now and skip every event up to it later.
  if (afterSeq > 0) {
    const { last_seq: newest } = await db.selectFrom('outbox_sequence').select('last_seq').where('id', '=', 1).executeTakeFirstOrThrow()
    if (afterSeq > Number(newest)) throw new BadRequestError('after is not a cursor this feed gave (take it from _links.next)')
  }
  let query = db.selectFrom('outbox_events').selectAll().where('seq', '>', afterSeq)
  if (options.types !== undefined) query = query.where('type', 'in', options.types)
  const rows = await query.orderBy('seq').limit(options.limit).execute()
  const nextSeq = rows.at(-1)?.seq ?? afterSeq
  return { events: rows.map(toEvent), next: cursorAfter(nextSeq), nextSeq }
}

/** The delivery worker's read: rows after `seq`, oldest first. */
export async function eventsAfterSeq(db: DbOrTx, seq: number, limit: number): Promise<OutboxEventRow[]> {
  return db.selectFrom('outbox_events').selectAll().where('seq', '>', seq).orderBy('seq').limit(limit).execute()
}

/** Calls `listener` after each commit of this process that wrote events; answers the unsubscribe. */
export function onEventsCommitted(db: Db, listener: () => void): () => void {
  return onCommit(db, (tables) => {
    if (tables.has('outbox_events')) listener()
  })
}
