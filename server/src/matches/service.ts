// Matches (issue 49): a booking's or an event's whole interval on a filmed court, one replay of kind
// MATCH per camera filming it (an angle). The teller (runMatchTeller, on an interval in every server
// process) makes each match once when its interval has ended (plus MATCH_GRACE_SECONDS) and mails its
// participants once when it is READY; the routes read them. Who takes part: participants.ts; the
// chapters: chapters.ts; an angle's life (the box's reports, expiry, takedown) is a replay's.
import { randomUUID } from 'node:crypto'
import type { Match, MatchListQuery, Replay, ReplayStatus } from '@club/contract'
import { isStaff, type Actor } from '../actor.js'
import type { Config } from '../config.js'
import type { Db, DbOrTx } from '../db/database.js'
import { rowLocked } from '../db/sql.js'
import type { MatchesTable, ReplaysTable } from '../db/schema.js'
import { BadRequestError, ConflictError, ForbiddenError, HttpError, PaymentRequiredError, quote } from '../errors.js'
import type { Viewer } from '../footage-access/service.js'
import { refuseDoNotFilm } from '../do-not-film/service.js'
import { refuseTakenDownFootage } from '../footage-takedowns/service.js'
import { localDay, sendOnce } from '../jobs/mail.js'
import type { Mailer } from '../password-reset/mailer.js'
import { markDelivered, redeemFromAnyIn } from '../packages/redemptions.js'
import { paidMatches } from '../packages/targets.js'
import { paged, pageRequest } from '../paging.js'
import { IN_PROGRESS, recordReplayEvent, toReplay, type ReplayDeps } from '../replays/replay.js'
import { areaBoxes, camerasFilming, failUnansweredReplays, presentReplays } from '../replays/service.js'
import { chaptersFor, visibleChapters, parseChapters } from './chapters.js'
import { matchIdsOf, participantsOf, visibleMatch } from './participants.js'

export const MATCHES_PATH = '/apis/v2/matches'

/** How far back the teller looks: turning MATCH_RECORDING on does not film last year's bookings. */
export const LOOKBACK_MS = 86_400_000

export interface MatchSettings {
  recording: Config['MATCH_RECORDING']
  graceSeconds: number
  retentionDays: number
  requiresPackage: boolean
  mail: Config['MATCH_MAIL']
  maxMinutes: number
  clubTimezone: string
}

export function matchSettings(config: Config): MatchSettings {
  return {
    recording: config.MATCH_RECORDING,
    graceSeconds: config.MATCH_GRACE_SECONDS,
    retentionDays: config.MATCH_RETENTION_DAYS,
    requiresPackage: config.MATCH_REQUIRES_PACKAGE,
    mail: config.MATCH_MAIL,
    maxMinutes: config.MATCH_MAX_MINUTES,
    clubTimezone: config.CLUB_TIMEZONE
  }
}

export interface MatchDeps {
  replay: ReplayDeps
  settings: MatchSettings
}

/** A booking or an event on one court, due to become a match. */
interface DueMatch {
  source: { type: 'BOOKING'; redemptionId: string; userId: string } | { type: 'EVENT'; eventId: string }
  courtId: string
  start: string
  end: string
}

interface StoredBooking {
  booking?: { court?: { id: string }; startDate: string; endDate: string }
}

/**
 * What has ended (plus the grace) within the lookback and is not a match yet: with `bookings`, the
 * live BOOKING redemptions of a court redeemed before they began (a pod's booking names no court: not filmed as a match); with
 * `events`, each court of every event with recordMatch. Longer than MATCH_MAX_MINUTES: none.
 */
