// Staged rollouts of an agent release (issue 48). The approved boxes in scope are split into groups
// when the rollout starts (stored rows, never recomputed); a group's boxes are offered the release
// through their own target_version, so the poll's pendingUpdate, update windows, "busy" intervals and
// the status change counter (migration 0008) work exactly as for a target set by hand. advanceRollout
// (run by an interval teller in every server process, and at once after create and resume) moves
// each box along, opens the next group once the one before reached its success threshold, and halts
// the whole rollout when a group's failures reach its error threshold. Every transition happens in
// one write transaction (these run one at a time on both databases: BEGIN IMMEDIATE on SQLite, the
// cluster's write lock on PostgreSQL) and is conditional on the state it read, so two processes
// advancing one rollout open each group, and tell each event, once.
import { randomUUID } from 'node:crypto'
import type { Transaction } from 'kysely'
import {
  agentRolloutRoutes,
  type AgentRollout,
  type AgentRolloutBoxState,
  type AgentRolloutCreate,
  type AgentRolloutGroup,
  type AgentRolloutList,
  type AgentRolloutListQuery,
  type AgentRolloutStatus,
  type EventType
} from '@club/contract'
import { findRelease, refuseBuildMetadata } from '../agent-releases/service.js'
import type { Clock } from '../clock.js'
import type { Db, DbOrTx } from '../db/database.js'
import type { AgentRolloutBoxesTable, AgentRolloutGroupsTable, AgentRolloutsTable, Database } from '../db/schema.js'
import { BadRequestError, ConflictError, NotFoundError, quote } from '../errors.js'
import { recordEvent } from '../events/outbox.js'
import { paged, pageRequest } from '../paging.js'
import { updateTargetOf } from '../replay-servers/updates.js'

/**
 * Since when every enabled camera of the box has been RECORDING per its latest health report, or
 * null when one is not (or the box never reported). Box health lives in another area; the app
 * passes the real one (see box-health.ts).
 */
export type RecordingSince = (db: DbOrTx, boxId: string) => Promise<Date | null>

export interface RolloutDeps {
  clock: Clock
  /** Absent: a box counts as updated on its version alone, whatever healthSeconds says (no health to read). */
  recordingSince?: RecordingSince
  /**
   * false: a resumed rollout waits for the servers' tellers to take its next step (the CLI, which
   * reads no box health, must not judge boxes without it).
   */
  stepNow?: boolean
}

const PATH = agentRolloutRoutes.list.url
const ACTIVE: AgentRolloutStatus[] = ['RUNNING', 'PAUSED']
/** States of a box offered the release that still has to succeed or fail. */
const PENDING: AgentRolloutBoxState[] = ['OFFERED', 'UPDATED']

type Tx = Transaction<Database>

// ---------------------------------------------------------------------------------------------
// Reading

function toGroup(group: AgentRolloutGroupsTable, boxes: AgentRolloutBoxesTable[]): AgentRolloutGroup {
  const count = (...states: AgentRolloutBoxState[]) => boxes.filter((b) => states.includes(b.state)).length
  return {
    position: group.position,
    percent: group.percent,
    status: group.status,
    boxes: boxes.map((b) => ({ id: b.replay_server_id, state: b.state, reason: b.reason })),
    offered: count('OFFERED', 'UPDATED', 'SUCCEEDED', 'FAILED'),
    succeeded: count('SUCCEEDED'),
    failed: count('FAILED'),
    pending: count(...PENDING),
    excluded: count('EXCLUDED'),
    openedDate: group.opened_at,
    completedDate: group.completed_at
  }
}

function toAgentRollout(row: AgentRolloutsTable, groups: AgentRolloutGroupsTable[], boxes: AgentRolloutBoxesTable[]): AgentRollout {
  const shown = groups.map((g) => toGroup(g, boxes.filter((b) => b.position === g.position)))
  const sum = (key: 'offered' | 'succeeded' | 'failed' | 'pending' | 'excluded') => shown.reduce((n, g) => n + g[key], 0)
  return {
    id: row.id,
    version: row.version,
    status: row.status,
    area: row.area_id === null ? null : { id: row.area_id },
    errorThresholdPercent: row.error_threshold_percent,
    successThresholdPercent: row.success_threshold_percent,
    healthSeconds: row.health_seconds,
    silentTimeoutMinutes: row.silent_timeout_minutes,
    groups: shown,
    offered: sum('offered'),
    succeeded: sum('succeeded'),
    failed: sum('failed'),
    pending: sum('pending'),
    excluded: sum('excluded'),
    haltedReason: row.halted_reason,
    createdBy: row.created_by === null ? null : { id: row.created_by },
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: `${PATH}/${row.id}` } }
  }
}

