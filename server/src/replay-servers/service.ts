// Replay servers (a venue's recording boxes): registration, status polls, the admin's decisions and
// the camera configuration. The serverId is the box's secret for the status call and is kept only as
// SHA-256; the access token is derived (see deviceAccessToken) and kept only as SHA-256.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import {
  type EventType,
  ReplayServerConfig,
  ReplayServerTargetVersion,
  type DoNotFilm,
  type ReplayServer,
  type ReplayServerApproval,
  type ReplayServerListQuery,
  type ReplayServerRegistration,
  type ReplayServerRegistrationRequest,
  type ReplayServerStatus,
  type ReplayServerStatusAnswer,
  type ReplayServerStatusQuery
} from '@club/contract'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import { hmacSha256Hex, randomToken, sha256Hex } from '../crypto.js'
import { serverKey } from '../server-keys.js'
import { compiledOnce, runCompiled } from '../db/compiled.js'
import type { Db, DbOrTx } from '../db/database.js'
import { forUpdate, greatest, jsonArrayElements, rowLocked } from '../db/sql.js'
import type { ReplayServerClaimsTable, ReplayServersTable } from '../db/schema.js'
import { BadRequestError, ConflictError, NotFoundError, UnauthorizedError, quote } from '../errors.js'
import { recordEvent } from '../events/outbox.js'
import { paged, pageRequest } from '../paging.js'
import { valueValidator } from '../plugins/validation.js'
import { findRelease, refuseBuildMetadata } from '../agent-releases/service.js'
import { checkKeyInput, checkKeyProof, claimsOf, isPendingClaim, keyFingerprint, recordClaim, REPLAYED, toReplayServerClaim } from './claims.js'

/** A box's stored configuration (written by setReplayServerConfig after the contract checked it), or null. */
export function parseConfig(json: string | null): ReplayServerConfig | null {
  return json === null ? null : (JSON.parse(json) as ReplayServerConfig)
}

export interface ReplayServerDeps {
  clock: Clock
  /** The key device access tokens are derived from (deviceTokenKey). */
  tokenKey: string
  pollIntervalSeconds: number
  /**
   * Sightings this process's status polls hold in memory (see StatusPolls): written before an admin
   * reads or changes a record, so that lastSeenAt and online are exact there. None in the CLI.
   */
  unrecordedSightings?: { flush(): Promise<void> }
}

type Row = Omit<ReplayServersTable, 'token_generation' | 'online_told'> & { token_generation: number; online_told: number | null }

const ADMIN_PATH = '/apis/v2/admin/replay-servers'
const TOKEN_KEY_SETTING = 'device_token_key'

/** What a box runs before an admin configures it: nothing to record. */
const EMPTY_CONFIG: ReplayServerConfig = { cleanupEnabled: false, cameras: [] }

/**
 * The key device tokens are derived from: DEVICE_TOKEN_SECRET, or else a random key generated once
 * and kept in the settings table so tokens survive restarts. Setting DEVICE_TOKEN_SECRET is the safer
 * choice: then a copy of the database alone does not yield any device's token.
 */
export async function deviceTokenKey(db: Db, config: Pick<Config, 'DEVICE_TOKEN_SECRET'>, clock: Clock): Promise<string> {
  return serverKey(db, config.DEVICE_TOKEN_SECRET, TOKEN_KEY_SETTING, clock)
}

/**
 * A box's access token. It must be shown on every APPROVED poll yet never be stored, and the server
 * must also be able to present it when it calls the box at its serverUrl, when no serverId is at
 * hand. So it is derived rather than stored: HMAC-SHA256 under a server-side key over the record id,
 * the hash of the current serverId and a generation. A new registration (new serverId) or a raised
 * generation (rotation, revocation, rejection) gives a new token, and the stored SHA-256 of the
 * token, which Bearer look-ups use, is replaced in the same write, so the old one fails at once.
 */
export function deviceAccessToken(tokenKey: string, row: Pick<Row, 'id' | 'server_id_hash' | 'token_generation'>): string {
  return hmacSha256Hex(tokenKey, `replay-server:${row.id}:${row.server_id_hash}:${row.token_generation}`)
}

