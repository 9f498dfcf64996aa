// What a redemption pays for, resolved from the request: the event, booking, guest, series or
// replay it names, checked for the item type, with what the constraints need (subtype, type, tags,
// kid, session periods, area slugs, pods), a canonical key (the same target twice is one
// redemption), when it starts (for the late-cancel window) and a line describing it.
import type { PackageItemType, RedemptionTarget } from '@club/contract'
import type { DbOrTx } from '../db/database.js'
import { BadRequestError, quote } from '../errors.js'
import { requestInstant } from '../instants.js'
import { parseStoredSessionPeriods } from './session-periods.js'
import { sessionPeriodTypesOf, type ConstraintSubject } from './constraints.js'
import type { SessionPeriodType } from './template-data.js'

/** The key of a REPLAY redemption opening a match, as resolveTarget makes it. */
const matchOpeningKey = (userId: string, matchId: string) => ['REPLAY', `user:${userId}`, `match:${matchId}`].join('|')

/**
 * Which of these matches `userId` has paid to open under MATCH_REQUIRES_PACKAGE: a live REPLAY
 * redemption of the match (in any package, an expired one too: spent is spent).
 */
export async function paidMatches(db: DbOrTx, userId: string, matchIds: readonly string[]): Promise<Set<string>> {
  if (matchIds.length === 0) return new Set()
  const keys = new Map(matchIds.map((id) => [matchOpeningKey(userId, id), id]))
  const rows = await db
    .selectFrom('package_redemptions')
    .select('target_key')
    .where('user_id', '=', userId)
    .where('type', '=', 'REPLAY')
    .where('cancelation_date', 'is', null)
    .where('target_key', 'in', [...keys.keys()])
    .execute()
  return new Set(rows.map((row) => keys.get(row.target_key)!))
}

export interface ResolvedTarget {
  subject: ConstraintSubject
  /** Canonical: equal for the same thing paid for by the same user. */
  key: string
  startAt: string | null
  description: string
  /** As stored with the redemption. */
  stored: Record<string, unknown>
}

const MAX_BOOKING_MS = 24 * 3600 * 1000

/** Which parts of the target each item type takes (a guest comes with an event or a booking). */
const NEEDS: Record<PackageItemType, { required: Array<keyof RedemptionTarget>; oneOf?: Array<keyof RedemptionTarget> }> = {
  EVENT_SIGNUP: { required: ['event'] },
  BOOKING: { required: ['booking'] },
  GUEST_SIGNUP: { required: ['guest'], oneOf: ['event', 'booking'] },
  SERIES_SIGNUP: { required: ['series'] },
  // A replay asked for, or a match opened under MATCH_REQUIRES_PACKAGE (issue 49).
  REPLAY: { required: [], oneOf: ['replay', 'match'] }
}

function checkShape(type: PackageItemType, target: RedemptionTarget): void {
  const need = NEEDS[type]
  const given = (Object.keys(target) as Array<keyof RedemptionTarget>).filter((k) => target[k] !== undefined)
  for (const part of need.required) if (target[part] === undefined) throw new BadRequestError(`body.target.${part} is required for a ${type} redemption`)
  if (need.oneOf && need.oneOf.filter((part) => target[part] !== undefined).length !== 1) {
    throw new BadRequestError(`body.target needs exactly one of ${need.oneOf.join(' or ')} for a ${type} redemption`)
  }
  const allowed = new Set([...need.required, ...(need.oneOf ?? [])])
  const extra = given.find((part) => !allowed.has(part))
  if (extra) throw new BadRequestError(`body.target.${extra} does not apply to a ${type} redemption`)
}

interface Place {
  areaIds: string[]
  podIds: string[]
}

async function areasOf(db: DbOrTx, areaIds: string[]) {
  const unique = [...new Set(areaIds)]
  return unique.length === 0 ? [] : db.selectFrom('areas').select(['id', 'slug', 'session_periods', 'timezone']).where('id', 'in', unique).execute()
}

/** The periods the span overlaps in any of the areas (each in its own zone, else the club's). */
async function periodsAt(db: DbOrTx, place: Place, start: Date, end: Date, clubTimezone: string) {
  const areas = await areasOf(db, place.areaIds)
  const types = new Set<SessionPeriodType>()
  for (const area of areas) {
    for (const type of sessionPeriodTypesOf(start, end, parseStoredSessionPeriods(area.session_periods), area.timezone ?? clubTimezone)) types.add(type)
  }
  return { slugs: areas.map((a) => a.slug), types: areas.length === 0 ? null : [...types] }
}

async function eventTarget(db: DbOrTx, id: string) {
  const event = await db.selectFrom('events').selectAll().where('id', '=', id).executeTakeFirst()
  if (!event) throw new BadRequestError(`body.target.event.id: no event ${quote(id)}`)
  const refs = await db.selectFrom('event_refs').select(['kind', 'ref_id']).where('event_id', '=', id).execute()
  const place: Place = { areaIds: refs.filter((r) => r.kind === 'area').map((r) => r.ref_id), podIds: refs.filter((r) => r.kind === 'pod').map((r) => r.ref_id) }
  const courtIds = refs.filter((r) => r.kind === 'court').map((r) => r.ref_id)
  if (courtIds.length > 0) {
    for (const court of await db.selectFrom('courts').select(['area_id', 'pod_id']).where('id', 'in', courtIds).execute()) {
      place.areaIds.push(court.area_id)
      if (court.pod_id) place.podIds.push(court.pod_id)
    }
  }
  if (place.podIds.length > 0) {
    for (const pod of await db.selectFrom('pods').select('area_id').where('id', 'in', place.podIds).execute()) place.areaIds.push(pod.area_id)
  }
  return { event, place }
}

