// The recording boxes' status polls, answered from memory between changes, with their sightings
// (lastSeenAt) written in batches. Every box polls every few seconds and its answer almost never
// changes, so a poll costs one tiny read (has anything changed?) instead of a look-up, a token
// derivation, a serialisation, a hash and a write (the kept answer's text and ETag are made once,
// by the HTTP layer: reply.ts). The database stays the truth: every kept answer
// goes as soon as migration 0008's status change counter moves, whoever moved it. A box's health
// report (issue 48) is written at once only when it changes a state; the usual one, which changes
// none, is held and written with the sightings.
import type { FastifyBaseLogger } from 'fastify'
import type { BoxHealthReport, ReplayServerStatusAnswer, ReplayServerStatusQuery } from '@club/contract'
import { sha256Hex } from '../crypto.js'
import type { Db } from '../db/database.js'
import { type ReplayServerDeps } from './service.js'
import { UnauthorizedError } from '../errors.js'
import { adoptPolledKey, findPolledReplayServer, recordReport, recordSightings, replayServerStatusChanges, reportedChanges, statusAnswerOf, type PollRow } from './polls.js'
import { provesPolledKey, signsHealth } from './claims.js'
import { pendingUpdateFor, updateTargetOf } from './updates.js'
import { doNotFilmOfArea } from '../do-not-film/service.js'
import { footageTakedownsOfBox } from '../footage-takedowns/service.js'
import { healthStates, isSkewed, measuredClockOffsetMs, parseHealthReport, recordClockOffset, recordHealth, recordHealthFigures, type HealthFigures, type WrittenHealth } from './health.js'

/** One box's answer, read when the status change counter stood at `changes`: the same object while kept. */
interface Entry {
  readonly changes: number
  readonly row: PollRow
  readonly answer: ReplayServerStatusAnswer
  /** The last poll not yet written to the database (epoch ms). */
  seenAt: number
}

export interface StatusPollsOptions {
  /** How many boxes' answers are kept; the longest kept go first. */
  maxEntries: number
  /** How often sightings held in memory are written. */
  flushIntervalMs: number
  log: FastifyBaseLogger
}

/** What a poll's query may hold: what the box reports about itself (ReplayServerStatusQuery). */
const REPORTED_FIELDS = new Set([
  'version',
  'serverUrl',
  'localIp',
  'architecture',
  'updateState',
  'updateVersion',
  'updateReason',
  'publicKey',
  'keyTimestamp',
  'keySignature',
  // The previous poll's round trip: the clock offset is measured from every signed poll, kept ones too.
  'roundTripMs'
])

/** Whether a poll offers a key its record may adopt: the record has none and the poll signed one. */
const offersKey = (row: PollRow, reported: ReplayServerStatusQuery): boolean => row.public_key === null && reported.keySignature !== undefined

/**
 * Whether a poll of a record with a box key is signed by that key (the agent signs every poll:
 * boxKeyAdoptionText over the serverId, a fresh timestamp). The serverId alone is no longer enough:
 * it is in the status path, so a proxy's access log shows it.
 */
const signedByBoxKey = (row: PollRow, serverId: string, reported: ReplayServerStatusQuery, now: Date): boolean =>
  reported.publicKey === row.public_key && provesPolledKey(serverId, reported, now)

export const UNSIGNED_POLL =
  "this box has a key: its polls are signed by it (publicKey, keyTimestamp, keySignature), and this one is not, or not within 120 s of the server's clock (set the box's clock: NTP)"
export const REPLAYED_POLL = "this poll's signature was already used: each poll is signed afresh"
export const UNSIGNED_HEALTH = "this poll's health is not signed by the box's key (healthSignature over the serverId, keyTimestamp and health)"

/** How many boxes' last signed poll times are kept to refuse a signed poll sent again (a query copied from a log). */
const SIGNED_POLLS_KEPT = 100_000

/** A box's clock as this process last measured it, and whether it was skewed when last written. */
interface ClockMeasure {
  offsetMs: number
  /** Undefined: not written by this process yet (after a restart the stored state is unknown). */
  skewedWritten: boolean | undefined
}

/** Sets `key` in a map kept to `limit` entries, the oldest going first. */
function setBounded<V>(map: Map<string, V>, key: string, value: V, limit: number): void {
  map.delete(key)
  if (map.size >= limit) map.delete(map.keys().next().value!)
  map.set(key, value)
}

