// Replay servers (a venue's recording boxes): registration, status polls, the admin's decisions and
// the camera configuration. The serverId is the box's secret for the status call and is kept only as
// SHA-256; the access token is derived (see deviceAccessToken) and kept only as SHA-256.
import { randomUUID } from 'node:crypto'
import type { CompiledQuery } from 'kysely'
import {
  ReplayServerConfig,
  ReplayServerTargetVersion,
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
import type { Db, DbOrTx } from '../db/database.js'
import type { ReplayServersTable } from '../db/schema.js'
import { BadRequestError, ConflictError, NotFoundError, UnauthorizedError } from '../errors.js'
import { paged, pageRequest } from '../paging.js'
import { valueValidator } from '../plugins/validation.js'

export interface ReplayServerDeps {
  clock: Clock
  /** The key device access tokens are derived from (deviceTokenKey). */
  tokenKey: string
  pollIntervalSeconds: number
}

type Row = Omit<ReplayServersTable, 'token_generation'> & { token_generation: number }

const ADMIN_PATH = '/apis/v2/admin/replay-servers'
const TOKEN_KEY_SETTING = 'device_token_key'
const SIGHTING_RESOLUTION_MS = 1000

/** What a box runs before an admin configures it: nothing to record. */
const EMPTY_CONFIG: ReplayServerConfig = { cleanupEnabled: false, cameras: [] }

/**
 * The key device tokens are derived from: DEVICE_TOKEN_SECRET, or else a random key generated once
 * and kept in the settings table so tokens survive restarts. Setting DEVICE_TOKEN_SECRET is the safer
 * choice: then a copy of the database alone does not yield any device's token.
 */
export async function deviceTokenKey(db: Db, config: Pick<Config, 'DEVICE_TOKEN_SECRET'>, clock: Clock): Promise<string> {
  if (config.DEVICE_TOKEN_SECRET) return config.DEVICE_TOKEN_SECRET
  // Two processes starting together both insert; the first wins and both read its key.
  await db
    .insertInto('settings')
    .values({ key: TOKEN_KEY_SETTING, value: randomToken(), created_at: clock.now().toISOString() })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute()
  const row = await db.selectFrom('settings').select('value').where('key', '=', TOKEN_KEY_SETTING).executeTakeFirstOrThrow()
  return row.value
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

/** The one row → API shape mapping: what an admin sees. Never the serverId or the token. */
export function toReplayServer(row: Row, now: Date, pollIntervalSeconds: number): ReplayServer {
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
    config: row.config === null ? null : (JSON.parse(row.config) as ReplayServerConfig),
    targetVersion: row.target_version,
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: `${ADMIN_PATH}/${row.id}` } }
  }
}

/** A box is online when it polled within three poll intervals. ISO timestamps compare as text. */
function onlineSince(now: Date, pollIntervalSeconds: number): string {
  return new Date(now.getTime() - 3 * pollIntervalSeconds * 1000).toISOString()
}

/**
 * Registers a box. A known deviceId (a reinstalled box) keeps its record, area, configuration and
 * display name, gets a new serverId (the old one and the old token stop working) and goes back to
 * PENDING, except that a rejected box stays REJECTED.
 */
export async function registerReplayServer(
  db: Db,
  input: ReplayServerRegistrationRequest,
  deps: ReplayServerDeps
): Promise<ReplayServerRegistration> {
  const serverId = randomToken()
  const serverIdHash = sha256Hex(serverId)
  const now = deps.clock.now().toISOString()
  const { status, displayName } = await db.transaction().execute(async (tx) => {
    const existing = await tx.selectFrom('replay_servers').selectAll().where('device_id', '=', input.deviceId).executeTakeFirst()
    if (!existing) {
      const id = randomUUID()
      const key = { id, server_id_hash: serverIdHash, token_generation: 1 }
      await tx
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
          area_id: null,
          config: null,
          target_version: null,
          last_seen_at: now,
          created_at: now,
          updated_at: now
        })
        .execute()
      return { status: 'PENDING' as const, displayName: input.displayName ?? null }
    }
    const key = { id: existing.id, server_id_hash: serverIdHash, token_generation: existing.token_generation + 1 }
    const status: ReplayServerStatus = existing.status === 'REJECTED' ? 'REJECTED' : 'PENDING'
    const displayName = existing.display_name ?? input.displayName ?? null
    await tx
      .updateTable('replay_servers')
      .set({
        server_id_hash: serverIdHash,
        token_generation: key.token_generation,
        token_hash: tokenHashOf(deps.tokenKey, key),
        status,
        display_name: displayName,
        hostname: input.hostname ?? existing.hostname,
        version: input.version ?? existing.version,
        local_ip: input.localIp ?? existing.local_ip,
        server_url: input.serverUrl ?? existing.server_url,
        last_seen_at: now,
        updated_at: now
      })
      .where('id', '=', existing.id)
      .execute()
    return { status, displayName }
  })
  return { serverId, status, pollInterval: deps.pollIntervalSeconds, ...(displayName !== null ? { displayName } : {}) }
}

