// A replay as the API shows it, the dependencies every replay rule takes, and the few steps the
// player's side (service.ts), the box's side (device.ts) and the clip's life (clips.ts) share: the
// event written with each change, the package item given back, the clip deleted from its bucket.
import type { Chapter, EventType, Replay, ReplayStatus } from '@club/contract'
import { isStaff } from '../actor.js'
import type { Clock } from '../clock.js'
import type { DbOrTx } from '../db/database.js'
import type { ReplaysTable } from '../db/schema.js'
import { BadGatewayError, quote } from '../errors.js'
import { recordEvent } from '../events/outbox.js'
import { type Viewer } from '../footage-access/service.js'
import { returnUndeliveredIn, type RedemptionDeps } from '../packages/redemptions.js'
import { parseConfig } from '../replay-servers/service.js'
import { BucketError } from '@club/storage'
import { chaptersOfMatches } from '../matches/chapters.js'
import type { ReplayStorage } from './storage.js'

export interface ReplaySettings {
  defaultSeconds: number
  maxSeconds: number
  /** How far back a member's or guest's replay may end (REPLAY_MAX_AGE_SECONDS). */
  maxAgeSeconds: number
  urlTtlSeconds: number
  requestTimeoutSeconds: number
  requirePackage: boolean
  /** MATCH_REQUIRES_PACKAGE: a match's angle has a link only for who paid to open it (matches/service.ts). */
  matchRequiresPackage: boolean
  /** REPLAY_POLL_INTERVAL_SECONDS: whether a box is online (its camera's health is current), and a 503's Retry-After. */
  pollIntervalSeconds: number
}

export interface ReplayDeps {
  clock: Clock
  settings: ReplaySettings
  redemption: RedemptionDeps
  storage: ReplayStorage
}

/**
 * Who asks: a signed-in user (an Actor), or a guest of a court page (REPLAYS_GUEST), who sees only the
 * replays made with their token and pays with no package item.
 */
export type Requester = Viewer['who']

export const isGuest = (requester: Requester): requester is { guestId: string } => 'guestId' in requester

export const PATH = '/apis/v2/replays'
/** Statuses a box still has work to do in. */
export const IN_PROGRESS: ReplayStatus[] = ['REQUESTED', 'EXPORTING', 'UPLOADING']
export const FINAL: ReplayStatus[] = ['READY', 'FAILED', 'EXPIRED', 'TAKEN_DOWN']

/**
 * What a replay's takedown shows: when, to everyone who sees the replay; who and why only to staff
 * (the reason may be about someone else in the picture, and names the member of staff).
 */
function takedownOf(row: ReplaysTable, requester: Requester | null): Replay['takedown'] {
  if (row.taken_down_at === null) return undefined
  if (requester === null || isGuest(requester) || !isStaff(requester)) return { date: row.taken_down_at }
  return { date: row.taken_down_at, by: row.taken_down_by === null ? null : { id: row.taken_down_by }, reason: row.taken_down_reason ?? '' }
}

/**
 * The one row → API shape mapping; the download link is added by the caller when READY, and a MATCH
 * angle's chapters (as the requester may see them: matches/chapters.ts). `requester` null: the
 * command line, which sees what staff see.
 */
export function toReplay(row: ReplaysTable, requester: Requester | null, link?: { url: string; expiresAt: Date }, chapters?: Chapter[]): Replay {
  const takedown = takedownOf(row, requester)
  return {
    id: row.id,
    kind: row.kind,
    status: row.status,
    ...(row.reason !== null ? { reason: row.reason } : {}),
    user: row.user_id === null ? null : { id: row.user_id },
    court: { id: row.court_id },
    camera: { id: row.camera_id },
    start: row.start_at,
    end: row.end_at,
    durationSeconds: row.duration_seconds,
    sizeBytes: row.size_bytes,
    ...(row.match_id !== null ? { match: { id: row.match_id }, chapters: chapters ?? [] } : {}),
    ...(link ? { downloadUrl: link.url, downloadUrlExpiresAt: link.expiresAt.toISOString() } : {}),
    ...(takedown ? { takedown } : {}),
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: `${PATH}/${row.id}` } }
  }
}

/**
 * A replay event with the replay as GET shows it to staff, written in the change's transaction. No
 * download link: a link is signed for one viewer and handing it out is a look at the footage.
 */
export async function recordReplayEvent(tx: DbOrTx, id: string, type: Extract<EventType, `replay.${string}`>, now: Date): Promise<void> {
  const row = await tx.selectFrom('replays').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  const chapters = row.match_id === null ? undefined : (await chaptersOfMatches(tx, [row.match_id], null)).get(row.match_id)
  await recordEvent(tx, { type, resourceId: id, data: toReplay(row, null, undefined, chapters) }, now)
}

/** Gives back the package item an unfinished replay was paid with, in the transaction that ends it. */
export async function giveBack(tx: DbOrTx, row: Pick<ReplaysTable, 'user_id' | 'package_id' | 'redemption_id'>, deps: ReplayDeps): Promise<void> {
  if (row.package_id === null || row.redemption_id === null || row.user_id === null) return
  // As the holder: the package is theirs, so it is visible to them.
  await returnUndeliveredIn(tx, row.package_id, row.redemption_id, { id: row.user_id, role: 'member' }, deps.redemption.clock)
}

/**
 * The bucket a replay's clip was stored in: as recorded when it was reported READY, or (a replay made
 * READY before migration 0023) its box's bucket now; null when neither is known.
 */
export async function clipBucket(db: DbOrTx, row: Pick<ReplaysTable, 'bucket' | 'replay_server_id'>): Promise<string | null> {
  if (row.bucket !== null || row.replay_server_id === null) return row.bucket
  const box = await db.selectFrom('replay_servers').select('config').where('id', '=', row.replay_server_id).executeTakeFirst()
  return parseConfig(box?.config ?? null)?.cloudStorageBucket ?? null
}

/**
 * Deletes a replay's stored clip now, or a 502 that says the bucket would not (nothing else changed).
 * Never an object another replay's row names (rows from before locations were checked against the
 * replay's own key may share one): that clip is its owner's.
 */
export async function removeClip(db: DbOrTx, row: Pick<ReplaysTable, 'id' | 'location' | 'bucket' | 'replay_server_id'>, deps: ReplayDeps): Promise<void> {
  if (row.location === null) return
  const another = await db.selectFrom('replays').select('id').where('location', '=', row.location).where('id', '<>', row.id).executeTakeFirst()
  if (another) return
  try {
    await deps.storage.remove(row.location, await clipBucket(db, row))
  } catch (err) {
    // The bucket's own words may name its credentials' account; only what kind of failure it was.
    const why = err instanceof BucketError ? err.message : (err as Error).name
    throw new BadGatewayError(`the clip of replay ${quote(row.id)} could not be deleted from its bucket now (${why}): try again`)
  }
}

