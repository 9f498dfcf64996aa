// Replay servers (a venue's recording boxes): the record and its API shape, registration, the device
// token, and the event written with each change. The status poll's reads and writes are polls.ts, the
// admins' decisions and the camera configuration decisions.ts. The serverId is the box's secret for
// the status call and is kept only as SHA-256; the access token is derived (see deviceAccessToken) and
// kept only as SHA-256.
import { randomUUID } from 'node:crypto'
import {
  type EventType,
  ReplayServerConfig,
  type ReplayServer,
  type ReplayServerHealth,
  type ReplayServerRegistration,
  type ReplayServerRegistrationRequest,
  type ReplayServerStatus
} from '@club/contract'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import { hmacSha256Hex, randomToken, sha256Hex } from '../crypto.js'
import { serverKey } from '../server-keys.js'
import type { Db, DbOrTx } from '../db/database.js'
import { forUpdate } from '../db/sql.js'
import type { ExpressionBuilder } from 'kysely'
import type { Database, ReplayServerClaimsTable, ReplayServersTable } from '../db/schema.js'
import { BadRequestError, ConflictError, NotFoundError, UnauthorizedError, quote } from '../errors.js'
import { recordEvent } from '../events/outbox.js'
import { checkKeyInput, checkKeyProof, claimsOf, keyFingerprint, recordClaim, REPLAYED, toReplayServerClaim } from './claims.js'
import { healthRowsOf, toHealth } from './health.js'


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

export type Row = Omit<ReplayServersTable, 'token_generation' | 'online_told'> & { token_generation: number; online_told: number | null }

export const ADMIN_PATH = '/apis/v2/admin/replay-servers'
export const TOKEN_KEY_SETTING = 'device_token_key'

/** What a box runs before an admin configures it: nothing to record. */
export const EMPTY_CONFIG: ReplayServerConfig = { cleanupEnabled: false, cameras: [] }

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

export function tokenHashOf(tokenKey: string, row: Pick<Row, 'id' | 'server_id_hash' | 'token_generation'>): string {
  return sha256Hex(deviceAccessToken(tokenKey, row))
}

/** The one row → API shape mapping: what an admin sees, with its pending claims. Never the serverId or the token. */
export function toReplayServer(
  row: Row,
  now: Date,
  pollIntervalSeconds: number,
  claims: ReplayServerClaimsTable[] = [],
  health: ReplayServerHealth | null = null
): ReplayServer {
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
    health,
    claims: claims.map((claim) => toReplayServerClaim(claim, row.public_key)),
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: `${ADMIN_PATH}/${row.id}` } }
  }
}

/** The admin's view of these boxes' health, by box id (none before a box's first report). */
export async function healthOf(
  db: DbOrTx,
  rows: ReadonlyArray<Pick<Row, 'id' | 'status' | 'last_seen_at'>>,
  now: Date,
  pollIntervalSeconds: number
): Promise<Map<string, ReplayServerHealth>> {
  const stored = await healthRowsOf(db, rows.map((row) => row.id))
  const since = onlineSince(now, pollIntervalSeconds)
  const health = new Map<string, ReplayServerHealth>()
  for (const row of rows) {
    const kept = stored.get(row.id)
    if (kept) health.set(row.id, toHealth(kept, row.last_seen_at !== null && row.last_seen_at >= since, row.status === 'APPROVED'))
  }
  return health
}

/** A box is online when it polled within three poll intervals. ISO timestamps compare as text. */
export function onlineSince(now: Date, pollIntervalSeconds: number): string {
  return new Date(now.getTime() - 3 * pollIntervalSeconds * 1000).toISOString()
}

/** Where a registration came from, as the route sees it. */
export interface RegistrationOrigin {
  /** The client's address: a claim's source, and the address a proven box now polls from (see reportedChanges). */
  sourceIp: string
  /** This server's origin, PUBLIC_BASE_URL's (`https://club.example`): what a key proof must name. */
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
          poll_address_since: now,
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
        const waiting = await boundWaitingBoxes(tx, id)
        // Told while few wait: a flood of new deviceIds is one burst of events, not one per registration.
        if (waiting <= MAX_WAITING_BOXES_TOLD) await recordReplayServerEvent(tx, id, 'replay_server.registered', clockNow, deps.pollIntervalSeconds)
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

/** Boxes registered and never approved (PENDING, no area) kept at most: the oldest beyond it expire. */
export const MAX_WAITING_BOXES = 100
/** While more than this many wait, a new one is not told to integrators (replay_server.registered). */
export const MAX_WAITING_BOXES_TOLD = 10

/**
 * After a new record `id`: drops the oldest boxes never approved beyond MAX_WAITING_BOXES (anyone may
 * register any number of deviceIds; a real box whose record expired registers again and is a new
 * record) and answers how many wait, the new one included.
 */
async function boundWaitingBoxes(tx: DbOrTx, id: string): Promise<number> {
  const waiting = (eb: ExpressionBuilder<Database, 'replay_servers'>) => eb.and([eb('status', '=', 'PENDING'), eb('area_id', 'is', null)])
  const { count } = await tx.selectFrom('replay_servers').select((eb) => eb.fn.countAll<number>().as('count')).where(waiting).executeTakeFirstOrThrow()
  const excess = Number(count) - MAX_WAITING_BOXES
  if (excess > 0) {
    const oldest = await tx.selectFrom('replay_servers').select('id').where(waiting).where('id', '<>', id).orderBy('created_at').orderBy('id').limit(excess).execute()
    await tx.deleteFrom('replay_servers').where('id', 'in', oldest.map((row) => row.id)).execute()
  }
  return Number(count)
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
      poll_address_since: proven.sourceIp === existing.poll_address ? existing.poll_address_since : now,
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

/** The record, or a 404; `forUpdate`: locked until the transaction ends (see change). */
export async function findRow(db: DbOrTx, id: string, options: { forUpdate?: boolean } = {}): Promise<Row> {
  const query = db.selectFrom('replay_servers').selectAll().where('id', '=', id)
  const row = await (options.forUpdate ? forUpdate(db, query) : query).executeTakeFirst()
  if (!row) throw new NotFoundError(`no replay server ${quote(id)}`)
  return row
}

/** A replay server event with the box as an admin's GET answers it, written in the change's transaction. */
export async function recordReplayServerEvent(
  tx: DbOrTx,
  id: string,
  type: Extract<EventType, `replay_server.${string}`>,
  now: Date,
  pollIntervalSeconds: number,
  /** What a health event adds to the box (replay_server.camera_failed's camera). */
  extra: Record<string, unknown> = {}
): Promise<void> {
  const row = await findRow(tx, id)
  const health = (await healthOf(tx, [row], now, pollIntervalSeconds)).get(id) ?? null
  const box = toReplayServer(row, now, pollIntervalSeconds, (await claimsOf(tx, [id])).get(id), health)
  await recordEvent(tx, { type, resourceId: id, data: { ...box, ...extra } }, now)
}