/** The status poll's look-up by serverId hash. */
const pollLookup = (db: Db, serverIdHash: string) =>
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
      'area_id',
      'config',
      'target_version',
      'last_seen_at'
    ])
    .where('server_id_hash', '=', serverIdHash)

type PollRow = Awaited<ReturnType<ReturnType<typeof pollLookup>['executeTakeFirstOrThrow']>>

const compiledPollLookups = new WeakMap<Db, CompiledQuery<PollRow>>()

/**
 * The poll is the hottest path there is (every box, every few seconds), and building and compiling
 * a Kysely query costs more than SQLite's indexed read itself. So the query is compiled once per
 * database and run with each poll's parameter.
 */
function pollQuery(db: Db): CompiledQuery<PollRow> {
  let compiled = compiledPollLookups.get(db)
  if (!compiled) {
    compiled = pollLookup(db, '').compile()
    compiledPollLookups.set(db, compiled)
  }
  return compiled
}

function withParameters<R>(query: CompiledQuery<R>, parameters: unknown[]): CompiledQuery<R> {
  return { ...query, parameters }
}

/**
 * A box's poll: one indexed read by the serverId's hash and one write of lastSeenAt and the reported
 * fields (skipped within a second of the last sighting when nothing changed). An unknown or
 * superseded serverId is a 404, which tells the box to register again.
 */