/** RFC 9110 section 13.1.2: a list of entity tags, weak ones compared weakly, or `*`. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  if (header === etag) return true
  return header.split(',').some((tag) => {
    const t = tag.trim()
    return t === '*' || t.replace(/^W\//, '') === etag
  })
}

/** What a pending claim's serverId polls: no token, no area, no configuration. */
const CLAIM_ANSWER: ReplayServerStatusAnswer = { status: 'PENDING' }

export class StatusPolls {
  /**
   * Answers by serverId, oldest first: hashing the serverId on every poll cost about 3% of a poll's
   * time, so it is hashed only to read the record. Only boxes that exist are kept, so unknown
   * serverIds cannot grow it; the serverIds stay in this process's memory, never on disk or in the log.
   */
  private readonly entries = new Map<string, Entry>()
  /** The status change counter last read; when it moves, every entry is out of date. */
  private changes = -1
  /** By record id, the timestamp of the last signed poll taken (epoch ms), oldest first. */
  private readonly signedPolls = new Map<string, number>()
  /**
   * By record id, each box's clock offset as last measured. Written only with a report or when it
   * crosses CLOCK_SKEW_LIMIT_SECONDS, so that a poll without a report stays free of writes.
   */
  private readonly clocks = new Map<string, ClockMeasure>()
  /** By record id, what this process last wrote of each box's health. */
  private readonly healthWritten = new Map<string, WrittenHealth>()
  /** By record id, the latest report that changed no state, written with the next flush. */
  private readonly unrecordedHealth = new Map<string, HealthFigures>()
  /** By record id, the latest poll of each box polled since the last flush. */
  private readonly unrecorded = new Map<string, Entry>()
  /** The status change count read that polls arriving now will share, until it starts. */
  private nextChangesRead: Promise<number> | null = null
  private flushing: Promise<void> = Promise.resolve()
  private readonly timer: NodeJS.Timeout

  constructor(
    private readonly db: Db,
    private readonly deps: Pick<ReplayServerDeps, 'clock' | 'tokenKey' | 'pollIntervalSeconds'> & {
      clubTimezone: string
      /** REPLAY_SERVER_DISK_FLOOR_PERCENT: a report's disk under it is LOW. */
      diskFloorPercent: number
    },
    private readonly options: StatusPollsOptions
  ) {
    this.timer = setInterval(() => {
      this.flush().catch((err: unknown) => options.log.warn({ err }, 'writing status poll sightings failed; retrying'))
    }, options.flushIntervalMs)
    // Pending sightings alone must not keep the process alive; close() writes them.
    this.timer.unref()
  }

  /** How many answers are kept. */
  get size(): number {
    return this.entries.size
  }

  /**
   * A box's poll: its answer, and a sighting written with the next flush (a changed report at once:
   * then `changed`, which the request line is logged for). An unknown or superseded serverId is a
   * 404, which tells the box to register again.
   */
  async poll(serverId: string, reported: ReplayServerStatusQuery, address: string): Promise<{ answer: ReplayServerStatusAnswer; changed: boolean }> {
    // Checked before anything is read or written: a report that is not one is a 400 and changes nothing.
    const health = reported.health === undefined ? undefined : parseHealthReport(reported.health)
    const changes = await this.statusChanges()
    let changed = false
    const entry = this.kept(serverId, changes) ?? (await this.load(serverId, changes, () => (changed = true)))
    // A pending claim's serverId: PENDING and nothing else until an admin decides (never kept: rare).
    if (entry === null) return { answer: CLAIM_ANSWER, changed }
    const now = this.deps.clock.now()
    // A box with a key is answered (its token, its configuration) and heard (its serverUrl, its
    // address) only in polls its key signs, each signature once.
    if (entry.row.public_key !== null) {
      if (!signedByBoxKey(entry.row, serverId, reported, now)) throw new UnauthorizedError(UNSIGNED_POLL, 'BoxKey')
      // Before the signature is taken as used: a report swapped into a box's signed poll is refused and the box's own poll still counts.
      if (health !== undefined && !signsHealth(serverId, reported)) throw new UnauthorizedError(UNSIGNED_HEALTH, 'BoxKey')
      this.checkFresh(entry.row.id, reported.keyTimestamp!)
      // Health only from a poll the box's key signs: a keyless record's serverId is its only secret,
      // and it is in the status path (a proxy's access log), so whoever read it could otherwise report
      // the cameras FAILED and turn the court's players away. A keyless box's report is ignored.
      const offsetMs = measuredClockOffsetMs(reported, now)
      if (health !== undefined) {
        await this.report(entry.row.id, health, offsetMs, now)
      } else if (offsetMs !== null) {
        await this.noteClock(entry.row.id, offsetMs, now)
      }
    }
    // A record from before the box had a key adopts the one this poll proves it holds, once, and only
    // from the address its polls have come from for a while (adoptsFrom). The key is no part of the
    // answer and moves no counter: the kept entry goes, so the next poll sees it.
    if (offersKey(entry.row, reported) && this.adoptsFrom(entry.row, address, now) && provesPolledKey(serverId, reported, now)) {
      if (await adoptPolledKey(this.db, entry.row, reported.publicKey!, address, now)) {
        this.entries.delete(serverId)
        changed = true
      }
    }
    const report = reportedChanges(entry.row, reported, address)
    if (report) {
      // Rare (a new version or address): the write also moves the change counter, so the next poll
      // reads the record afresh. The poll's own address is no part of the answer and moves no
      // counter: the kept entry goes instead, or every later poll would write it again.
      await recordReport(this.db, entry.row, report, now, this.deps.pollIntervalSeconds)
      if (report.poll_address !== undefined) this.entries.delete(serverId)
      changed = true
    } else {
      this.sighted(entry, now)
    }
    // The one part that depends on the poll: whether the version it reports is the target. Made
    // afresh for each poll of a box with an update pending (few, and it depends on the clock and the
    // events on its courts); the ETag is still the hash of exactly what is sent.
    const target = updateTargetOf(report ? { ...entry.row, ...report } : entry.row, reported.version)
    if (target) {
      const pendingUpdate = await pendingUpdateFor(this.db, entry.row, target, reported, now, this.deps.clubTimezone)
      return { answer: pendingUpdate ? { ...entry.answer, pendingUpdate } : entry.answer, changed }
    }
    // The kept object itself, so its text and ETag are made once.
    return { answer: entry.answer, changed }
  }

