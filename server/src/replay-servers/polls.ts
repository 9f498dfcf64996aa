// A recording box's status poll, its reads and writes: the hottest path there is (every box, every few
// seconds). The poll's answer, what a box reports, when it was seen, a box key adopted from a poll.
import { sql } from 'kysely'
import { type DoNotFilm, type FootageTakedownOrder, type ReplayServerStatusAnswer, type ReplayServerStatusQuery } from '@club/contract'
import { sha256Hex } from '../crypto.js'
import { compiledOnce, runCompiled } from '../db/compiled.js'
import type { Db, DbOrTx } from '../db/database.js'
import { greatest, jsonArrayElements, rowLocked } from '../db/sql.js'
import type { ReplayServersTable } from '../db/schema.js'
import { NotFoundError } from '../errors.js'
import { isPendingClaim } from './claims.js'

import { EMPTY_CONFIG, deviceAccessToken, parseConfig, recordReplayServerEvent } from './service.js'

/** The status poll's look-up by serverId hash: every column its answer and its sighting check read. */
const pollLookup = (db: DbOrTx, serverIdHash: string) =>
  db
    .selectFrom('replay_servers')
    .select([
      'id',
      'server_id_hash',
      'token_generation',
      'token_hash',
      'status',
      'version',
      'server_url',
      'local_ip',
      'poll_address',
      'poll_address_since',
      'area_id',
      'config',
      'target_version',
      'architecture',
      'update_window',
      'update_state',
      'update_version',
      'update_reason',
      'public_key',
      // Replays waiting for this box (migration 0015's triggers move the status change counter when
      // one starts or stops waiting, so this is read only when the kept answer is out of date).
      sql<number>`(select count(*) from replays where replays.replay_server_id = replay_servers.id and replays.status = 'REQUESTED')`.as(
        'replay_requests'
      )
    ])
    .where('server_id_hash', '=', serverIdHash)

export type PollRow = Awaited<ReturnType<ReturnType<typeof pollLookup>['executeTakeFirstOrThrow']>>

/** The poll is the hottest path there is (every box, every few seconds): compiled once (db/compiled.ts). */
const pollQuery = compiledOnce((db) => pollLookup(db, ''))
const statusChangesQuery = compiledOnce((db) => db.selectFrom('replay_server_status_changes').select('counter').where('id', '=', 1))

/**
 * The box a poll's serverId (by its hash) belongs to; null for a pending claim's serverId (its polls
 * answer PENDING and change nothing); else a 404 that tells the box to register again.
 */
export async function findPolledReplayServer(db: Db, serverIdHash: string): Promise<PollRow | null> {
  const row = (await runCompiled(db, pollQuery, [serverIdHash]))[0]
  if (row) return row
  if (await isPendingClaim(db, serverIdHash)) return null
  throw new NotFoundError('no replay server has this serverId: register again')
}

/**
 * A number that moves whenever anything a status answer is made of changes, through any connection
 * (migration 0008's triggers): answers kept in memory hold while it stands still.
 */
export async function replayServerStatusChanges(db: Db): Promise<number> {
  return (await runCompiled(db, statusChangesQuery, [1]))[0]!.counter
}

/**
 * A box's status answer, all but pendingUpdate (which depends on the version each poll reports: see
 * pendingUpdateOf), and the hash its access token must have in the database.
 */
export function statusAnswerOf(
  row: PollRow,
  tokenKey: string,
  doNotFilm: readonly DoNotFilm[] = [],
  footageTakedowns: readonly FootageTakedownOrder[] = []
): { answer: ReplayServerStatusAnswer; tokenHash: string } {
  if (row.status !== 'APPROVED' || row.area_id === null) return { answer: { status: row.status }, tokenHash: row.token_hash }
  const accessToken = deviceAccessToken(tokenKey, row)
  return {
    answer: {
      status: row.status,
      accessToken,
      area: { id: row.area_id },
      config: parseConfig(row.config) ?? EMPTY_CONFIG,
      // Absent when none wait, so an idle box's answer (and its ETag) is what it always was.
      ...(row.replay_requests > 0 ? { replayRequests: row.replay_requests } : {}),
      // Absent when none, for the same reason.
      ...(doNotFilm.length > 0 ? { doNotFilm: [...doNotFilm] } : {}),
      ...(footageTakedowns.length > 0 ? { footageTakedowns: [...footageTakedowns] } : {})
    },
    // Differs from the stored one only after DEVICE_TOKEN_SECRET changed: the token in use becomes the new key's.
    tokenHash: sha256Hex(accessToken)
  }
}

/** What a poll writes besides lastSeenAt: what the box reports, or the hash of the token it is given. */
export type PollReport = Partial<
  Pick<
    ReplayServersTable,
    'version' | 'server_url' | 'local_ip' | 'poll_address' | 'token_hash' | 'architecture' | 'update_state' | 'update_version' | 'update_reason'
  >
>