function tokenHashOf(tokenKey: string, row: Pick<Row, 'id' | 'server_id_hash' | 'token_generation'>): string {
  return sha256Hex(deviceAccessToken(tokenKey, row))
}

/** The one row → API shape mapping: what an admin sees, with its pending claims. Never the serverId or the token. */
export function toReplayServer(row: Row, now: Date, pollIntervalSeconds: number, claims: ReplayServerClaimsTable[] = []): ReplayServer {
  return {
    id: row.id,
    deviceId: row.device_id,
    hostname: row.hostname,
    displayName: row.display_name,
    status: row.status,
    lastSeenAt: row.last_seen_at,
    online: row.last_seen_at !== null && row.last_seen_at >= onlineSince(now, pollIntervalSeconds),
    version: row.version,
    localIp: row.local_ip,
    serverUrl: row.server_url,
    area: row.area_id === null ? null : { id: row.area_id },
    config: parseConfig(row.config),
    targetVersion: row.target_version,
    architecture: row.architecture,
    updateWindow: row.update_window,
    updateState: row.update_state,
    updateVersion: row.update_version,
    updateReason: row.update_reason,
    keyFingerprint: row.public_key === null ? null : keyFingerprint(row.public_key),
    keyAdoptedDate: row.key_adopted_at,
    keyAdoptedFrom: row.key_adopted_from,
    claims: claims.map((claim) => toReplayServerClaim(claim, row.public_key)),
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: `${ADMIN_PATH}/${row.id}` } }
  }
}

/** A box is online when it polled within three poll intervals. ISO timestamps compare as text. */
export function onlineSince(now: Date, pollIntervalSeconds: number): string {
  return new Date(now.getTime() - 3 * pollIntervalSeconds * 1000).toISOString()
}

/** Where a registration came from, as the route sees it. */
export interface RegistrationOrigin {
  /** The client's address: a claim's source, and the address a proven box now polls from (see reportedChanges). */
  sourceIp: string
  /** This server's origin as the box addressed it (`https://club.example`): what a key proof must name. */
  audience: string
}

/**
 * Registers a box. A new deviceId is a new PENDING record, holding the box key when the registration
 * proves it. A known deviceId never changes its record on its own word (the deviceId is not secret):
 * only a registration that proves the box key the record holds replaces the serverId (the old one
 * and its token stop working) and the reported fields, keeping the status, area and configuration
 * (a revoked box goes back to PENDING). The record's key with a proof that fails is refused (400, or
 * 409 for a proof already used), storing nothing: the key is public, so such a registration is no
 * evidence of anything, and a box whose clock is off learns why. Any other registration is a pending
 * claim beside the record, answered PENDING with the record's display name, for an admin to decide.
 */
