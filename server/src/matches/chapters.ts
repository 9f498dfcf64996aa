// A match's chapters (issue 49): the replays its participants asked for during it, as marks in its
// video. Stored on the match with who asked each (matches.chapters), shown to each reader as they may
// see them: the replay's id only to staff and to the participant who asked it; the box only the marks.
import type { Chapter } from '@club/contract'
import { DateTime } from 'luxon'
import { isStaff, type Actor } from '../actor.js'
import type { DbOrTx } from '../db/database.js'

/** One chapter as stored: the mark, and the replay with who asked it. */
export interface StoredChapter {
  at: number
  label: string
  replayId: string
  userId: string
}

/** Who reads: a user, a guest of a court page, the box (marks only) or null (the command line and events: staff's view). */
type Reader = Actor | { guestId: string } | 'box' | null

export function parseChapters(text: string): StoredChapter[] {
  return JSON.parse(text) as StoredChapter[]
}

export function visibleChapters(stored: readonly StoredChapter[], reader: Reader): Chapter[] {
  return stored.map((c) => {
    const mark = { at: c.at, label: c.label }
    if (reader === 'box') return mark
    const shown = reader === null || (!('guestId' in reader) && (isStaff(reader) || reader.id === c.userId))
    return shown ? { ...mark, replay: { id: c.replayId } } : mark
  })
}

/** The chapters of matches by id, as `reader` sees them (for the replays that are their angles). */
export async function chaptersOfMatches(db: DbOrTx, matchIds: readonly string[], reader: Reader): Promise<Map<string, Chapter[]>> {
  const ids = [...new Set(matchIds)]
  if (ids.length === 0) return new Map()
  const rows = await db.selectFrom('matches').select(['id', 'chapters']).where('id', 'in', ids).execute()
  return new Map(rows.map((row) => [row.id, visibleChapters(parseChapters(row.chapters), reader)]))
}

/**
 * The chapters of a match made now: every CLIP replay of its court lying within its interval, asked
 * by one of `participants`, in order. `at` from the match's start to the replay's; the label the
 * replay's start on the court's clock (its area's timezone, else the club's).
 */
export async function chaptersFor(
  db: DbOrTx,
  match: { courtId: string; start: string; end: string },
  participants: ReadonlySet<string>,
  clubTimezone: string
): Promise<StoredChapter[]> {
  if (participants.size === 0) return []
  const rows = await db
    .selectFrom('replays')
    .select(['id', 'user_id', 'start_at'])
    .where('kind', '=', 'CLIP')
    .where('court_id', '=', match.courtId)
    .where('start_at', '>=', match.start)
    .where('end_at', '<=', match.end)
    .where('user_id', 'in', [...participants])
    .orderBy('start_at')
    .orderBy('id')
    .execute()
  if (rows.length === 0) return []
  const area = await db
    .selectFrom('courts')
    .innerJoin('areas', 'areas.id', 'courts.area_id')
    .select('areas.timezone')
    .where('courts.id', '=', match.courtId)
    .executeTakeFirst()
  const zone = area?.timezone ?? clubTimezone
  const start = Date.parse(match.start)
  return rows.map((row) => ({
    at: (Date.parse(row.start_at) - start) / 1000,
    label: `Replay ${DateTime.fromISO(row.start_at, { zone: 'utc' }).setZone(zone).toFormat('HH:mm')}`,
    replayId: row.id,
    userId: row.user_id!
  }))
}