export async function dueMatches(db: DbOrTx, now: Date, settings: MatchSettings): Promise<DueMatch[]> {
  const endedBy = new Date(now.getTime() - settings.graceSeconds * 1000).toISOString()
  const endedAfter = new Date(now.getTime() - settings.graceSeconds * 1000 - LOOKBACK_MS).toISOString()
  const maxMs = settings.maxMinutes * 60_000
  const fits = (start: string, end: string) => end <= endedBy && end > endedAfter && Date.parse(end) - Date.parse(start) <= maxMs
  const due: DueMatch[] = []
  if (settings.recording === 'bookings') {
    const rows = await db
      .selectFrom('package_redemptions')
      .select(['id', 'user_id', 'target'])
      .where('type', '=', 'BOOKING')
      .where('cancelation_date', 'is', null)
      // A booking lasts at most a day (packages/targets.ts): those that began since can have ended in the window.
      .where('target_start_at', '>', new Date(Date.parse(endedAfter) - LOOKBACK_MS).toISOString())
      .where('target_start_at', '<', endedBy)
      // Booked before it began: a booking redeemed once it has begun (or ended) would hand its
      // redeemer the footage of whoever was playing there (redemptions do not check the court was free).
      .whereRef('redemption_date', '<=', 'target_start_at')
      .where(({ not, exists, selectFrom }) => not(exists(selectFrom('matches').select('matches.id').whereRef('matches.redemption_id', '=', 'package_redemptions.id'))))
      // The first booked first: of bookings overlapping on one court, it is the match (makeMatch).
      .orderBy('redemption_date')
      .orderBy('id')
      .execute()
    for (const row of rows) {
      const booking = (JSON.parse(row.target) as StoredBooking).booking
      if (!booking?.court || !fits(booking.startDate, booking.endDate)) continue
      due.push({ source: { type: 'BOOKING', redemptionId: row.id, userId: row.user_id }, courtId: booking.court.id, start: booking.startDate, end: booking.endDate })
    }
  }
  if (settings.recording === 'events') {
    const rows = await db
      .selectFrom('events')
      .innerJoin('event_refs', 'event_refs.event_id', 'events.id')
      .select(['events.id', 'events.start_at', 'events.end_at', 'event_refs.ref_id'])
      .where('events.record_match', '=', 1)
      .where('event_refs.kind', '=', 'court')
      .where('events.end_at', '<=', endedBy)
      .where('events.end_at', '>', endedAfter)
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('matches').select('matches.id').whereRef('matches.event_id', '=', 'events.id').whereRef('matches.court_id', '=', 'event_refs.ref_id')))
      )
      .execute()
    for (const row of rows) {
      if (!fits(row.start_at, row.end_at)) continue
      due.push({ source: { type: 'EVENT', eventId: row.id }, courtId: row.ref_id, start: row.start_at, end: row.end_at })
    }
  }
  return due
}

/** Every enabled camera of an approved box of the court's area that films it (as chooseCamera sees them), with the courts each films. */
export async function filmingCameras(db: DbOrTx, courtId: string) {
  const court = await db.selectFrom('courts').select('area_id').where('id', '=', courtId).executeTakeFirst()
  if (!court) return []
  return camerasFilming(await areaBoxes(db, court.area_id), courtId)
}

/**
 * Why an angle is not asked of its box, as a replay would be refused: its camera's courts have a
 * do-not-film interval, or footage taken down, overlapping the match. The angle is made FAILED with
 * that reason (the match is kept, so it is not tried again on every tick).
 */
async function refusal(tx: DbOrTx, courtIds: readonly string[], start: Date, end: Date): Promise<string | null> {
  for (const [check, reason] of [
    [refuseDoNotFilm, 'do_not_film'],
    [refuseTakenDownFootage, 'taken_down']
  ] as const) {
    try {
      await check(tx, courtIds, start, end)
    } catch (err) {
      if (err instanceof ConflictError) return reason
      throw err
    }
  }
  return null
}

/**
 * Makes one match with its angles, or nothing when another process made it first (the unique keys
 * on source and court: the insert does nothing) or, for a booking, another booking's match overlaps
 * it on its court. Answers its id when this call made it.
 */