  /**
   * Whether a keyless record may adopt a key from a poll from `address`: the address its polls come
   * from, vouched for (not a forwarded one), and held for three poll intervals. Whoever read the
   * serverId (it is in the status path, so in a proxy's access log) could otherwise poll once from
   * anywhere, so that their address is the recorded one, and adopt their own key with the next poll;
   * the box itself, polling meanwhile, moves the address back. An admin can still give a record a
   * key: the box registers with a proof, and the claim it leaves is accepted.
   */
  private adoptsFrom(row: PollRow, address: string, now: Date): boolean {
    if (address !== row.poll_address || address.endsWith('(forwarded, not verified)')) return false
    const since = row.poll_address_since === null ? 0 : Date.parse(row.poll_address_since)
    return since <= now.getTime() - 3 * this.deps.pollIntervalSeconds * 1000
  }

  /**
   * A signed poll's health report. A change of state (a camera's state or problem, the disk under its
   * floor, the clock past its limit) is written at once, with the history; a report that changes
   * none, the usual one, is held like a sighting and written with the next flush, in one statement
   * for every box, so that a poll with a report costs little more than one without.
   */
  private async report(replayServerId: string, health: BoxHealthReport, offsetMs: number | null, now: Date): Promise<void> {
    const last = this.healthWritten.get(replayServerId)
    const offset = offsetMs ?? this.clocks.get(replayServerId)?.offsetMs ?? last?.offsetMs ?? null
    if (offsetMs !== null) setBounded(this.clocks, replayServerId, { offsetMs, skewedWritten: isSkewed(offsetMs) }, SIGNED_POLLS_KEPT)
    if (last && last.states === healthStates(health, offset, this.deps.diskFloorPercent)) {
      this.unrecordedHealth.set(replayServerId, { replayServerId, report: health, offsetMs: offset, at: now, written: last })
      return
    }
    this.unrecordedHealth.delete(replayServerId)
    setBounded(this.healthWritten, replayServerId, await recordHealth(this.db, replayServerId, health, offset, now, this.deps.diskFloorPercent), SIGNED_POLLS_KEPT)
  }

  /**
   * A clock offset measured by a poll without a report: kept in memory, written only when it crosses
   * CLOCK_SKEW_LIMIT_SECONDS. After a restart the stored state is unknown here: a skewed clock is
   * written once, a good one waits for the box's next report (every few minutes at most), so that a
   * restart does not write every box at once.
   */
  private async noteClock(replayServerId: string, offsetMs: number, now: Date): Promise<void> {
    const skewed = isSkewed(offsetMs)
    const last = this.clocks.get(replayServerId)
    if ((last?.skewedWritten ?? false) === skewed) {
      if (last) last.offsetMs = offsetMs
      else setBounded(this.clocks, replayServerId, { offsetMs, skewedWritten: undefined }, SIGNED_POLLS_KEPT)
      return
    }
    setBounded(this.clocks, replayServerId, { offsetMs, skewedWritten: last?.skewedWritten }, SIGNED_POLLS_KEPT)
    await recordClockOffset(this.db, replayServerId, offsetMs, now)
    this.clocks.get(replayServerId)!.skewedWritten = skewed
  }