export async function registerReplayServer(
  db: Db,
  input: ReplayServerRegistrationRequest,
  origin: RegistrationOrigin,
  deps: ReplayServerDeps
): Promise<ReplayServerRegistration> {
  checkKeyInput(input)
  const { sourceIp } = origin
  const serverId = randomToken()
  const serverIdHash = sha256Hex(serverId)
  const clockNow = deps.clock.now()
  const now = clockNow.toISOString()
  const verdict = checkKeyProof(input, origin.audience, clockNow)
  const { status, displayName } = await db.transaction().execute(async (tx) => {
    const known = () => tx.selectFrom('replay_servers').selectAll().where('device_id', '=', input.deviceId).executeTakeFirst()
    let existing = await known()
    if (!existing) {
      const id = randomUUID()
      const key = { id, server_id_hash: serverIdHash, token_generation: 1 }
      const inserted = await tx
        .insertInto('replay_servers')
        .values({
          ...key,
          device_id: input.deviceId,
          token_hash: tokenHashOf(deps.tokenKey, key),
          status: 'PENDING',
          hostname: input.hostname ?? null,
          display_name: input.displayName ?? null,
          version: input.version ?? null,
          local_ip: input.localIp ?? null,
          server_url: input.serverUrl ?? null,
          poll_address: sourceIp,
          area_id: null,
          config: null,
          target_version: null,
          architecture: null,
          update_window: null,
          update_state: null,
          update_version: null,
          update_reason: null,
          // Only a key the registration proved: the public key is no secret, anyone could send the box's.
          public_key: verdict.proven ? input.publicKey! : null,
          key_proof_at: verdict.proven ? verdict.at : null,
          key_adopted_at: null,
          key_adopted_from: null,
          last_seen_at: now,
          created_at: now,
          updated_at: now
        })
        // Two first registrations of one deviceId at once: the second waits for the first to commit,
        // inserts nothing, and goes on as a registration of a known deviceId (a claim, or a proof).
        .onConflict((oc) => oc.column('device_id').doNothing())
        .executeTakeFirst()
      if (Number(inserted.numInsertedOrUpdatedRows) === 1) {
        await recordReplayServerEvent(tx, id, 'replay_server.registered', clockNow, deps.pollIntervalSeconds)
        return { status: 'PENDING' as const, displayName: input.displayName ?? null }
      }
      existing = (await known())!
    }
    const displayName = existing.display_name ?? input.displayName ?? null
    if (existing.public_key === null || input.publicKey !== existing.public_key) {
      await recordClaim(tx, existing.id, serverIdHash, input, verdict, sourceIp, now)
      return { status: 'PENDING' as const, displayName }
    }
    if (!verdict.proven) {
      throw new BadRequestError(`body.keyProof: ${verdict.problem ?? "missing: the box's own key is taken only with a proof of it"}`)
    }
    const at = verdict.at
    if (existing.key_proof_at !== null && at <= existing.key_proof_at) throw new ConflictError(`body.keyProof: ${REPLAYED}`)
    const status = await replaceByProof(tx, existing, { input, proofAt: at, serverIdHash, sourceIp, now, displayName }, deps)
    if (status === null) throw new ConflictError(`body.keyProof: ${REPLAYED}, or the box changed meanwhile: register again`)
    return { status, displayName }
  })
  return { serverId, status, pollInterval: deps.pollIntervalSeconds, ...(displayName !== null ? { displayName } : {}) }
}

/**
 * A proven registration's write: the new serverId (and so a new token) and what the box reports, over
 * the record as `existing` read it. Null when the record moved on since (an admin accepted a claim
 * with another key or serverId, or another proof of the same time or newer got there first), which
 * then wins: "once" holds across processes, whatever the database's locking.
 */
