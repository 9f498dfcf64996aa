// Events (a dated occurrence in some areas, pods and courts, perhaps part of a series) and series
// (a named run of events). Templates are made from both.
import { randomUUID } from 'node:crypto'
import type { Event, EventCreate, EventPatch, Series, SeriesCreate, SeriesPatch } from '@club/contract'
import type { Clock } from '../clock.js'
import type { DbOrTx } from '../db/database.js'
import type { EventsTable, SeriesTable } from '../db/schema.js'
import { requestInstant } from '../instants.js'
import { BadRequestError, NotFoundError, quote } from '../errors.js'
import { paged } from '../paging.js'
import { assertUnlocked } from './locks.js'
import { checkPlaces, groupPlaces, placeKinds, refCollection, type Places } from './places.js'
import { pageOfTable } from './service.js'

export const eventPlaces = ['areas', 'pods', 'courts'] as const
export type EventPlaces = Places<(typeof eventPlaces)[number]>

const eventPath = (id?: string) => `/apis/v2/admin/events${id === undefined ? '' : `/${id}`}`
const seriesPath = (id?: string) => `/apis/v2/admin/series${id === undefined ? '' : `/${id}`}`

/** The fields events and series share. */
const described = (row: EventsTable | SeriesTable) => ({ id: row.id, name: row.name, description: row.description, type: row.type, subtype: row.subtype })

export function toEvent(row: EventsTable, places: EventPlaces): Event {
  const self = eventPath(row.id)
  return {
    ...described(row),
    tags: JSON.parse(row.tags) as string[],
    startDate: row.start_at,
    endDate: row.end_at,
    recordMatch: row.record_match === 1,
    areas: refCollection(places.areas, self),
    pods: refCollection(places.pods, self),
    courts: refCollection(places.courts, self),
    series: row.series_id ? { id: row.series_id } : null,
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: self } }
  }
}

export function toSeries(row: SeriesTable, eventIds: string[]): Series {
  const self = seriesPath(row.id)
  return {
    ...described(row),
    events: refCollection(eventIds, self),
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: self } }
  }
}

/** The places of each event, in the order they were given. */
export async function eventPlacesOf(db: DbOrTx, eventIds: string[]): Promise<Map<string, EventPlaces>> {
  const rows =
    eventIds.length === 0
      ? []
      : await db.selectFrom('event_refs').selectAll().where('event_id', 'in', eventIds).orderBy('event_id').orderBy('position').execute()
  return new Map(eventIds.map((id) => [id, groupPlaces([...eventPlaces], rows.filter((r) => r.event_id === id))]))
}

async function findEvent(db: DbOrTx, id: string): Promise<EventsTable> {
  const row = await db.selectFrom('events').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw new NotFoundError(`event ${quote(id)} not found`)
  return row
}

export async function getEvent(db: DbOrTx, id: string): Promise<Event> {
  const row = await findEvent(db, id)
  return toEvent(row, (await eventPlacesOf(db, [id])).get(id)!)
}

async function checkSeries(db: DbOrTx, ref: { id: string } | null | undefined): Promise<string | null> {
  if (!ref) return null
  const row = await db.selectFrom('series').select('id').where('id', '=', ref.id).executeTakeFirst()
  if (!row) throw new BadRequestError(`body.series.id: no series with id ${quote(ref.id, { alwaysQuoted: true })}`)
  return row.id
}

/** A date-time as stored (UTC ISO). The format check admits leap seconds, which Date cannot hold. */
function instant(value: string, field: string): string {
  return requestInstant(value, `body.${field}`).toISOString()
}

function checkDates(start: string, end: string): void {
  if (Date.parse(end) <= Date.parse(start)) throw new BadRequestError('body.endDate must be after body.startDate')
}

async function writeEventPlaces(tx: DbOrTx, eventId: string, places: Partial<EventPlaces>): Promise<void> {
  for (const collection of eventPlaces) {
    const ids = places[collection]
    if (!ids) continue
    const kind = placeKinds[collection].kind
    await tx.deleteFrom('event_refs').where('event_id', '=', eventId).where('kind', '=', kind).execute()
    if (ids.length > 0) {
      await tx.insertInto('event_refs').values(ids.map((ref_id, position) => ({ event_id: eventId, kind, ref_id, position }))).execute()
    }
  }
}

export async function createEvent(db: DbOrTx, input: EventCreate, clock: Clock): Promise<Event> {
  const startAt = instant(input.startDate, 'startDate')
  const endAt = instant(input.endDate, 'endDate')
  checkDates(startAt, endAt)
  return db.transaction().execute(async (tx) => {
    const places = await checkPlaces(tx, { areas: input.areas, pods: input.pods, courts: input.courts })
    const now = clock.now().toISOString()
    const row: EventsTable = {
      id: randomUUID(),
      name: input.name,
      description: input.description ?? null,
      type: input.type,
      subtype: input.subtype ?? null,
      tags: JSON.stringify([...new Set(input.tags ?? [])]),
      start_at: startAt,
      end_at: endAt,
      series_id: await checkSeries(tx, input.series),
      created_at: now,
      updated_at: now,
      record_match: input.recordMatch === true ? 1 : 0
    }
    await tx.insertInto('events').values(row).execute()
    await writeEventPlaces(tx, row.id, places)
    return getEvent(tx, row.id)
  })
}