  /** Refuses a signed poll not newer than the last one this process took from the box (a query copied and sent again). */
  private checkFresh(replayServerId: string, keyTimestamp: string): void {
    const at = Date.parse(keyTimestamp)
    const last = this.signedPolls.get(replayServerId)
    if (last !== undefined && at <= last) throw new UnauthorizedError(REPLAYED_POLL, 'BoxKey')
    this.signedPolls.delete(replayServerId)
    if (this.signedPolls.size >= SIGNED_POLLS_KEPT) this.signedPolls.delete(this.signedPolls.keys().next().value!)
    this.signedPolls.set(replayServerId, at)
  }

  /**
   * The kept answer of a poll that may be answered "not modified" before the route validates
   * anything, or undefined when the poll needs the full route. Most polls carry the ETag of what the
   * box already has and report what is already recorded; the route compares the ETag the kept answer
   * was sent with and, when it matches, notes the sighting (notedUnchanged), at less than the cost of
   * a full poll. Only a box that exists, and only when the query holds nothing but the reported
   * fields, each a single value equal to the record's (nothing to write, nothing unvalidated kept).
   */
  async keptAnswer(serverId: string, query: unknown, address: string): Promise<ReplayServerStatusAnswer | undefined> {
    if (!this.entries.has(serverId)) return undefined
    const reported = query as Record<string, unknown>
    for (const key in reported) {
      if (!REPORTED_FIELDS.has(key) || typeof reported[key] !== 'string') return undefined
    }
    // Validated here, since this path skips the route's validation: anything else goes there.
    if (reported.roundTripMs !== undefined && !/^\d{1,6}$/.test(reported.roundTripMs as string)) return undefined
    const entry = this.kept(serverId, await this.statusChanges())
    if (!entry || reportedChanges(entry.row, reported as ReplayServerStatusQuery, address)) return undefined
    // A key to adopt goes to the full route, which checks its signature, as does a poll its box's key
    // does not sign (refused there): nothing unsigned counts as a sighting of a box with a key.
    if (offersKey(entry.row, reported as ReplayServerStatusQuery)) return undefined
    if (entry.row.public_key !== null && !signedByBoxKey(entry.row, serverId, reported as ReplayServerStatusQuery, this.deps.clock.now())) return undefined
    // A box with an update pending goes to the full route: its answer is made per poll.
    if (updateTargetOf(entry.row, reported.version as string | undefined)) return undefined
    return entry.answer
  }

  /**
   * A poll answered "not modified" from keptAnswer (in the same callback, with its query): its
   * sighting goes with the next flush, and its box's clock is measured (signed polls only).
   */
  notedUnchanged(serverId: string, query: unknown): void {
    const entry = this.entries.get(serverId)
    if (!entry) return
    const now = this.deps.clock.now()
    this.sighted(entry, now)
    if (entry.row.public_key === null) return
    const reported = query as Record<string, string | undefined>
    // Only a signature newer than the last this process took: the same query sent again (copied from a
    // log) would otherwise measure the clock as far behind as the copy is old.
    const signedAt = Date.parse(reported.keyTimestamp!)
    const last = this.signedPolls.get(entry.row.id)
    if (last !== undefined && signedAt <= last) return
    setBounded(this.signedPolls, entry.row.id, signedAt, SIGNED_POLLS_KEPT)
    const roundTripMs = reported.roundTripMs === undefined ? undefined : Number(reported.roundTripMs)
    const offsetMs = measuredClockOffsetMs({ keyTimestamp: reported.keyTimestamp, roundTripMs }, now)
    if (offsetMs === null) return
    this.noteClock(entry.row.id, offsetMs, now).catch((err: unknown) => this.options.log.warn({ err }, "writing a box's clock offset failed"))
  }

  /** A poll of a kept answer that reported nothing new: its lastSeenAt goes with the next flush. */
  private sighted(entry: Entry, now: Date): void {
    entry.seenAt = now.getTime()
    this.unrecorded.set(entry.row.id, entry)
  }