export async function replaceByProof(
  tx: DbOrTx,
  existing: Row,
  proven: { input: ReplayServerRegistrationRequest; proofAt: string; serverIdHash: string; sourceIp: string; now: string; displayName: string | null },
  deps: Pick<ReplayServerDeps, 'tokenKey'>
): Promise<ReplayServerStatus | null> {
  const { input, proofAt, serverIdHash, now } = proven
  if (existing.public_key === null) return null
  const key = { id: existing.id, server_id_hash: serverIdHash, token_generation: existing.token_generation + 1 }
  const status: ReplayServerStatus = existing.status === 'REVOKED' ? 'PENDING' : existing.status
  const replaced = await tx
    .updateTable('replay_servers')
    .set({
      server_id_hash: serverIdHash,
      token_generation: key.token_generation,
      token_hash: tokenHashOf(deps.tokenKey, key),
      status,
      display_name: proven.displayName,
      hostname: input.hostname ?? existing.hostname,
      version: input.version ?? existing.version,
      local_ip: input.localIp ?? existing.local_ip,
      server_url: input.serverUrl ?? existing.server_url,
      poll_address: proven.sourceIp,
      key_proof_at: proofAt,
      last_seen_at: now,
      updated_at: now
    })
    .where('id', '=', existing.id)
    .where('public_key', '=', existing.public_key)
    .where('server_id_hash', '=', existing.server_id_hash)
    .where((eb) => eb.or([eb('key_proof_at', 'is', null), eb('key_proof_at', '<', proofAt)]))
    .executeTakeFirst()
  return Number(replaced.numUpdatedRows) === 1 ? status : null
}

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
export function statusAnswerOf(row: PollRow, tokenKey: string, doNotFilm: readonly DoNotFilm[] = []): { answer: ReplayServerStatusAnswer; tokenHash: string } {
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
      ...(doNotFilm.length > 0 ? { doNotFilm: [...doNotFilm] } : {})
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
      .set({ ...changes, last_seen_at: seenAt.toISOString() })
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

export interface DevicePrincipal {
  replayServerId: string
  deviceId: string
  areaId: string
}

/** The approved box behind a device access token, or a 401. One indexed read, no slow hashing. */
export async function authenticateDeviceToken(db: DbOrTx, token: string): Promise<DevicePrincipal> {
  const row = await db
    .selectFrom('replay_servers')
    .select(['id', 'device_id', 'status', 'area_id'])
    .where('token_hash', '=', sha256Hex(token))
    .executeTakeFirst()
  if (!row || row.status !== 'APPROVED' || row.area_id === null) {
    throw new UnauthorizedError('the device token is not valid', 'Bearer error="invalid_token"')
  }
  return { replayServerId: row.id, deviceId: row.device_id, areaId: row.area_id }
}

/** A replay server event with the box as an admin's GET answers it, written in the change's transaction. */
export async function recordReplayServerEvent(
  tx: DbOrTx,
  id: string,
  type: Extract<EventType, `replay_server.${string}`>,
  now: Date,
  pollIntervalSeconds: number
): Promise<void> {
  const row = await findRow(tx, id)
  await recordEvent(tx, { type, resourceId: id, data: toReplayServer(row, now, pollIntervalSeconds, (await claimsOf(tx, [id])).get(id)) }, now)
}

/** The record, or a 404; `forUpdate`: locked until the transaction ends (see change). */
async function findRow(db: DbOrTx, id: string, options: { forUpdate?: boolean } = {}): Promise<Row> {
  const query = db.selectFrom('replay_servers').selectAll().where('id', '=', id)
  const row = await (options.forUpdate ? forUpdate(db, query) : query).executeTakeFirst()
  if (!row) throw new NotFoundError(`no replay server ${quote(id)}`)
  return row
}

export async function getReplayServer(db: DbOrTx, id: string, deps: ReplayServerDeps): Promise<ReplayServer> {
  await deps.unrecordedSightings?.flush()
  const row = await findRow(db, id)
  return toReplayServer(row, deps.clock.now(), deps.pollIntervalSeconds, (await claimsOf(db, [id])).get(id))
}

export async function listReplayServers(db: DbOrTx, query: ReplayServerListQuery, deps: ReplayServerDeps) {
  const request = pageRequest(query)
  await deps.unrecordedSightings?.flush()
  const now = deps.clock.now()
  const since = onlineSince(now, deps.pollIntervalSeconds)
  let filtered = db.selectFrom('replay_servers')
  if (query.status !== undefined) filtered = filtered.where('status', '=', query.status)
  if (query.deviceId !== undefined) filtered = filtered.where('device_id', '=', query.deviceId)
  if (query.updateState !== undefined) filtered = filtered.where('update_state', '=', query.updateState)
  if (query.online === true) filtered = filtered.where('last_seen_at', '>=', since)
  if (query.online === false) filtered = filtered.where((eb) => eb.or([eb('last_seen_at', 'is', null), eb('last_seen_at', '<', since)]))
  const [rows, count] = await Promise.all([
    // Newest first: the box plugged in today is the one an admin is looking for.
    filtered.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(request.ipp).offset(request.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  const claims = await claimsOf(db, rows.map((row) => row.id))
  const items = rows.map((row) => toReplayServer(row, now, deps.pollIntervalSeconds, claims.get(row.id)))
  return paged(items, Number(count.total), request, ADMIN_PATH, {
    status: query.status,
    online: query.online,
    deviceId: query.deviceId,
    updateState: query.updateState
  })
}

/** Applies one admin change to a record inside a transaction and answers the record as it is after. */
async function change(
  db: Db,
  id: string,
  deps: ReplayServerDeps,
  decide: (row: Row, tx: DbOrTx) => Promise<Partial<Row>> | Partial<Row>,
  /** The event integrators are told of, with the record after the change. */
  event?: Extract<EventType, `replay_server.${string}`>
): Promise<ReplayServer> {
  // Before the transaction: the flush needs the connection the transaction would hold.
  await deps.unrecordedSightings?.flush()
  // The record's row lock (issue 37) orders an admin's change and a poll's report (recordReport):
  // the whole record is written back, so it must be read as the last writer left it.
  return rowLocked(db, async (tx) => {
    const row = await findRow(tx, id, { forUpdate: true })
    const changes = await decide(row, tx)
    const now = deps.clock.now()
    const updated: Row = { ...row, ...changes, updated_at: now.toISOString() }
    if (updated.token_generation !== row.token_generation) updated.token_hash = tokenHashOf(deps.tokenKey, updated)
    // online_told is the connectivity teller's alone (connectivity.ts): an admin's change never writes it back.
    const { id: _id, online_told: _told, ...columns } = updated
    await tx.updateTable('replay_servers').set(columns).where('id', '=', id).execute()
    const answer = toReplayServer(updated, now, deps.pollIntervalSeconds, (await claimsOf(tx, [id])).get(id))
    // A repeated request (the same approval sent again) changes nothing, so tells nothing.
    const changed = Object.entries(changes).some(([column, value]) => row[column as keyof Row] !== value)
    if (event && changed) await recordEvent(tx, { type: event, resourceId: id, data: answer }, now)
    return answer
  })
}

async function takeClaim(tx: DbOrTx, id: string, claimId: string): Promise<ReplayServerClaimsTable> {
  const claim = await tx
    .deleteFrom('replay_server_claims')
    .where('id', '=', claimId)
    .where('replay_server_id', '=', id)
    .returningAll()
    .executeTakeFirst()
  if (!claim) throw new NotFoundError(`replay server ${quote(id)} has no claim ${quote(claimId)}`)
  return claim
}

/**
 * Accepts a claim as the box: its serverId, key and reported fields replace the record's (the old
 * serverId and token stop at once); status, area and configuration stay, a revoked box goes back to PENDING.
 */
export async function approveReplayServerClaim(db: Db, id: string, claimId: string, deps: ReplayServerDeps) {
  return change(db, id, deps, async (row, tx) => {
    const claim = await takeClaim(tx, id, claimId)
    if (claim.public_key !== null && claim.public_key === row.public_key) {
      // The box proves its own key by itself: a claim with it is someone else (or stale), never the box.
      throw new ConflictError(`claim ${quote(claimId)} carries the box's own key: the box proves that key by itself, so reject the claim`)
    }
    return {
      server_id_hash: claim.server_id_hash,
      token_generation: row.token_generation + 1,
      status: row.status === 'REVOKED' ? 'PENDING' : row.status,
      public_key: claim.public_key,
      // Kept: it only ever increases, so no proof made before this decision becomes good again.
      hostname: claim.hostname ?? row.hostname,
      version: claim.version ?? row.version,
      local_ip: claim.local_ip ?? row.local_ip,
      server_url: claim.server_url ?? row.server_url,
      // The accepted claim is where the box now is: the server calls it only there (box-call.ts).
      poll_address: claim.source_ip
    }
  })
}

/** Rejects a claim: it is forgotten (its serverId answers 404) and the box is unchanged. */
export async function rejectReplayServerClaim(db: Db, id: string, claimId: string, deps: ReplayServerDeps) {
  await deps.unrecordedSightings?.flush()
  await db.transaction().execute(async (tx) => {
    await findRow(tx, id)
    await takeClaim(tx, id, claimId)
  })
  return getReplayServer(db, id, deps)
}

/** Approves a box for an area (or moves an approved box to another area). */
export async function approveReplayServer(db: Db, id: string, approval: ReplayServerApproval, deps: ReplayServerDeps) {
  return change(db, id, deps, async (row, tx) => {
    const area = await tx.selectFrom('areas').select('id').where('id', '=', approval.areaId).executeTakeFirst()
    if (!area) throw new BadRequestError(`areaId ${quote(approval.areaId)} is not a known area`)
    return { status: 'APPROVED', area_id: area.id, display_name: approval.displayName ?? row.display_name }
  }, 'replay_server.approved')
}

/** A rejected box stays rejected, even when it registers again, until an admin approves it. */
export async function rejectReplayServer(db: Db, id: string, deps: ReplayServerDeps) {
  return change(db, id, deps, (row) => ({ status: 'REJECTED', token_generation: row.token_generation + 1 }))
}

/** Withdraws an approval: the token fails at once and polls answer REVOKED until the box registers again. */
export async function revokeReplayServer(db: Db, id: string, deps: ReplayServerDeps) {
  return change(db, id, deps, (row) => {
    if (row.status === 'PENDING' || row.status === 'REJECTED') {
      throw new ConflictError(`replay server ${id} is ${row.status}: only an approved box can be revoked (reject it instead)`)
    }
    return { status: 'REVOKED', token_generation: row.token_generation + 1 }
  })
}

/** A new access token: the old one fails at once, the box receives the new one with its next poll. */
export async function rotateReplayServerToken(db: Db, id: string, deps: ReplayServerDeps) {
  return change(db, id, deps, (row) => ({ token_generation: row.token_generation + 1 }))
}

export async function deleteReplayServer(db: DbOrTx, id: string): Promise<void> {
  const result = await db.deleteFrom('replay_servers').where('id', '=', id).executeTakeFirst()
  if (Number(result.numDeletedRows) !== 1) throw new NotFoundError(`no replay server ${quote(id)}`)
}

const configShape = valueValidator(ReplayServerConfig, 'config')

/**
 * A configuration checked in full, defaults filled in: the schema's rules (formats, ranges, no unknown
 * fields) and the ones a schema cannot say (camera ids unique). Throws a 400 naming the field.
 */
export function checkReplayServerConfig(value: unknown): ReplayServerConfig {
  const config = configShape(value)
  const firstIndex = new Map<string, number>()
  config.cameras.forEach((camera, i) => {
    const first = firstIndex.get(camera.id)
    if (first !== undefined) {
      throw new BadRequestError(`cameras[${i}].id "${camera.id}" is already the id of cameras[${first}]: camera ids must be unique`)
    }
    firstIndex.set(camera.id, i)
  })
  return config
}

/** Replaces the configuration; a bad one changes nothing. */
export async function setReplayServerConfig(db: Db, id: string, value: unknown, deps: ReplayServerDeps) {
  const config = checkReplayServerConfig(value)
  return change(db, id, deps, async (row, tx) => {
    await checkCourtIds(tx, config, row.area_id)
    return { config: JSON.stringify(config) }
  })
}

/** Each camera's courtIds must be courts of the box's area: a replay of a court is asked of the box filming it. */
async function checkCourtIds(tx: DbOrTx, config: ReplayServerConfig, areaId: string | null): Promise<void> {
  const named = config.cameras.flatMap((camera, i) => (camera.courtIds ?? []).map((courtId, j) => ({ courtId, field: `cameras[${i}].courtIds[${j}]` })))
  if (named.length === 0) return
  if (areaId === null) throw new BadRequestError(`${named[0]!.field}: the box has no area yet; approve it for an area before naming its courts`)
  const courts = await tx
    .selectFrom('courts')
    .select('id')
    .where('area_id', '=', areaId)
    .where('id', 'in', [...new Set(named.map((n) => n.courtId))])
    .execute()
  const known = new Set(courts.map((c) => c.id))
  const unknown = named.find((n) => !known.has(n.courtId))
  if (unknown) throw new BadRequestError(`${unknown.field} ${quote(unknown.courtId)} is not a court of the box's area ${areaId}`)
}

const targetVersionShape = valueValidator(ReplayServerTargetVersion, 'body')

/**
 * The agent version the box should run (null clears it); polls answer pendingUpdate while it differs.
 * The version must be a release for the box's architecture (any architecture while the box has not
 * reported one). A new target clears a ROLLED_BACK or FAILED state, so the box tries again.
 */
export async function setReplayServerTargetVersion(db: Db, id: string, value: unknown, deps: ReplayServerDeps) {
  const { version, updateWindow } = targetVersionShape(value)
  return change(db, id, deps, async (row, tx) => {
    if (version !== null) {
      refuseBuildMetadata(version, 'version')
      const release = await findRelease(tx, version, row.architecture)
      if (!release) {
        const forWhat = row.architecture ? ` for the box's architecture ${row.architecture}` : ''
        throw new BadRequestError(`version ${quote(version)} is not a release${forWhat}: add it with \`club agent-releases add\` first`)
      }
    }
    return {
      target_version: version,
      ...(updateWindow !== undefined ? { update_window: updateWindow } : {}),
      ...(version !== row.target_version ? { update_state: null, update_version: null, update_reason: null } : {})
    }
  })
}