/** The rollouts of `rows` as the API answers them, their groups and boxes read in two queries. */
async function rolloutsOf(db: DbOrTx, rows: AgentRolloutsTable[]): Promise<AgentRollout[]> {
  if (rows.length === 0) return []
  const ids = rows.map((r) => r.id)
  const [groups, boxes] = await Promise.all([
    db.selectFrom('agent_rollout_groups').selectAll().where('rollout_id', 'in', ids).orderBy('position').execute(),
    db.selectFrom('agent_rollout_boxes').selectAll().where('rollout_id', 'in', ids).orderBy('replay_server_id').execute()
  ])
  return rows.map((row) =>
    toAgentRollout(
      row,
      groups.filter((g) => g.rollout_id === row.id),
      boxes.filter((b) => b.rollout_id === row.id)
    )
  )
}

async function rolloutRow(db: DbOrTx, id: string): Promise<AgentRolloutsTable> {
  const row = await db.selectFrom('agent_rollouts').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw new NotFoundError(`no rollout ${quote(id)}`)
  return row
}

export async function getAgentRollout(db: DbOrTx, id: string): Promise<AgentRollout> {
  return (await rolloutsOf(db, [await rolloutRow(db, id)]))[0]!
}

export async function listAgentRollouts(db: Db, query: AgentRolloutListQuery): Promise<AgentRolloutList> {
  const request = pageRequest(query)
  let filtered = db.selectFrom('agent_rollouts')
  if (query.status) filtered = filtered.where('status', '=', query.status)
  const [rows, count] = await Promise.all([
    filtered.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(request.ipp).offset(request.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  return paged(await rolloutsOf(db, rows), Number(count.total), request, PATH, { status: query.status })
}

/** The rollouts RUNNING or PAUSED, newest first, as the fleet summary (GET /apis/v2/admin/fleet) names them. */
export async function activeRollouts(db: DbOrTx): Promise<Array<{ id: string; version: string; status: AgentRolloutStatus; _links: { self: { href: string } } }>> {
  const rows = await db
    .selectFrom('agent_rollouts')
    .select(['id', 'version', 'status'])
    .where('status', 'in', ACTIVE)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute()
  return rows.map((r) => ({ id: r.id, version: r.version, status: r.status, _links: { self: { href: `${PATH}/${r.id}` } } }))
}

// ---------------------------------------------------------------------------------------------
// Starting

/**
 * How many boxes each percent group gets out of `total`, in order. The boundaries between groups
 * are the cumulative percents of `total` rounded up (5 % of 10 boxes is one box, not none), then
 * moved just enough that every group gets at least one box and the last ends at `total`: every box
 * lands in exactly one group. Needs total >= percents.length (the caller refuses fewer boxes).
 */
export function groupSizes(percents: number[], total: number): number[] {
  const count = percents.length
  const bounds: number[] = []
  let cumulative = 0
  for (let i = 0; i < count; i++) {
    cumulative += percents[i]!
    // The last group ends at the last box whatever rounding left; 1e-9 absorbs 33.3 + 33.3 + 33.4.
    const bound = i === count - 1 ? total : Math.ceil((cumulative * total) / 100 - 1e-9)
    bounds.push(Math.max(bound, (bounds[i - 1] ?? 0) + 1))
  }
  for (let i = count - 2; i >= 0; i--) bounds[i] = Math.min(bounds[i]!, bounds[i + 1]! - 1)
  return bounds.map((b, i) => b - (bounds[i - 1] ?? 0))
}

/** The boxes a rollout may include: approved ones, of the area when one is named. */
interface ScopeBox {
  id: string
  status: string
  area_id: string | null
  version: string | null
  target_version: string | null
  update_state: string | null
  update_version: string | null
}

function checkGroupShapes(groups: AgentRolloutCreate['groups']): void {
  groups.forEach((group, i) => {
    const hasPercent = group.percent !== undefined
    const hasBoxes = group.boxes !== undefined
    if (hasPercent === hasBoxes) throw new BadRequestError(`groups[${i}] names either percent or boxes, not ${hasPercent ? 'both' : 'neither'}`)
  })
  const percents = groups.flatMap((g) => (g.percent !== undefined ? [g.percent] : []))
  const sum = percents.reduce((a, b) => a + b, 0)
  if (percents.length > 0 && Math.abs(sum - 100) > 1e-6) {
    throw new BadRequestError(`groups: the percents sum to ${Number(sum.toFixed(6))}; they must sum to 100 (of the boxes in scope that no canary group names)`)
  }
}

/**
 * Starts a rollout: checks the version, the area and the named boxes, splits the approved boxes in
 * scope into the groups (canaries as named, the rest by percent in the order of their ids, which
 * are random), stores them, tells agent_rollout.started and opens the first group, in one transaction.
 */
export async function createAgentRollout(db: Db, body: AgentRolloutCreate, createdBy: string | null, deps: RolloutDeps): Promise<AgentRollout> {
  refuseBuildMetadata(body.version, 'version')
  checkGroupShapes(body.groups)
  const now = deps.clock.now()
  const id = await db.transaction().execute(async (tx) => {
    if (!(await findRelease(tx, body.version, null))) {
      throw new BadRequestError(`version ${quote(body.version)} is not an uploaded release: upload it first (POST ${'/apis/v2/admin/agent-releases'} or club agent-releases add)`)
    }
    const areaId = body.area?.id ?? null
    if (areaId !== null && !(await tx.selectFrom('areas').select('id').where('id', '=', areaId).executeTakeFirst())) {
      throw new BadRequestError(`area ${quote(areaId)} is not an area`)
    }
    let inScope = tx
      .selectFrom('replay_servers')
      .select(['id', 'status', 'area_id', 'version', 'target_version', 'update_state', 'update_version'])
      .where('status', '=', 'APPROVED')
      .where('area_id', 'is not', null)
    if (areaId !== null) inScope = inScope.where('area_id', '=', areaId)
    const scope: ScopeBox[] = await inScope.orderBy('id').execute()
    const scopeIds = new Set(scope.map((b) => b.id))

    // Named canaries: each known, in scope, named once.
    const named = new Set<string>()
    for (const [i, group] of body.groups.entries()) {
      for (const [j, ref] of (group.boxes ?? []).entries()) {
        const field = `groups[${i}].boxes[${j}]`
        if (named.has(ref.id)) throw new BadRequestError(`${field} ${quote(ref.id)} is named twice`)
        if (!scopeIds.has(ref.id)) {
          const box = await tx.selectFrom('replay_servers').select(['status', 'area_id']).where('id', '=', ref.id).executeTakeFirst()
          if (!box) throw new BadRequestError(`${field} ${quote(ref.id)} is not a box`)
          throw new BadRequestError(
            box.status !== 'APPROVED' ? `${field} ${quote(ref.id)} is ${box.status}, not an approved box` : `${field} ${quote(ref.id)} is not in the area ${areaId}`
          )
        }
        named.add(ref.id)
      }
    }
    const rest = scope.filter((b) => !named.has(b.id)).map((b) => b.id)
    const percentGroups = body.groups.filter((g) => g.percent !== undefined)
    if (scope.length === 0) throw new BadRequestError(areaId ? `area: no approved box in area ${areaId}` : 'no approved box to roll out to')
    if (rest.length < percentGroups.length) {
      throw new BadRequestError(
        `groups: ${percentGroups.length} percent groups need at least one box each, and ${rest.length} box(es) in scope are left after the canaries`
      )
    }

    // One running rollout per box: of the boxes this one takes (only the canaries when no percent group asks for the rest).
    const members = [...named, ...(percentGroups.length > 0 ? rest : [])]
    const busy = await tx
      .selectFrom('agent_rollout_boxes')
      .innerJoin('agent_rollouts', 'agent_rollouts.id', 'agent_rollout_boxes.rollout_id')
      .select(['agent_rollout_boxes.replay_server_id as boxId', 'agent_rollouts.id as rolloutId'])
      .where('agent_rollouts.status', 'in', ACTIVE)
      .where('agent_rollout_boxes.replay_server_id', 'in', members)
      .execute()
    if (busy.length > 0) {
      const shown = busy.slice(0, 5).map((b) => `${b.boxId} (rollout ${b.rolloutId})`).join(', ')
      throw new ConflictError(
        `${busy.length} box(es) in scope are in a RUNNING or PAUSED rollout already: ${shown}${busy.length > 5 ? ', …' : ''}; cancel that rollout first or narrow this one with area`
      )
    }

    const sizes = groupSizes(percentGroups.map((g) => g.percent!), rest.length)
    const id = randomUUID()
    await tx
      .insertInto('agent_rollouts')
      .values({
        id,
        version: body.version,
        status: 'RUNNING',
        area_id: areaId,
        error_threshold_percent: body.errorThresholdPercent,
        success_threshold_percent: body.successThresholdPercent ?? 100,
        health_seconds: body.healthSeconds ?? 600,
        silent_timeout_minutes: body.silentTimeoutMinutes ?? 60,
        halted_reason: null,
        created_by: createdBy,
        created_at: now.toISOString(),
        updated_at: now.toISOString()
      })
      .execute()
    const byId = new Map(scope.map((b) => [b.id, b]))
    let next = 0
    let percentIndex = 0
    for (const [i, group] of body.groups.entries()) {
      const position = i + 1
      const members = group.boxes ? group.boxes.map((r) => r.id) : rest.slice(next, (next += sizes[percentIndex++]!))
      await tx.insertInto('agent_rollout_groups').values({ rollout_id: id, position, percent: group.percent ?? null, status: 'WAITING', opened_at: null, completed_at: null }).execute()
      for (const boxId of members) {
        // A box heading for a version an admin set by hand keeps it: shown, never offered.
        const own = ownTarget(byId.get(boxId)!, body.version)
        await tx
          .insertInto('agent_rollout_boxes')
          .values({
            rollout_id: id,
            replay_server_id: boxId,
            position,
            state: own ? 'EXCLUDED' : 'WAITING',
            reason: own,
            offered_at: null,
            version_at: null,
            recording_since: null,
            finished_at: own ? now.toISOString() : null
          })
          .execute()
      }
    }
    await tell(tx, id, 'agent_rollout.started', now)
    await step(tx, id, now, deps)
    return id
  })
  return getAgentRollout(db, id)
}

/** Why a box is left to its own target: one set by hand that it still heads for (not this version, not given up on). */
function ownTarget(box: ScopeBox, version: string): string | null {
  const target = updateTargetOf(box as Parameters<typeof updateTargetOf>[0], undefined)
  return target !== undefined && target !== version ? `its own target version ${target} was set by hand` : null
}

// ---------------------------------------------------------------------------------------------
// Advancing

async function tell(tx: Tx, id: string, type: Extract<EventType, `agent_rollout.${string}`>, now: Date): Promise<void> {
  await recordEvent(tx, { type, resourceId: id, data: await getAgentRollout(tx, id) }, now)
}

/** What advancing reads of each box of a rollout: its place and its record's update columns. */
async function boxesOf(tx: Tx, id: string) {
  return tx
    .selectFrom('agent_rollout_boxes')
    .leftJoin('replay_servers', 'replay_servers.id', 'agent_rollout_boxes.replay_server_id')
    .selectAll('agent_rollout_boxes')
    .select([
      'replay_servers.status as box_status',
      'replay_servers.area_id',
      'replay_servers.version',
      'replay_servers.target_version',
      'replay_servers.architecture',
      'replay_servers.update_state',
      'replay_servers.update_version',
      'replay_servers.update_reason',
      'replay_servers.last_seen_at'
    ])
    .where('rollout_id', '=', id)
    .execute()
}
type BoxRow = Awaited<ReturnType<typeof boxesOf>>[number]

type Move = Partial<Pick<AgentRolloutBoxesTable, 'state' | 'reason' | 'offered_at' | 'version_at' | 'recording_since' | 'finished_at'>>

/** Writes a box's move, only if it still stands where it was read. */
async function moveBox(tx: Tx, box: BoxRow, move: Move): Promise<void> {
  await tx
    .updateTable('agent_rollout_boxes')
    .set(move)
    .where('rollout_id', '=', box.rollout_id)
    .where('replay_server_id', '=', box.replay_server_id)
    .where('state', '=', box.state)
    .execute()
  Object.assign(box, move)
}

const later = (a: string | null, b: string | null): string | null => (a === null ? b : b === null ? a : a > b ? a : b)

/** Where a box offered the release (OFFERED or UPDATED) stands now; undefined: unchanged. */
async function judgeBox(tx: Tx, rollout: AgentRolloutsTable, box: BoxRow, now: Date, deps: RolloutDeps): Promise<Move | undefined> {
  const at = now.toISOString()
  const { version } = rollout
  const exclude = (reason: string): Move => ({ state: 'EXCLUDED', reason, finished_at: at })
  const fail = (reason: string): Move => ({ state: 'FAILED', reason, finished_at: at })
  if (box.box_status !== 'APPROVED' || box.area_id === null) return exclude('no longer an approved box')
  if (box.target_version !== version) {
    return exclude(box.target_version === null ? 'its target version was cleared by hand' : `its own target version ${box.target_version} was set by hand`)
  }
  if (box.update_version === version && (box.update_state === 'ROLLED_BACK' || box.update_state === 'FAILED')) {
    return fail(`it reported ${box.update_state}${box.update_reason ? `: ${box.update_reason}` : ''}`)
  }
  const silentMs = rollout.silent_timeout_minutes * 60_000
  const heard = later(box.last_seen_at, box.offered_at)
  if (heard !== null && now.getTime() - Date.parse(heard) >= silentMs) {
    return fail(`silent since ${heard} (silentTimeoutMinutes ${rollout.silent_timeout_minutes})`)
  }
  if (box.version !== version) return undefined
  const versionAt = box.version_at ?? at
  const ran: Move = box.version_at === null ? { state: 'UPDATED', version_at: versionAt } : {}
  if (rollout.health_seconds === 0 || !deps.recordingSince) return { state: 'SUCCEEDED', version_at: versionAt, finished_at: at }
  const since = await deps.recordingSince(tx, box.replay_server_id)
  if (since === null) {
    if (box.recording_since !== null) return fail(`its cameras stopped recording within healthSeconds of running ${version}`)
    if (now.getTime() - Date.parse(versionAt) >= silentMs) {
      return fail(`its cameras did not all record within silentTimeoutMinutes (${rollout.silent_timeout_minutes}) of running ${version}`)
    }
    return box.version_at === null ? ran : undefined
  }
  const sinceText = since.toISOString()
  if (box.recording_since !== null && sinceText > box.recording_since) {
    return fail(`its cameras stopped recording within healthSeconds of running ${version} (recording again since ${sinceText})`)
  }
  const recordingFrom = Math.max(since.getTime(), Date.parse(versionAt))
  if (now.getTime() - recordingFrom >= rollout.health_seconds * 1000) return { state: 'SUCCEEDED', version_at: versionAt, recording_since: sinceText, finished_at: at }
  return box.recording_since === null || box.version_at === null ? { ...ran, state: 'UPDATED', version_at: versionAt, recording_since: sinceText } : undefined
}

/** Offers the release to a box of a group that opens, unless the box is left out (then EXCLUDED, and why). */
async function offerBox(tx: Tx, rollout: AgentRolloutsTable, box: BoxRow, now: Date): Promise<void> {
  const at = now.toISOString()
  const exclude = (reason: string) => moveBox(tx, box, { state: 'EXCLUDED', reason, finished_at: at })
  if (box.box_status !== 'APPROVED' || box.area_id === null) return exclude('no longer an approved box')
  const own = ownTarget({ id: box.replay_server_id, status: box.box_status, area_id: box.area_id, version: box.version, target_version: box.target_version, update_state: box.update_state, update_version: box.update_version }, rollout.version)
  if (own) return exclude(own)
  if (!(await findRelease(tx, rollout.version, box.architecture))) return exclude(`no release of ${rollout.version} for its architecture ${box.architecture}`)
  // As a target set anew: the update state the box reported before (a ROLLED_BACK or FAILED of this
  // very version included) is cleared, so the box tries again and only what it reports from now on counts.
  await tx
    .updateTable('replay_servers')
    .set({ target_version: rollout.version, update_state: null, update_version: null, update_reason: null, updated_at: at })
    .where('id', '=', box.replay_server_id)
    .execute()
  Object.assign(box, { target_version: rollout.version, update_state: null, update_version: null, update_reason: null })
  await moveBox(tx, box, { state: 'OFFERED', offered_at: at })
}

/**
 * Withdraws the offer from the rollout's boxes that do not run the version (the rollout halted or
 * was cancelled): their target goes back to none, unless an admin set another meanwhile. Boxes that
 * run it keep it; a box installing right now finishes or rolls back by itself. Only boxes it offered:
 * a box it never offered that heads for the version was set so by hand, and keeps it.
 */
async function withdrawOffers(tx: Tx, rollout: AgentRolloutsTable, now: Date, why: string): Promise<void> {
  const boxes = tx.selectFrom('agent_rollout_boxes').select('replay_server_id').where('rollout_id', '=', rollout.id).where('offered_at', 'is not', null)
  await tx
    .updateTable('replay_servers')
    .set({ target_version: null, updated_at: now.toISOString() })
    .where('id', 'in', boxes)
    .where('target_version', '=', rollout.version)
    .where((eb) => eb.or([eb('version', 'is', null), eb('version', '!=', rollout.version)]))
    .execute()
  await tx
    .updateTable('agent_rollout_boxes')
    .set({ reason: `no longer offered: ${why}` })
    .where('rollout_id', '=', rollout.id)
    .where('state', '=', 'OFFERED')
    .execute()
}

/** A threshold as a number of boxes of a group's `active` (not excluded) ones. */
const successesNeeded = (rollout: AgentRolloutsTable, active: number) => Math.ceil((rollout.success_threshold_percent * active) / 100 - 1e-9)
const failuresNeeded = (rollout: AgentRolloutsTable, active: number) => Math.max(1, Math.ceil((rollout.error_threshold_percent * active) / 100 - 1e-9))

/** Sets a rollout's status, only from `from`; answers whether this call did. */
async function setStatus(tx: Tx, rollout: AgentRolloutsTable, from: AgentRolloutStatus[], to: AgentRolloutStatus, now: Date, haltedReason?: string): Promise<boolean> {
  const result = await tx
    .updateTable('agent_rollouts')
    .set({ status: to, updated_at: now.toISOString(), ...(haltedReason !== undefined ? { halted_reason: haltedReason } : {}) })
    .where('id', '=', rollout.id)
    .where('status', 'in', from)
    .executeTakeFirst()
  if (Number(result.numUpdatedRows) !== 1) return false
  rollout.status = to
  return true
}

/** Sets a group's status, only from `from`; answers whether this call did. */
async function setGroupStatus(tx: Tx, rolloutId: string, group: AgentRolloutGroupsTable, to: AgentRolloutGroupsTable['status'], now: Date): Promise<boolean> {
  const stamp = to === 'OPEN' ? { opened_at: now.toISOString() } : to === 'COMPLETED' ? { completed_at: now.toISOString() } : {}
  const result = await tx
    .updateTable('agent_rollout_groups')
    .set({ status: to, ...stamp })
    .where('rollout_id', '=', rolloutId)
    .where('position', '=', group.position)
    .where('status', '=', group.status)
    .executeTakeFirst()
  if (Number(result.numUpdatedRows) !== 1) return false
  Object.assign(group, { status: to, ...stamp })
  return true
}

/**
 * One step of a RUNNING or PAUSED rollout, inside the caller's write transaction: judge every box
 * offered the release, halt on a group's error threshold, and (RUNNING only) complete the open
 * group on its success threshold and open the next, or complete the rollout after the last.
 */
async function step(tx: Tx, id: string, now: Date, deps: RolloutDeps): Promise<void> {
  const rollout = await rolloutRow(tx, id)
  if (!ACTIVE.includes(rollout.status)) return
  const groups = await tx.selectFrom('agent_rollout_groups').selectAll().where('rollout_id', '=', id).orderBy('position').execute()
  const boxes = await boxesOf(tx, id)
  for (const box of boxes) {
    if (!PENDING.includes(box.state)) continue
    const move = await judgeBox(tx, rollout, box, now, deps)
    if (move) await moveBox(tx, box, move)
  }
  const tally = (group: AgentRolloutGroupsTable) => {
    const of = boxes.filter((b) => b.position === group.position)
    const active = of.filter((b) => b.state !== 'EXCLUDED').length
    return {
      of,
      failedEnough: of.filter((b) => b.state === 'FAILED').length >= failuresNeeded(rollout, active),
      succeededEnough: of.filter((b) => b.state === 'SUCCEEDED').length >= successesNeeded(rollout, active)
    }
  }
  for (const group of groups) {
    if (group.status === 'WAITING' || group.status === 'HALTED') continue
    if (!tally(group).failedEnough) continue
    const failed = tally(group).of.filter((b) => b.state === 'FAILED')
    const reason = `group ${group.position}: ${failed.length} of its boxes failed (errorThresholdPercent ${rollout.error_threshold_percent}): ${failed
      .slice(0, 3)
      .map((b) => `${b.replay_server_id} ${b.reason}`)
      .join('; ')}${failed.length > 3 ? '; …' : ''}`
    if (!(await setStatus(tx, rollout, ACTIVE, 'HALTED', now, reason))) return
    await setGroupStatus(tx, id, group, 'HALTED', now)
    await withdrawOffers(tx, rollout, now, 'the rollout halted')
    await tell(tx, id, 'agent_rollout.halted', now)
    return
  }
  if (rollout.status !== 'RUNNING') return
  for (;;) {
    const open = groups.filter((g) => g.status !== 'WAITING').at(-1)
    if (open?.status === 'OPEN') {
      if (!tally(open).succeededEnough) return
      if (!(await setGroupStatus(tx, id, open, 'COMPLETED', now))) return
      await tell(tx, id, 'agent_rollout.group_completed', now)
    }
    const next = groups.find((g) => g.status === 'WAITING')
    if (!next) {
      if (await setStatus(tx, rollout, ['RUNNING'], 'COMPLETED', now)) await tell(tx, id, 'agent_rollout.completed', now)
      return
    }
    if (!(await setGroupStatus(tx, id, next, 'OPEN', now))) return
    for (const box of boxes) if (box.position === next.position && box.state === 'WAITING') await offerBox(tx, rollout, box, now)
  }
}

/** Advances one rollout, in a write transaction of its own. */
export async function advanceRollout(db: Db, id: string, deps: RolloutDeps): Promise<void> {
  await db.transaction().execute((tx) => step(tx, id, deps.clock.now(), deps))
}

/** Advances every RUNNING or PAUSED rollout (the interval teller); answers how many it looked at. */
export async function advanceRollouts(db: Db, deps: RolloutDeps): Promise<number> {
  const rows = await db.selectFrom('agent_rollouts').select('id').where('status', 'in', ACTIVE).orderBy('created_at').execute()
  for (const row of rows) await advanceRollout(db, row.id, deps)
  return rows.length
}

// ---------------------------------------------------------------------------------------------
// Staff's transitions

/** Moves a rollout from one of `from` to `to` (409 naming its state otherwise), with what goes with it. */
async function transition(
  db: Db,
  id: string,
  from: AgentRolloutStatus[],
  to: AgentRolloutStatus,
  deps: RolloutDeps,
  also: (tx: Tx, rollout: AgentRolloutsTable, now: Date) => Promise<void> = async () => {}
): Promise<AgentRollout> {
  const now = deps.clock.now()
  await db.transaction().execute(async (tx) => {
    const rollout = await rolloutRow(tx, id)
    if (!(await setStatus(tx, rollout, from, to, now))) {
      throw new ConflictError(`the rollout is ${rollout.status}; only a ${from.join(' or ')} rollout can be ${({ PAUSED: 'paused', RUNNING: 'resumed', CANCELLED: 'cancelled' } as Record<string, string>)[to]}`)
    }
    await also(tx, rollout, now)
  })
  return getAgentRollout(db, id)
}

/** RUNNING → PAUSED: no further group opens; offers already made stand (their boxes are still judged, and may halt it). */
export const pauseAgentRollout = (db: Db, id: string, deps: RolloutDeps) => transition(db, id, ['RUNNING'], 'PAUSED', deps)

/** PAUSED → RUNNING, and a step at once: a group that reached its threshold meanwhile completes and the next opens. */
export const resumeAgentRollout = (db: Db, id: string, deps: RolloutDeps) =>
  transition(db, id, ['PAUSED'], 'RUNNING', deps, async (tx, _rollout, now) => {
    if (deps.stepNow !== false) await step(tx, id, now, deps)
  })

/** RUNNING or PAUSED → CANCELLED: boxes not yet running the version are no longer offered it. */
export const cancelAgentRollout = (db: Db, id: string, deps: RolloutDeps) =>
  transition(db, id, ACTIVE, 'CANCELLED', deps, async (tx, rollout, now) => {
    await withdrawOffers(tx, rollout, now, 'the rollout was cancelled')
    await tell(tx, id, 'agent_rollout.cancelled', now)
  })