export async function patchEvent(db: DbOrTx, id: string, patch: EventPatch, clock: Clock): Promise<Event> {
  return db.transaction().execute(async (tx) => {
    const row = await findEvent(tx, id)
    await assertUnlocked(tx, 'event', id, clock.now())
    const places = await checkPlaces(tx, { areas: patch.areas, pods: patch.pods, courts: patch.courts })
    const start = patch.startDate ? instant(patch.startDate, 'startDate') : row.start_at
    const end = patch.endDate ? instant(patch.endDate, 'endDate') : row.end_at
    checkDates(start, end)
    const changes: Partial<EventsTable> = { ...describedChanges(patch), start_at: start, end_at: end, updated_at: clock.now().toISOString() }
    if (patch.tags !== undefined) changes.tags = JSON.stringify([...new Set(patch.tags)])
    if (patch.series !== undefined) changes.series_id = await checkSeries(tx, patch.series)
    if (patch.recordMatch !== undefined) changes.record_match = patch.recordMatch ? 1 : 0
    await tx.updateTable('events').set(changes).where('id', '=', id).execute()
    await writeEventPlaces(tx, id, places)
    return getEvent(tx, id)
  })
}

/** The fields events and series share, as a PATCH sets them: only those given. */
function describedChanges(patch: SeriesPatch): Partial<SeriesTable> {
  const changes: Partial<SeriesTable> = {}
  if (patch.name !== undefined) changes.name = patch.name
  if (patch.description !== undefined) changes.description = patch.description
  if (patch.type !== undefined) changes.type = patch.type
  if (patch.subtype !== undefined) changes.subtype = patch.subtype
  return changes
}

export async function listEvents(db: DbOrTx, query: { page?: number; ipp?: number }) {
  const { rows, total, page } = await pageOfTable<EventsTable>(db, 'events', 'start_at', query)
  const places = await eventPlacesOf(db, rows.map((r) => r.id))
  return paged(rows.map((r) => toEvent(r, places.get(r.id)!)), total, page, eventPath(), query)
}

export async function deleteEvent(db: DbOrTx, id: string, clock: Clock): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await findEvent(tx, id)
    await assertUnlocked(tx, 'event', id, clock.now())
    await tx.deleteFrom('events').where('id', '=', id).execute()
  })
}

async function findSeries(db: DbOrTx, id: string): Promise<SeriesTable> {
  const row = await db.selectFrom('series').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw new NotFoundError(`series ${quote(id)} not found`)
  return row
}

/** A series' events, earliest first. */
export async function seriesEvents(db: DbOrTx, seriesId: string): Promise<EventsTable[]> {
  return db.selectFrom('events').selectAll().where('series_id', '=', seriesId).orderBy('start_at').orderBy('id').execute()
}

export async function getSeries(db: DbOrTx, id: string): Promise<Series> {
  const row = await findSeries(db, id)
  return toSeries(row, (await seriesEvents(db, id)).map((e) => e.id))
}

/** A series with its events and their places, for making a template of it. */
export async function seriesWithEvents(db: DbOrTx, id: string) {
  const series = await findSeries(db, id)
  const events = await seriesEvents(db, id)
  return { series, events, places: await eventPlacesOf(db, events.map((e) => e.id)) }
}

/** An event with its places, for making a template of it. */
export async function eventWithPlaces(db: DbOrTx, id: string) {
  const event = await findEvent(db, id)
  return { event, places: (await eventPlacesOf(db, [id])).get(id)! }
}

export async function createSeries(db: DbOrTx, input: SeriesCreate, clock: Clock): Promise<Series> {
  const now = clock.now().toISOString()
  const row: SeriesTable = {
    id: randomUUID(),
    name: input.name,
    description: input.description ?? null,
    type: input.type,
    subtype: input.subtype ?? null,
    created_at: now,
    updated_at: now
  }
  await db.insertInto('series').values(row).execute()
  return toSeries(row, [])
}

export async function patchSeries(db: DbOrTx, id: string, patch: SeriesPatch, clock: Clock): Promise<Series> {
  return db.transaction().execute(async (tx) => {
    await findSeries(tx, id)
    const changes: Partial<SeriesTable> = { ...describedChanges(patch), updated_at: clock.now().toISOString() }
    await tx.updateTable('series').set(changes).where('id', '=', id).execute()
    return getSeries(tx, id)
  })
}

export async function listSeries(db: DbOrTx, query: { page?: number; ipp?: number }) {
  const { rows, total, page } = await pageOfTable<SeriesTable>(db, 'series', 'created_at', query)
  const events =
    rows.length === 0
      ? []
      : await db.selectFrom('events').select(['id', 'series_id']).where('series_id', 'in', rows.map((r) => r.id)).orderBy('start_at').orderBy('id').execute()
  const items = rows.map((r) => toSeries(r, events.filter((e) => e.series_id === r.id).map((e) => e.id)))
  return paged(items, total, page, seriesPath(), query)
}

/** Its events stay, outside any series (the foreign key sets their series to null). */
export async function deleteSeries(db: DbOrTx, id: string): Promise<void> {
  await findSeries(db, id)
  await db.deleteFrom('series').where('id', '=', id).execute()
}
