// Who takes part in a match (issue 49), read from the package redemptions at the time of asking: a
// booking's redeemer and the users of the GUEST_SIGNUP items naming that booking (same court and
// interval) taken from the redeemer's own packages (a guest the booker brought, late too: a target
// names only a court and times, so a guest pass of anyone else's would let any member join any
// booking); an event's EVENT_SIGNUP and GUEST_SIGNUP redemptions and its series' SERIES_SIGNUP ones
// made before it ended (signing up to a finished event is no taking part in it). Cancelled
// redemptions do not count. Staff see every match besides.
import { isStaff, type Actor } from '../actor.js'
import type { DbOrTx } from '../db/database.js'
import type { MatchesTable } from '../db/schema.js'
import { NotFoundError, quote } from '../errors.js'

interface StoredTarget {
  booking?: { court?: { id: string }; startDate: string; endDate: string }
  event?: { id: string }
  series?: { id: string }
}

const live = (db: DbOrTx) => db.selectFrom('package_redemptions').select(['id', 'user_id', 'type', 'target']).where('cancelation_date', 'is', null)

const sameBooking = (target: StoredTarget, match: Pick<MatchesTable, 'court_id' | 'start_at' | 'end_at'>) =>
  target.booking?.court?.id === match.court_id && target.booking.startDate === match.start_at && target.booking.endDate === match.end_at

/** The user ids taking part in `match`. */
export async function participantsOf(db: DbOrTx, match: MatchesTable): Promise<Set<string>> {
  const users = new Set<string>()
  if (match.source_type === 'BOOKING') {
    const booking = await live(db).where('id', '=', match.redemption_id!).where('type', '=', 'BOOKING').executeTakeFirst()
    // A booking cancelled since: nobody takes part any more (staff still see the match).
    if (!booking) return users
    users.add(booking.user_id)
    const guests = await live(db)
      .where('type', '=', 'GUEST_SIGNUP')
      .where('target_start_at', '=', match.start_at)
      .where('package_id', 'in', db.selectFrom('packages').select('id').where('user_id', '=', booking.user_id))
      .execute()
    for (const guest of guests) if (sameBooking(JSON.parse(guest.target) as StoredTarget, match)) users.add(guest.user_id)
    return users
  }
  const event = await db.selectFrom('events').select(['id', 'series_id', 'start_at']).where('id', '=', match.event_id!).executeTakeFirst()
  if (!event) return users
  const before = live(db).where('redemption_date', '<', match.end_at)
  const signups = await before.where('type', 'in', ['EVENT_SIGNUP', 'GUEST_SIGNUP']).where('target_start_at', '=', event.start_at).execute()
  for (const row of signups) if ((JSON.parse(row.target) as StoredTarget).event?.id === event.id) users.add(row.user_id)
  if (event.series_id !== null) {
    for (const row of await before.where('type', '=', 'SERIES_SIGNUP').execute()) {
      if ((JSON.parse(row.target) as StoredTarget).series?.id === event.series_id) users.add(row.user_id)
    }
  }
  return users
}

/**
 * The ids of the matches `userId` takes part in (a member's "My replays" and match list): those their
 * redemptions name, kept only where participantsOf agrees (one rule for the list and the reading).
 */
export async function matchIdsOf(db: DbOrTx, userId: string): Promise<string[]> {
  const rows = await live(db).where('user_id', '=', userId).where('type', 'in', ['BOOKING', 'GUEST_SIGNUP', 'EVENT_SIGNUP', 'SERIES_SIGNUP']).execute()
  const bookings: string[] = []
  const guestBookings: Array<NonNullable<StoredTarget['booking']>> = []
  const events = new Set<string>()
  const series = new Set<string>()
  for (const row of rows) {
    const target = JSON.parse(row.target) as StoredTarget
    if (row.type === 'BOOKING') bookings.push(row.id)
    else if (target.booking) guestBookings.push(target.booking)
    else if (target.event) events.add(target.event.id)
    else if (target.series) series.add(target.series.id)
  }
  if (series.size > 0) {
    for (const event of await db.selectFrom('events').select('id').where('series_id', 'in', [...series]).execute()) events.add(event.id)
  }
  const ids = new Set<string>()
  if (bookings.length > 0) for (const m of await db.selectFrom('matches').select('id').where('redemption_id', 'in', bookings).execute()) ids.add(m.id)
  if (events.size > 0) for (const m of await db.selectFrom('matches').select('id').where('event_id', 'in', [...events]).execute()) ids.add(m.id)
  for (const booking of guestBookings) {
    if (!booking.court) continue
    const found = await db
      .selectFrom('matches')
      .select('id')
      .where('source_type', '=', 'BOOKING')
      .where('court_id', '=', booking.court.id)
      .where('start_at', '=', booking.startDate)
      .where('end_at', '=', booking.endDate)
      .execute()
    for (const m of found) ids.add(m.id)
  }
  if (ids.size === 0) return []
  const matches = await db.selectFrom('matches').selectAll().where('id', 'in', [...ids]).execute()
  const kept: string[] = []
  for (const match of matches) if ((await participantsOf(db, match)).has(userId)) kept.push(match.id)
  return kept
}

/** Whether `who` may see the match: staff, or a participant. A guest of a court page never. */
export async function maySeeMatch(db: DbOrTx, match: MatchesTable, who: Actor | { guestId: string }): Promise<boolean> {
  if ('guestId' in who) return false
  if (isStaff(who)) return true
  return (await participantsOf(db, match)).has(who.id)
}

/** The match `who` may see, or 404 (someone else's match is not theirs to learn of). */
export async function visibleMatch(db: DbOrTx, id: string, who: Actor | { guestId: string }): Promise<MatchesTable> {
  const row = await db.selectFrom('matches').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row || !(await maySeeMatch(db, row, who))) throw new NotFoundError(`no match ${quote(id)}`)
  return row
}