  /** The kept answer, when nothing changed since it was read (`changes` is the count read for this poll). */
  private kept(serverId: string, changes: number): Entry | undefined {
    if (changes !== this.changes) {
      this.entries.clear()
      this.changes = changes
    }
    const kept = this.entries.get(serverId)
    // Checked per entry too: polls interleave, and one may have filled an entry under an older count.
    return kept?.changes === changes ? kept : undefined
  }

  /** The record read afresh, and kept. */
  private async load(serverId: string, changes: number, onWrite: () => void): Promise<Entry | null> {
    const row = await findPolledReplayServer(this.db, sha256Hex(serverId))
    if (row === null) return null
    // Read with the record, so the answer is kept until a change moves the counter (0024's triggers
    // move it for every interval added, changed or removed). An interval that ends while kept stays in
    // the answer: the box compares with its own clock, so it costs nothing but a few bytes.
    const doNotFilm = row.status === 'APPROVED' && row.area_id !== null ? await doNotFilmOfArea(this.db, row.area_id, this.deps.clock.now()) : []
    // Footage taken down that this box has not confirmed deleting (0033's triggers move the counter).
    const footageTakedowns = row.status === 'APPROVED' && row.area_id !== null ? await footageTakedownsOfBox(this.db, row.id) : []
    const { answer, tokenHash } = statusAnswerOf(row, this.deps.tokenKey, doNotFilm, footageTakedowns)
    if (tokenHash !== row.token_hash) {
      // DEVICE_TOKEN_SECRET changed: the token the box is now given must be the one that works.
      await recordReport(this.db, row, { token_hash: tokenHash }, this.deps.clock.now(), this.deps.pollIntervalSeconds)
      onWrite()
    }
    // Tagged with the counter read BEFORE the record: a change that lands in between moves the
    // counter past the tag, so the next poll reads the record again.
    const entry: Entry = { changes, row, answer, seenAt: 0 }
    if (this.options.maxEntries > 0) {
      // The longest kept goes first. Not least recently used: moving an entry on every hit cost more
      // than it saves, since every box polls at the same interval.
      if (!this.entries.has(serverId) && this.entries.size >= this.options.maxEntries) {
        this.entries.delete(this.entries.keys().next().value!)
      }
      this.entries.set(serverId, entry)
    }
    return entry
  }

  /**
   * The status change count, read after this call. Under load, reading it cost more than the rest of
   * the poll, and many polls arrive in one turn of the event loop: they all share one read, made on
   * the next turn (setImmediate). Each poll still sees every change committed before it arrived,
   * because the read it shares starts after that.
   */
  private statusChanges(): Promise<number> {
    this.nextChangesRead ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.nextChangesRead = null
      return replayServerStatusChanges(this.db)
    })
    return this.nextChangesRead
  }

  /** Writes the sightings held in memory. Flushes run one after another; this one waits for those before. */
  flush(): Promise<void> {
    const run = this.flushing.then(() => this.writeSightings())
    this.flushing = run.catch(() => undefined)
    return run
  }

  private async writeSightings(): Promise<void> {
    await this.writeHealth()
    if (this.unrecorded.size === 0) return
    const entries = [...this.unrecorded.values()]
    const sightings = entries.map((entry) => ({ replayServer: entry.row, seenAt: new Date(entry.seenAt) }))
    this.unrecorded.clear()
    try {
      await recordSightings(this.db, sightings)
    } catch (err) {
      // Kept for the next flush, unless the box was polled again meanwhile.
      for (const entry of entries) if (!this.unrecorded.has(entry.row.id)) this.unrecorded.set(entry.row.id, entry)
      throw err
    }
  }

  /** Writes the health reports held in memory; one another process has written over since is dropped (see recordHealthFigures). */
  private async writeHealth(): Promise<void> {
    if (this.unrecordedHealth.size === 0) return
    const batch = [...this.unrecordedHealth.values()]
    this.unrecordedHealth.clear()
    let written: Set<string>
    try {
      written = await recordHealthFigures(this.db, batch)
    } catch (err) {
      // The next report of each goes the whole way.
      for (const figures of batch) this.healthWritten.delete(figures.replayServerId)
      throw err
    }
    for (const figures of batch) {
      if (!written.has(figures.replayServerId)) this.healthWritten.delete(figures.replayServerId)
      else if (this.healthWritten.get(figures.replayServerId) === figures.written) {
        this.healthWritten.set(figures.replayServerId, { ...figures.written, offsetMs: figures.offsetMs, reportedAt: figures.at.toISOString() })
      }
    }
  }

  /** Stops the timer and writes what is left. Call before the database closes. */
  async close(): Promise<void> {
    clearInterval(this.timer)
    await this.flush()
  }
}
