// An area's session periods (PEAK and REDUCED hours; every other hour OFF PEAK) and the zone its
// clock is in. A booking's or event's session period types come from these (constraints.ts).
import type { AreaSessionPeriods, AreaSessionPeriodsInput, SessionPeriod } from '@club/contract'
import type { Clock } from '../clock.js'
import type { DbOrTx } from '../db/database.js'
import { isValidTimezone } from '../billing/calendar.js'
import { BadRequestError, NotFoundError, quote } from '../errors.js'
import { parseSessionPeriods } from './constraints.js'

/** As stored (checked when written): the periods, or none. */
export function parseStoredSessionPeriods(json: string | null): SessionPeriod[] {
  return json === null ? [] : (JSON.parse(json) as { periods: SessionPeriod[] }).periods
}

const path = (id: string) => `/apis/v2/admin/areas/${id}/session-periods`

function answer(id: string, row: { session_periods: string | null; timezone: string | null }, clubTimezone: string): AreaSessionPeriods {
  return {
    area: { id },
    timezone: row.timezone,
    effectiveTimezone: row.timezone ?? clubTimezone,
    periods: parseStoredSessionPeriods(row.session_periods),
    _links: { self: { href: path(id) }, area: { href: `/apis/v2/admin/areas/${id}` } }
  }
}

async function areaRow(db: DbOrTx, id: string) {
  const row = await db.selectFrom('areas').select(['id', 'session_periods', 'timezone']).where('id', '=', id).executeTakeFirst()
  if (!row) throw new NotFoundError(`area ${quote(id)} not found`)
  return row
}

export async function getSessionPeriods(db: DbOrTx, id: string, clubTimezone: string): Promise<AreaSessionPeriods> {
  return answer(id, await areaRow(db, id), clubTimezone)
}

export async function setSessionPeriods(db: DbOrTx, id: string, input: AreaSessionPeriodsInput, clubTimezone: string, clock: Clock): Promise<AreaSessionPeriods> {
  const periods = parseSessionPeriods(input.periods, 'body.periods')
  const timezone = input.timezone ?? null
  if (timezone !== null && !isValidTimezone(timezone)) throw new BadRequestError(`body.timezone: ${quote(timezone, { limit: 40 })} is not an IANA timezone such as Europe/Madrid`)
  return db.transaction().execute(async (tx) => {
    await areaRow(tx, id)
    const row = { session_periods: periods.length === 0 ? null : JSON.stringify({ periods }), timezone }
    await tx.updateTable('areas').set({ ...row, updated_at: clock.now().toISOString() }).where('id', '=', id).execute()
    return answer(id, row, clubTimezone)
  })
}