export async function makeMatch(db: Db, due: DueMatch, cameras: Awaited<ReturnType<typeof filmingCameras>>, deps: MatchDeps): Promise<string | null> {
  const now = deps.replay.clock.now()
  const at = now.toISOString()
  return rowLocked(db, async (tx) => {
    const row: MatchesTable = {
      id: randomUUID(),
      court_id: due.courtId,
      source_type: due.source.type,
      redemption_id: due.source.type === 'BOOKING' ? due.source.redemptionId : null,
      event_id: due.source.type === 'EVENT' ? due.source.eventId : null,
      start_at: due.start,
      end_at: due.end,
      chapters: '[]',
      mailed_at: null,
      created_at: at,
      updated_at: at
    }
    // Bookings overlapping on one court film the same minutes: one match, the first booked's. Else
    // a member's items (or two members' double booking) would have the box cut and upload the same
    // hour of every camera again for each.
    if (due.source.type === 'BOOKING') {
      const overlapping = await tx
        .selectFrom('matches')
        .select('id')
        .where('court_id', '=', row.court_id)
        .where('source_type', '=', 'BOOKING')
        .where('start_at', '<', row.end_at)
        .where('end_at', '>', row.start_at)
        .executeTakeFirst()
      if (overlapping) return null
    }
    const inserted = await tx.insertInto('matches').values(row).onConflict((oc) => oc.doNothing()).executeTakeFirst()
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) !== 1) return null
    // Every replay a participant asked for during it is known now: the match is made after its end.
    const chapters = await chaptersFor(tx, { courtId: row.court_id, start: row.start_at, end: row.end_at }, await participantsOf(tx, row), deps.settings.clubTimezone)
    if (chapters.length > 0) await tx.updateTable('matches').set({ chapters: JSON.stringify(chapters) }).where('id', '=', row.id).execute()
    for (const camera of cameras) {
      const reason = await refusal(tx, camera.courtIds, new Date(row.start_at), new Date(row.end_at))
      const angle: ReplaysTable = {
        id: randomUUID(),
        kind: 'MATCH',
        match_id: row.id,
        user_id: due.source.type === 'BOOKING' ? due.source.userId : null,
        guest_id: null,
        court_id: row.court_id,
        replay_server_id: camera.replayServerId,
        camera_id: camera.cameraId,
        start_at: row.start_at,
        end_at: row.end_at,
        status: reason === null ? 'REQUESTED' : 'FAILED',
        reason,
        location: null,
        duration_seconds: null,
        size_bytes: null,
        sha256: null,
        package_id: null,
        redemption_id: null,
        created_at: at,
        updated_at: at,
        bucket: null,
        taken_down_at: null,
        taken_down_by: null,
        taken_down_reason: null
      }
      await tx.insertInto('replays').values(angle).execute()
      await recordReplayEvent(tx, angle.id, reason === null ? 'replay.requested' : 'replay.failed', now)
    }
    return row.id
  })
}

/** Makes every match that is due (MATCH_RECORDING); answers how many this call made. */
export async function makeMatches(db: Db, deps: MatchDeps): Promise<number> {
  if (deps.settings.recording === 'off') return 0
  let made = 0
  for (const due of await dueMatches(db, deps.replay.clock.now(), deps.settings)) {
    const cameras = await filmingCameras(db, due.courtId)
    // A court no camera films is no match; it is looked at again while the lookback lasts (a camera named later).
    if (cameras.length === 0) continue
    if ((await makeMatch(db, due, cameras, deps)) !== null) made++
  }
  return made
}

const PROGRESS: ReplayStatus[] = ['REQUESTED', 'EXPORTING', 'UPLOADING']

/** The angles' progress as one (see the contract's Match.status). */
export function matchStatus(statuses: readonly ReplayStatus[]): ReplayStatus {
  const making = PROGRESS.find((s) => statuses.includes(s))
  if (making) return making
  if (statuses.includes('READY')) return 'READY'
  for (const final of ['TAKEN_DOWN', 'EXPIRED', 'FAILED'] as const) if (statuses.includes(final)) return final
  return 'FAILED'
}