async function bookingPlace(db: DbOrTx, booking: NonNullable<RedemptionTarget['booking']>): Promise<Place & { key: string }> {
  if ((booking.court === undefined) === (booking.pod === undefined)) throw new BadRequestError('body.target.booking needs exactly one of court or pod')
  if (booking.court) {
    const court = await db.selectFrom('courts').select(['id', 'area_id', 'pod_id']).where('id', '=', booking.court.id).executeTakeFirst()
    if (!court) throw new BadRequestError(`body.target.booking.court.id: no court ${quote(booking.court.id)}`)
    return { areaIds: [court.area_id], podIds: court.pod_id ? [court.pod_id] : [], key: `court:${court.id}` }
  }
  const pod = await db.selectFrom('pods').select(['id', 'area_id']).where('id', '=', booking.pod!.id).executeTakeFirst()
  if (!pod) throw new BadRequestError(`body.target.booking.pod.id: no pod ${quote(booking.pod!.id)}`)
  return { areaIds: [pod.area_id], podIds: [pod.id], key: `pod:${pod.id}` }
}

/** Resolves the target for an item `type`, used by `userId`; a missing thing it names is a 400. */
export async function resolveTarget(db: DbOrTx, type: PackageItemType, target: RedemptionTarget, userId: string, clubTimezone: string): Promise<ResolvedTarget> {
  checkShape(type, target)
  const subject: ConstraintSubject = { eventSubtype: null, eventCustomType: null, eventTags: [], kid: target.guest?.kid ?? false, sessionPeriodTypes: null, areaSlugs: [], podIds: [] }
  const parts: string[] = [type, `user:${userId}`]
  const stored: Record<string, unknown> = {}
  let startAt: string | null = null
  let description = ''

  if (target.event) {
    const { event, place } = await eventTarget(db, target.event.id)
    const at = await periodsAt(db, place, new Date(event.start_at), new Date(event.end_at), clubTimezone)
    Object.assign(subject, {
      eventSubtype: event.subtype,
      eventCustomType: event.type,
      eventTags: JSON.parse(event.tags) as string[],
      sessionPeriodTypes: at.types,
      areaSlugs: at.slugs,
      podIds: [...new Set(place.podIds)]
    })
    parts.push(`event:${event.id}`)
    stored.event = { id: event.id, name: event.name, startDate: event.start_at, endDate: event.end_at }
    startAt = event.start_at
    description = event.name
  }
  if (target.booking) {
    const start = requestInstant(target.booking.startDate, 'body.target.booking.startDate')
    const end = requestInstant(target.booking.endDate, 'body.target.booking.endDate')
    if (end <= start) throw new BadRequestError('body.target.booking.endDate must be after its startDate')
    if (end.getTime() - start.getTime() > MAX_BOOKING_MS) throw new BadRequestError('body.target.booking may last at most 24 hours')
    const place = await bookingPlace(db, target.booking)
    const at = await periodsAt(db, place, start, end, clubTimezone)
    Object.assign(subject, { sessionPeriodTypes: at.types, areaSlugs: at.slugs, podIds: place.podIds })
    parts.push(`booking:${place.key}:${start.toISOString()}:${end.toISOString()}`)
    stored.booking = { ...(target.booking.court ? { court: target.booking.court } : { pod: target.booking.pod }), startDate: start.toISOString(), endDate: end.toISOString() }
    startAt = start.toISOString()
    description = `booking ${start.toISOString()} to ${end.toISOString()}`
  }
  if (target.guest) {
    // The same guest named twice for the same thing is one redemption, however it is spelled.
    parts.push(`guest:${target.guest.name.trim().toLowerCase().replace(/\s+/g, ' ')}`)
    stored.guest = { name: target.guest.name, kid: target.guest.kid ?? false }
    description = `guest ${target.guest.name} at ${description}`
  }
  if (target.series) {
    const series = await db.selectFrom('series').selectAll().where('id', '=', target.series.id).executeTakeFirst()
    if (!series) throw new BadRequestError(`body.target.series.id: no series ${quote(target.series.id)}`)
    const first = await db.selectFrom('events').select('start_at').where('series_id', '=', series.id).orderBy('start_at').executeTakeFirst()
    Object.assign(subject, { eventSubtype: series.subtype, eventCustomType: series.type })
    parts.push(`series:${series.id}`)
    stored.series = { id: series.id, name: series.name }
    startAt = first?.start_at ?? null
    description = series.name
  }
  if (target.replay) {
    // The replay catalogue arrives with the replays issue; until then the id is taken as given.
    parts.push(`replay:${target.replay.id}`)
    stored.replay = { id: target.replay.id }
    description = `replay ${target.replay.id}`
  }
  if (target.match) {
    const match = await db.selectFrom('matches').select(['id', 'start_at']).where('id', '=', target.match.id).executeTakeFirst()
    if (!match) throw new BadRequestError(`body.target.match.id: no match ${quote(target.match.id)}`)
    parts.push(`match:${match.id}`)
    stored.match = { id: match.id }
    description = `match ${match.id}`
  }
  return { subject, key: parts.join('|'), startAt, description, stored }
}