/**
 * What a poll reports that the record does not hold yet, or null. The update's state is what the box
 * says now: a poll without one (nothing under way, nothing failed) clears it, but only a poll that
 * reports its version, so a box too old to report updates leaves an admin's view alone. `address` is
 * where the poll came from (the only part the box cannot choose), recorded for the calls to the box.
 */
export function reportedChanges(row: PollRow, reported: ReplayServerStatusQuery, address: string): PollReport | null {
  const version = reported.version !== undefined && reported.version !== row.version
  const serverUrl = reported.serverUrl !== undefined && reported.serverUrl !== row.server_url
  const localIp = reported.localIp !== undefined && reported.localIp !== row.local_ip
  const architecture = reported.architecture !== undefined && reported.architecture !== row.architecture
  const reportsUpdates = reported.architecture !== undefined
  const update = reportsUpdates
    ? { update_state: reported.updateState ?? null, update_version: reported.updateVersion ?? null, update_reason: reported.updateReason ?? null }
    : undefined
  const updateChanged =
    update !== undefined &&
    (update.update_state !== row.update_state || update.update_version !== row.update_version || update.update_reason !== row.update_reason)
  const moved = address !== row.poll_address
  // Nothing allocated for the usual poll, which reports what is already recorded.
  if (!version && !serverUrl && !localIp && !architecture && !updateChanged && !moved) return null
  return {
    ...(moved ? { poll_address: address } : {}),
    ...(version ? { version: reported.version } : {}),
    ...(serverUrl ? { server_url: reported.serverUrl } : {}),
    ...(localIp ? { local_ip: reported.localIp } : {}),
    ...(architecture ? { architecture: reported.architecture } : {}),
    ...(updateChanged ? update : {})
  }
}

/** The record a sighting belongs to: it counts only while the serverId and token it was seen with are current. */
export type SightedReplayServer = Pick<PollRow, 'id' | 'server_id_hash' | 'token_generation'>

/**
 * Writes a poll's changed report with its sighting, at once: the admin sees a new version or address
 * without waiting for the next batch of sightings.
 */
export async function recordReport(db: Db, row: SightedReplayServer, changes: PollReport, seenAt: Date, pollIntervalSeconds: number): Promise<void> {
  // An update the box reports failed or rolled back is told to integrators with the report that says so.
  const told = ({ FAILED: 'replay_server.update_failed', ROLLED_BACK: 'replay_server.rolled_back' } as const)[changes.update_state as 'FAILED' | 'ROLLED_BACK']
  // One conditional update of the record's row: it waits for an admin's change holding the row
  // (change), then applies only if that change left the serverId and token generation as read.
  await rowLocked(db, async (tx) => {
    const done = await tx
      .updateTable('replay_servers')
      // A new address is held from now (a record without a key adopts one only from an address held a while).
      .set({ ...changes, ...(changes.poll_address !== undefined ? { poll_address_since: seenAt.toISOString() } : {}), last_seen_at: seenAt.toISOString() })
      .where('id', '=', row.id)
      // An admin's change between the read and this write (rotation, re-registration) wins: this poll's
      // report is dropped rather than bringing back the token hash it replaced.
      .where('server_id_hash', '=', row.server_id_hash)
      .where('token_generation', '=', row.token_generation)
      .executeTakeFirst()
    if (told && Number(done.numUpdatedRows) === 1) await recordReplayServerEvent(tx, row.id, told, seenAt, pollIntervalSeconds)
  })
}

/**
 * A record without a key adopts the key a poll of its current serverId proved (provesPolledKey), with
 * when and from where. Its own statement, conditional on the record still having no key and that
 * serverId: "once" holds across processes, and a key is never replaced by a poll. Answers whether it did.
 */
export async function adoptPolledKey(db: Db, row: SightedReplayServer, publicKey: string, address: string, at: Date): Promise<boolean> {
  const result = await db
    .updateTable('replay_servers')
    .set({ public_key: publicKey, key_adopted_at: at.toISOString(), key_adopted_from: address })
    .where('id', '=', row.id)
    .where('server_id_hash', '=', row.server_id_hash)
    .where('public_key', 'is', null)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) === 1
}

/**
 * Writes a batch of sightings (lastSeenAt) in one statement. Like recordReport, a sighting of a
 * superseded serverId or token generation is dropped; lastSeenAt never moves back.
 */
export async function recordSightings(db: Db, sightings: Array<{ replayServer: SightedReplayServer; seenAt: Date }>): Promise<void> {
  if (sightings.length === 0) return
  const batch = JSON.stringify(
    sightings.map(({ replayServer: r, seenAt }) => [r.id, r.server_id_hash, r.token_generation, seenAt.toISOString()])
  )
  await sql`
    update replay_servers set last_seen_at = ${greatest(db, sql`coalesce(last_seen_at, '')`, sql`s.value ->> 3`)}
    from ${jsonArrayElements(db, batch, 's')}
    where replay_servers.id = s.value ->> 0
      and replay_servers.server_id_hash = s.value ->> 1
      and replay_servers.token_generation = cast(s.value ->> 2 as bigint)`.execute(db)
}