function toMatch(row: MatchesTable, angles: Replay[], reader: Actor | null, retentionDays: number): Match {
  return {
    id: row.id,
    status: matchStatus(angles.map((a) => a.status)),
    source: row.source_type === 'BOOKING' ? { type: 'BOOKING', redemption: { id: row.redemption_id! } } : { type: 'EVENT', event: { id: row.event_id! } },
    court: { id: row.court_id },
    start: row.start_at,
    end: row.end_at,
    angles,
    chapters: visibleChapters(parseChapters(row.chapters), reader),
    expiresAt: new Date(Date.parse(row.end_at) + retentionDays * 86_400_000).toISOString(),
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: `${MATCHES_PATH}/${row.id}` } }
  }
}

const anglesOf = (db: DbOrTx, matchIds: readonly string[]) =>
  matchIds.length === 0
    ? Promise.resolve([] as ReplaysTable[])
    : db.selectFrom('replays').selectAll().where('match_id', 'in', [...matchIds]).orderBy('replay_server_id').orderBy('camera_id').execute()

/**
 * A participant's opening of a READY match under MATCH_REQUIRES_PACKAGE: one REPLAY item, target
 * `match`, delivered at once (spent is spent), once per participant and match: a match they paid
 * for before (in any package, an expired one too) is not paid again. 402 when none is left.
 */
async function payForMatch(db: Db, match: MatchesTable, actor: Actor, deps: MatchDeps, maySpend: boolean): Promise<void> {
  const request = { type: 'REPLAY' as const, target: { match: { id: match.id } } }
  await rowLocked(db, async (tx) => {
    if ((await paidMatches(tx, actor.id, [match.id])).has(match.id)) return
    // A GET that spends: not with a token that may only read (a partner's dashboard would spend the member's items).
    if (!maySpend) throw new ForbiddenError(`opening match ${quote(match.id)} spends a REPLAY package item, which a read-only token may not: use a token with the scope api or replays`)
    try {
      const { redemption } = await redeemFromAnyIn(tx, request, actor, deps.replay.redemption)
      await markDelivered(tx, redemption.id, deps.replay.clock.now().toISOString())
    } catch (err) {
      if (err instanceof HttpError && err.statusCode === 409) throw new PaymentRequiredError(`opening a match takes a REPLAY package item and none is left: ${err.message}`)
      throw err
    }
  })
}

/**
 * One match as `viewer` sees it (participants and staff; anyone else 404): READY angles with their
 * download links, each written to the footage log. Paid for first when the club asks it, unless the
 * credential may not spend (`maySpend` false: a token with only the scope read).
 */
export async function getMatch(db: Db, id: string, viewer: Viewer, deps: MatchDeps, maySpend = true): Promise<Match> {
  await failUnansweredReplays(db, deps.replay)
  const row = await visibleMatch(db, id, viewer.who)
  const actor = viewer.who as Actor
  const rows = await anglesOf(db, [row.id])
  // Any READY angle is footage handed out (its link), whatever the others are still doing.
  if (deps.settings.requiresPackage && !isStaff(actor) && rows.some((r) => r.status === 'READY')) await payForMatch(db, row, actor, deps, maySpend)
  const angles = await presentReplays(db, rows, viewer, deps.replay)
  return toMatch(row, angles, actor, deps.settings.retentionDays)
}

