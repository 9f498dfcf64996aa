// "Do not film": intervals in which a court is not filmed (a junior camp, a private event). Staff and
// admins keep them; the boxes filming the court read them in their status answer and stop those
// cameras; a replay overlapping one is refused. Rules and SQL live here.
import { randomUUID } from 'node:crypto'
import type { DoNotFilm, DoNotFilmInterval, DoNotFilmIntervalRequest, DoNotFilmListQuery } from '@club/contract'
import type { Actor } from '../actor.js'
import type { Clock } from '../clock.js'
import type { Db, DbOrTx } from '../db/database.js'
import type { DoNotFilmIntervalsTable } from '../db/schema.js'
import { BadRequestError, ConflictError, NotFoundError, quote } from '../errors.js'
import { paged, pageRequest } from '../paging.js'

/** The longest interval: a season's camp, not "never film this court" (that is the camera's courtIds). */
export const MAX_DAYS = 366
/** How many intervals a box's status answer carries, soonest first (the contract's maxItems). */
const FOR_BOX = 100

const pathOf = (courtId: string) => `/apis/v2/admin/courts/${encodeURIComponent(courtId)}/do-not-film`

function toInterval(row: DoNotFilmIntervalsTable): DoNotFilmInterval {
  return {
    id: row.id,
    court: { id: row.court_id },
    start: row.start_at,
    end: row.end_at,
    reason: row.reason,
    createdBy: row.created_by === null ? null : { id: row.created_by },
    createdDate: row.created_at,
    _links: { self: { href: `${pathOf(row.court_id)}/${row.id}` } }
  }
}

/** A 404 unless the court exists: the admin court routes' own check. */
export async function existingCourt(db: DbOrTx, courtId: string): Promise<void> {
  const court = await db.selectFrom('courts').select('id').where('id', '=', courtId).executeTakeFirst()
  if (!court) throw new NotFoundError(`no court ${quote(courtId)}`)
}

/** The instants a request names, or a 400 naming the field and the rule. */
export function checkedInterval(body: Pick<DoNotFilmIntervalRequest, 'start' | 'end'>, now: Date): { start: Date; end: Date } {
  const start = new Date(body.start)
  const end = new Date(body.end)
  if (Number.isNaN(start.getTime())) throw new BadRequestError(`body.start ${quote(body.start)} is not a date-time`)
  if (Number.isNaN(end.getTime())) throw new BadRequestError(`body.end ${quote(body.end)} is not a date-time`)
  if (end <= start) throw new BadRequestError(`body.end must be after body.start`)
  if (end <= now) throw new BadRequestError(`body.end ${quote(body.end)} is past: an interval that is over films nothing less`)
  if (end.getTime() - start.getTime() > MAX_DAYS * 86_400_000) throw new BadRequestError(`body.end: an interval lasts at most ${MAX_DAYS} days`)
  return { start, end }
}

export async function createDoNotFilmInterval(db: Db, courtId: string, body: DoNotFilmIntervalRequest, by: Actor | null, clock: Clock): Promise<DoNotFilmInterval> {
  const now = clock.now()
  const { start, end } = checkedInterval(body, now)
  await existingCourt(db, courtId)
  const row: DoNotFilmIntervalsTable = {
    id: randomUUID(),
    court_id: courtId,
    start_at: start.toISOString(),
    end_at: end.toISOString(),
    reason: body.reason.trim(),
    created_by: by?.id ?? null,
    created_at: now.toISOString()
  }
  await db.insertInto('do_not_film_intervals').values(row).execute()
  return toInterval(row)
}

/** A court's intervals under way or to come (with `past`, all), soonest first. */
export async function listDoNotFilmIntervals(db: Db, courtId: string, query: DoNotFilmListQuery, clock: Clock) {
  await existingCourt(db, courtId)
  const request = pageRequest(query)
  let filtered = db.selectFrom('do_not_film_intervals').where('court_id', '=', courtId)
  if (!query.past) filtered = filtered.where('end_at', '>', clock.now().toISOString())
  const [rows, count] = await Promise.all([
    filtered.selectAll().orderBy('start_at').orderBy('id').limit(request.ipp).offset(request.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  return paged(rows.map(toInterval), Number(count.total), request, pathOf(courtId), { past: query.past })
}

export async function deleteDoNotFilmInterval(db: Db, courtId: string, intervalId: string): Promise<void> {
  const deleted = await db.deleteFrom('do_not_film_intervals').where('id', '=', intervalId).where('court_id', '=', courtId).executeTakeFirst()
  if (Number(deleted.numDeletedRows) !== 1) throw new NotFoundError(`court ${quote(courtId)} has no "do not film" interval ${quote(intervalId)}`)
}

/**
 * A 409 naming the interval when a replay from `start` to `end` would overlap one of `courtIds`: every
 * court the replay's camera films, since its picture shows them all (as the box stops such a camera).
 */
export async function refuseDoNotFilm(db: DbOrTx, courtIds: readonly string[], start: Date, end: Date): Promise<void> {
  const overlapping = await db
    .selectFrom('do_not_film_intervals')
    .select(['court_id', 'start_at', 'end_at'])
    .where('court_id', 'in', courtIds)
    .where('start_at', '<', end.toISOString())
    .where('end_at', '>', start.toISOString())
    .orderBy('start_at')
    .executeTakeFirst()
  if (overlapping) {
    // Not the reason: a member asking learns only that the court is not filmed then.
    throw new ConflictError(`court ${quote(overlapping.court_id)} is not filmed from ${overlapping.start_at} to ${overlapping.end_at} ("do not film"): no replay may overlap it`)
  }
}

/** What a box of `areaId` is told: its courts' intervals under way or to come, soonest first. */
export async function doNotFilmOfArea(db: DbOrTx, areaId: string, now: Date): Promise<DoNotFilm[]> {
  const rows = await db
    .selectFrom('do_not_film_intervals')
    .innerJoin('courts', 'courts.id', 'do_not_film_intervals.court_id')
    .select(['do_not_film_intervals.court_id', 'do_not_film_intervals.start_at', 'do_not_film_intervals.end_at'])
    .where('courts.area_id', '=', areaId)
    .where('do_not_film_intervals.end_at', '>', now.toISOString())
    .orderBy('do_not_film_intervals.start_at')
    .orderBy('do_not_film_intervals.id')
    .limit(FOR_BOX)
    .execute()
  return rows.map((r) => ({ court: { id: r.court_id }, start: r.start_at, end: r.end_at }))
}
