// The admins' decisions on a recording box: approve into an area (or a claim by a replacement box),
// reject, revoke, rotate the token, delete; its camera configuration and target version; the list.
import {
  type EventType,
  ReplayServerConfig,
  ReplayServerTargetVersion,
  type ReplayServer,
  type ReplayServerApproval,
  type ReplayServerListQuery
} from '@club/contract'
import { sql } from 'kysely'
import type { Db, DbOrTx } from '../db/database.js'
import { rowLocked } from '../db/sql.js'
import type { ReplayServerClaimsTable } from '../db/schema.js'
import { BadRequestError, ConflictError, NotFoundError, quote } from '../errors.js'
import { recordEvent } from '../events/outbox.js'
import { paged, pageRequest } from '../paging.js'
import { valueValidator } from '../plugins/validation.js'
import { findRelease, refuseBuildMetadata } from '../agent-releases/service.js'
import { claimsOf } from './claims.js'

import { hasProblem } from './health.js'
import { ADMIN_PATH, findRow, healthOf, onlineSince, toReplayServer, tokenHashOf, type ReplayServerDeps, type Row } from './service.js'


export async function getReplayServer(db: DbOrTx, id: string, deps: ReplayServerDeps): Promise<ReplayServer> {
  await deps.unrecordedSightings?.flush()
  const row = await findRow(db, id)
  const now = deps.clock.now()
  const health = (await healthOf(db, [row], now, deps.pollIntervalSeconds)).get(id) ?? null
  return toReplayServer(row, now, deps.pollIntervalSeconds, (await claimsOf(db, [id])).get(id), health)
}

export async function listReplayServers(db: DbOrTx, query: ReplayServerListQuery, deps: ReplayServerDeps) {
  const request = pageRequest(query)
  await deps.unrecordedSightings?.flush()
  const now = deps.clock.now()
  const since = onlineSince(now, deps.pollIntervalSeconds)
  // One row per box: a box has at most one latest report.
  let filtered = db.selectFrom('replay_servers').leftJoin('replay_server_health as h', 'h.replay_server_id', 'replay_servers.id')
  // Approved boxes only, with their latest report (none: only OFFLINE can make one a problem).
  if (query.health !== undefined) {
    const problem = hasProblem(since)
    filtered = filtered
      .where('status', '=', 'APPROVED')
      .where(query.health === 'PROBLEM' ? problem : sql<boolean>`not ${problem}`)
  }
  if (query.status !== undefined) filtered = filtered.where('status', '=', query.status)
  if (query.deviceId !== undefined) filtered = filtered.where('device_id', '=', query.deviceId)
  if (query.updateState !== undefined) filtered = filtered.where('update_state', '=', query.updateState)
  if (query.online === true) filtered = filtered.where('last_seen_at', '>=', since)
  if (query.online === false) filtered = filtered.where((eb) => eb.or([eb('last_seen_at', 'is', null), eb('last_seen_at', '<', since)]))
  const [rows, count] = await Promise.all([
    // Newest first: the box plugged in today is the one an admin is looking for.
    filtered.selectAll('replay_servers').orderBy('created_at', 'desc').orderBy('id', 'desc').limit(request.ipp).offset(request.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  const claims = await claimsOf(db, rows.map((row) => row.id))
  const health = await healthOf(db, rows, now, deps.pollIntervalSeconds)
  const items = rows.map((row) => toReplayServer(row, now, deps.pollIntervalSeconds, claims.get(row.id), health.get(row.id) ?? null))
  return paged(items, Number(count.total), request, ADMIN_PATH, {
    status: query.status,
    online: query.online,
    deviceId: query.deviceId,
    updateState: query.updateState,
    health: query.health
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
    const health = (await healthOf(tx, [updated], now, deps.pollIntervalSeconds)).get(id) ?? null
    const answer = toReplayServer(updated, now, deps.pollIntervalSeconds, (await claimsOf(tx, [id])).get(id), health)
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
      poll_address: claim.source_ip,
      poll_address_since: deps.clock.now().toISOString()
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