/** Matches newest first: a member's own (those they take part in), or staff's of anyone. No links: nothing is handed out or spent. */
export async function listMatches(db: Db, query: MatchListQuery, viewer: Viewer, deps: MatchDeps) {
  if ('guestId' in viewer.who) throw new ForbiddenError("a court page's guest session has no matches: sign in to see the matches you take part in")
  const actor = viewer.who
  await failUnansweredReplays(db, deps.replay)
  const request = pageRequest(query)
  let ids: string[] | null = null
  if (!isStaff(actor)) {
    if (query.user !== undefined && query.user !== actor.id) throw new BadRequestError('user: a member lists only the matches they take part in')
    ids = await matchIdsOf(db, actor.id)
  } else if (query.user !== undefined) {
    ids = await matchIdsOf(db, query.user)
  }
  let filtered = db.selectFrom('matches')
  if (ids !== null) filtered = ids.length === 0 ? filtered.where('id', '=', '') : filtered.where('id', 'in', ids)
  if (query.court !== undefined) filtered = filtered.where('court_id', '=', query.court)
  const [rows, count] = await Promise.all([
    filtered.selectAll().orderBy('start_at', 'desc').orderBy('id', 'desc').limit(request.ipp).offset(request.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  const angles = await anglesOf(db, rows.map((r) => r.id))
  const items = rows.map((row) => {
    const chapters = visibleChapters(parseChapters(row.chapters), actor)
    return toMatch(row, angles.filter((a) => a.match_id === row.id).map((a) => toReplay(a, actor, undefined, chapters)), actor, deps.settings.retentionDays)
  })
  return paged(items, Number(count.total), request, MATCHES_PATH, { court: query.court, user: query.user })
}

export interface MatchMailDeps {
  db: Db
  clock: ReplayDeps['clock']
  mailer: () => Mailer
  publicBaseUrl: string
  clubTimezone: string
  retentionDays: number
}

/**
 * Mails each participant with an e-mail address a link to every match whose last angle became final
 * with at least one READY: once per participant and match across processes (sendOnce's key), and
 * mailed_at is written once every participant's mail went, so a send that failed is tried again on
 * the next tick (for the participants not mailed yet). Answers how many mails went.
 */
export async function mailReadyMatches(deps: MatchMailDeps): Promise<number> {
  const { db } = deps
  const now = deps.clock.now()
  const rows = await db
    .selectFrom('matches')
    .innerJoin('courts', 'courts.id', 'matches.court_id')
    .selectAll('matches')
    .select(['courts.name as court_name', 'courts.slug as court_slug'])
    .where('matches.mailed_at', 'is', null)
    .where('matches.end_at', '>', new Date(now.getTime() - deps.retentionDays * 86_400_000).toISOString())
    .where(({ exists, selectFrom }) => exists(selectFrom('replays').select('replays.id').whereRef('replays.match_id', '=', 'matches.id').where('replays.status', '=', 'READY')))
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('replays').select('replays.id').whereRef('replays.match_id', '=', 'matches.id').where('replays.status', 'in', IN_PROGRESS)))
    )
    .execute()
  let sent = 0
  let failure: unknown
  const base = deps.publicBaseUrl.replace(/\/+$/, '')
  for (const row of rows) {
    const users = [...(await participantsOf(db, row))]
    const recipients = users.length === 0 ? [] : await db.selectFrom('users').select(['id', 'email']).where('id', 'in', users).where('erased_at', 'is', null).orderBy('id').execute()
    const subject = `Your match on ${row.court_name} is ready`
    const text = [
      `The video of your match on ${row.court_name}, ${localDay(row.start_at, deps.clubTimezone)}, is ready: every camera's angle, with your replays as chapters.`,
      '',
      `Watch it: ${base}/r/${encodeURIComponent(row.court_slug)}`,
      `(${base}${MATCHES_PATH}/${row.id})`
    ].join('\n')
    try {
      for (const user of recipients) {
        if (!user.email) continue
        const key = { kind: 'match-ready', subjectId: row.id, occurrence: `${row.id}:${user.id}`, recipientId: user.id }
        if (await sendOnce(deps, key, { to: user.email, subject, text })) sent++
      }
    } catch (err) {
      // This match's participants are tried again next tick; the other matches are mailed meanwhile.
      failure ??= err
      continue
    }
    await db.updateTable('matches').set({ mailed_at: now.toISOString() }).where('id', '=', row.id).where('mailed_at', 'is', null).execute()
  }
  if (failure !== undefined) throw failure
  return sent
}

/** One run of the teller, as the interval in routes.ts makes it: the matches due made, the READY ones mailed (unless MATCH_MAIL=off). */
export async function runMatchTeller(deps: MatchDeps & Omit<MatchMailDeps, 'clock' | 'clubTimezone' | 'retentionDays'>): Promise<{ made: number; mailed: number }> {
  const made = await makeMatches(deps.db, deps)
  const mailed =
    deps.settings.mail === 'on'
      ? await mailReadyMatches({ ...deps, clock: deps.replay.clock, clubTimezone: deps.settings.clubTimezone, retentionDays: deps.settings.retentionDays })
      : 0
  return { made, mailed }
}