export async function pollReplayServerStatus(
  db: Db,
  serverId: string,
  reported: ReplayServerStatusQuery,
  deps: ReplayServerDeps
): Promise<ReplayServerStatusAnswer> {
  const serverIdHash = sha256Hex(serverId)
  const { rows } = await db.executeQuery(withParameters(pollQuery(db), [serverIdHash]))
  const row = rows[0]
  if (!row) throw new NotFoundError('no replay server has this serverId: register again')

  const answer: ReplayServerStatusAnswer = { status: row.status }
  let tokenHash = row.token_hash
  if (row.status === 'APPROVED' && row.area_id !== null) {
    const accessToken = deviceAccessToken(deps.tokenKey, row)
    // Differs only after DEVICE_TOKEN_SECRET changed: the token in use becomes the new key's.
    tokenHash = sha256Hex(accessToken)
    answer.accessToken = accessToken
    answer.area = { id: row.area_id }
    const version = reported.version ?? row.version
    if (row.target_version !== null && row.target_version !== version) answer.pendingUpdate = { version: row.target_version }
    answer.config = row.config === null ? EMPTY_CONFIG : (JSON.parse(row.config) as ReplayServerConfig)
  }

  const now = deps.clock.now()
  const changed =
    (reported.version !== undefined && reported.version !== row.version) ||
    (reported.serverUrl !== undefined && reported.serverUrl !== row.server_url) ||
    (reported.localIp !== undefined && reported.localIp !== row.local_ip) ||
    tokenHash !== row.token_hash
  // A sighting is worth a write once a second at most: `online` looks back three poll intervals, so
  // finer lastSeenAt buys nothing, while a box (or a script) polling in a tight loop would otherwise
  // cost a database write per request. Boxes polling at their interval are recorded every time.
  if (!changed && row.last_seen_at !== null && now.getTime() - Date.parse(row.last_seen_at) < SIGHTING_RESOLUTION_MS) {
    return answer
  }
  await db
    .updateTable('replay_servers')
    .set({
      last_seen_at: now.toISOString(),
      ...(reported.version !== undefined ? { version: reported.version } : {}),
      ...(reported.serverUrl !== undefined ? { server_url: reported.serverUrl } : {}),
      ...(reported.localIp !== undefined ? { local_ip: reported.localIp } : {}),
      ...(tokenHash !== row.token_hash ? { token_hash: tokenHash } : {})
    })
    .where('id', '=', row.id)
    // An admin's change between the read and this write (rotation, re-registration) wins: this poll's
    // sighting is dropped rather than bringing back the token hash it replaced.
    .where('server_id_hash', '=', serverIdHash)
    .where('token_generation', '=', row.token_generation)
    .execute()
  return answer
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

async function findRow(db: DbOrTx, id: string): Promise<Row> {
  const row = await db.selectFrom('replay_servers').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw new NotFoundError(`no replay server ${id}`)
  return row
}

export async function getReplayServer(db: DbOrTx, id: string, deps: ReplayServerDeps): Promise<ReplayServer> {
  return toReplayServer(await findRow(db, id), deps.clock.now(), deps.pollIntervalSeconds)
}

export async function listReplayServers(db: DbOrTx, query: ReplayServerListQuery, deps: ReplayServerDeps) {
  const request = pageRequest(query)
  const now = deps.clock.now()
  const since = onlineSince(now, deps.pollIntervalSeconds)
  let filtered = db.selectFrom('replay_servers')
  if (query.status !== undefined) filtered = filtered.where('status', '=', query.status)
  if (query.deviceId !== undefined) filtered = filtered.where('device_id', '=', query.deviceId)
  if (query.online === true) filtered = filtered.where('last_seen_at', '>=', since)
  if (query.online === false) filtered = filtered.where((eb) => eb.or([eb('last_seen_at', 'is', null), eb('last_seen_at', '<', since)]))
  const [rows, count] = await Promise.all([
    filtered.selectAll().orderBy('created_at').orderBy('id').limit(request.ipp).offset(request.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  const items = rows.map((row) => toReplayServer(row, now, deps.pollIntervalSeconds))
  return paged(items, Number(count.total), request, ADMIN_PATH, {
    status: query.status,
    online: query.online,
    deviceId: query.deviceId
  })
}

/** Applies one admin change to a record inside a transaction and answers the record as it is after. */
async function change(
  db: Db,
  id: string,
  deps: ReplayServerDeps,
  decide: (row: Row, tx: DbOrTx) => Promise<Partial<Row>> | Partial<Row>
): Promise<ReplayServer> {
  return db.transaction().execute(async (tx) => {
    const row = await findRow(tx, id)
    const changes = await decide(row, tx)
    const now = deps.clock.now()
    const updated: Row = { ...row, ...changes, updated_at: now.toISOString() }
    if (updated.token_generation !== row.token_generation) updated.token_hash = tokenHashOf(deps.tokenKey, updated)
    const { id: _id, ...columns } = updated
    await tx.updateTable('replay_servers').set(columns).where('id', '=', id).execute()
    return toReplayServer(updated, now, deps.pollIntervalSeconds)
  })
}

/** Approves a box for an area (or moves an approved box to another area). */
export async function approveReplayServer(db: Db, id: string, approval: ReplayServerApproval, deps: ReplayServerDeps) {
  return change(db, id, deps, async (row, tx) => {
    const area = await tx.selectFrom('areas').select('id').where('id', '=', approval.areaId).executeTakeFirst()
    if (!area) throw new BadRequestError(`areaId ${approval.areaId} is not a known area`)
    return { status: 'APPROVED', area_id: area.id, display_name: approval.displayName ?? row.display_name }
  })
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
  if (Number(result.numDeletedRows) !== 1) throw new NotFoundError(`no replay server ${id}`)
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
  return change(db, id, deps, () => ({ config: JSON.stringify(config) }))
}

const targetVersionShape = valueValidator(ReplayServerTargetVersion, 'body')

/** The agent version the box should run (null clears it); polls answer pendingUpdate while it differs. */
export async function setReplayServerTargetVersion(db: Db, id: string, value: unknown, deps: ReplayServerDeps) {
  const { version } = targetVersionShape(value)
  return change(db, id, deps, () => ({ target_version: version }))
}
