// Redeeming a package item (BILLING.md, "Packages"): one transaction (IMMEDIATE on SQLite, the
// package rows locked on PostgreSQL) resolves the target, finds a live redemption of the same target
// (a retry: answered as it is), picks the first item of the type whose constraints match, takes one
// with a conditional update (remaining > 0), and writes the redemption with its zero-total order line.
// The CHECK on the count and the unique index on (item, target) refuse a double spend even if this
// code were wrong.
import type { PackageItemConstraints, PackageItemRedemption, RedemptionRequest, ValidationError } from '@club/contract'
import { randomUUID } from 'node:crypto'
import { isStaff, type Actor } from '../actor.js'
import type { Clock } from '../clock.js'
import { compiledInsert, compiledOnce, runCompiled } from '../db/compiled.js'
import type { Db, DbOrTx } from '../db/database.js'
import { forUpdate, rowLocked } from '../db/sql.js'
import type { OrdersTable, PackageItemsTable, PackageRedemptionsTable, PackagesTable } from '../db/schema.js'
import { BadRequestError, ConflictError, ForbiddenError, HttpError, NotFoundError, quote } from '../errors.js'
import { recordPackageEvent, recordRedemptionEvent, redemptionCollection, toRedemption } from './answers.js'
import { unmatchedConstraints } from './constraints.js'
import { storedStatus, visiblePackage } from './service.js'
import { resolveTarget, type ResolvedTarget } from './targets.js'

// The redemption path runs these on every request: built and compiled once (db/compiled.ts).
const liveRedemptionQuery = compiledOnce((db) =>
  db.selectFrom('package_redemptions').selectAll().where('package_id', '=', '').where('type', '=', '').where('target_key', '=', '').where('cancelation_date', 'is', null)
)
const itemsOfTypeQuery = compiledOnce((db) => db.selectFrom('package_items').selectAll().where('package_id', '=', '').where('type', '=', '').orderBy('item'))
const takeOneQuery = compiledOnce((db) =>
  db
    .updateTable('package_items')
    .set((eb) => ({ remaining_items: eb('remaining_items', '-', 1) }))
    .where('id', '=', '')
    .where('remaining_items', '>', 0)
    .returning('remaining_items')
)

// The two inserts of every redemption, compiled once too.
const insertOrder = compiledInsert('orders', [
  'id', 'user_id', 'creator_id', 'kind', 'membership_subscription_id', 'period_start', 'status', 'currency', 'subtotal_minor', 'total_minor',
  'lines', 'fees', 'taxes', 'provider', 'provider_ref', 'idempotency_key', 'failure_code', 'failure_message', 'created_at', 'updated_at'
])
const insertRedemption = compiledInsert('package_redemptions', [
  'id', 'package_id', 'item_id', 'item', 'type', 'user_id', 'creator_id', 'target_key', 'target', 'target_start_at', 'order_id', 'order_item_id',
  'redemption_date', 'cancelation_date', 'forfeited', 'given_back_by', 'given_back_reason', 'delivered_at'
])

export interface RedemptionDeps {
  clock: Clock
  clubTimezone: string
  currency: string
  /** PACKAGE_LATE_CANCEL_HOURS */
  lateCancelHours: number
}

/** A refused redemption: a 409 whose body names each constraint that did not match. */
export class RedemptionRefusedError extends HttpError {
  override name = 'RedemptionRefusedError'
  constructor(message: string, errors: ValidationError[]) {
    super(409, message, {}, { errors })
  }
}

export interface Redeemed {
  created: boolean
  redemption: PackageItemRedemption
}

/** Who uses the item: the holder by default; a member may name someone on a membership they own; staff anyone. */
async function usingUser(tx: DbOrTx, requested: RedemptionRequest['user'], holderId: string, actor: Actor): Promise<string> {
  const id = requested?.id ?? holderId
  if (id === holderId || id === actor.id) return id
  if (isStaff(actor)) {
    if (!(await tx.selectFrom('users').select('id').where('id', '=', id).executeTakeFirst())) throw new BadRequestError(`body.user.id: no user ${quote(id)}`)
    return id
  }
  const family = await tx
    .selectFrom('membership_enrollments as e')
    .innerJoin('membership_subscriptions as s', 's.id', 'e.subscription_id')
    .select('e.id')
    .where('s.member_id', '=', holderId)
    .where('e.user_id', '=', id)
    // An invitation not accepted makes no one family.
    .where('e.invitation_status', '=', 'ACCEPTED')
    .executeTakeFirst()
  // Anyone else is refused without saying whether that user exists.
  if (!family) throw new BadRequestError('body.user.id: a member may name only themself or someone on a membership they own')
  return id
}

const usable = (row: PackagesTable, nowIso: string) => row.status !== 'CANCELED' && row.expiration_date > nowIso

function unusableReason(row: PackagesTable, nowIso: string): string | null {
  if (row.status === 'CANCELED') return `package ${row.id} was cancelled`
  if (row.expiration_date <= nowIso) return `package ${row.id} expired on ${row.expiration_date}`
  return null
}

async function liveRedemption(tx: DbOrTx, packageIds: string[], target: ResolvedTarget, type: string) {
  for (const id of packageIds) {
    const found = (await runCompiled(tx, liveRedemptionQuery, [id, type, target.key]))[0]
    if (found) return found
  }
  return undefined
}

/** Takes one item of `item`'s kind, or answers why not (nothing left, or the constraints it failed). */
async function take(tx: DbOrTx, row: PackagesTable, item: PackageItemsTable, target: ResolvedTarget, userId: string, actor: Actor, deps: RedemptionDeps, now: Date) {
  // Parameters in the builder's order: the decrement, the item, the floor.
  const taken = (await runCompiled(tx, takeOneQuery, [1, item.id, 0]))[0]
  if (!taken) return undefined
  const orderId = randomUUID()
  const orderItemId = randomUUID()
  const at = now.toISOString()
  await insertOrder(tx, {
      id: orderId,
      user_id: row.user_id,
      creator_id: actor.id,
      kind: 'REDEMPTION',
      membership_subscription_id: null,
      period_start: null,
      status: 'PAID',
      currency: row.currency ?? deps.currency,
      subtotal_minor: 0,
      total_minor: 0,
      lines: JSON.stringify([{ id: orderItemId, kind: 'redemption', description: `${item.display_name}: ${target.description}`.slice(0, 500), amount: 0 }]),
      fees: '[]',
      taxes: '[]',
      provider: null,
      provider_ref: null,
      idempotency_key: `redemption:${orderId}`,
      failure_code: null,
      failure_message: null,
      created_at: at,
      updated_at: at
  } satisfies OrdersTable)
  const redemption: PackageRedemptionsTable = {
    id: randomUUID(),
    package_id: row.id,
    item_id: item.id,
    item: item.item,
    type: item.type,
    user_id: userId,
    creator_id: actor.id,
    target_key: target.key,
    target: JSON.stringify(target.stored),
    target_start_at: target.startAt,
    order_id: orderId,
    order_item_id: orderItemId,
    redemption_date: at,
    cancelation_date: null,
    forfeited: 0,
    given_back_by: null,
    given_back_reason: null,
    delivered_at: null
  }
  await insertRedemption(tx, redemption)
  await recordRedemptionEvent(tx, redemption, 'package_redemption.created', now)
  // Only the last of an item can change the package's status (to EXHAUSTED).
  if (taken.remaining_items === 0) {
    const items = await tx.selectFrom('package_items').select('remaining_items').where('package_id', '=', row.id).execute()
    const status = storedStatus(items)
    await tx.updateTable('packages').set({ status, updated_at: at }).where('id', '=', row.id).execute()
    if (status === 'EXHAUSTED') await recordPackageEvent(tx, row.id, 'package.exhausted', now)
  }
  return redemption
}

/**
 * Redeems from `candidates` in order (the package named, or the holder's usable packages, the one
 * expiring first first): the first item of the type whose constraints match and which has one left.
 */
async function redeemFrom(tx: DbOrTx, candidates: PackagesTable[], holderId: string, body: RedemptionRequest, actor: Actor, deps: RedemptionDeps): Promise<Redeemed> {
  const now = deps.clock.now()
  const nowIso = now.toISOString()
  const userId = await usingUser(tx, body.user, holderId, actor)
  const target = await resolveTarget(tx, body.type, body.target, userId, deps.clubTimezone)
  const again = await liveRedemption(tx, candidates.map((c) => c.id), target, body.type)
  if (again) return { created: false, redemption: toRedemption(again) }

  const errors: ValidationError[] = []
  let matchedButEmpty = false
  const reasons: string[] = []
  for (const row of candidates) {
    const reason = unusableReason(row, nowIso)
    if (reason) {
      reasons.push(reason)
      continue
    }
    const items = await runCompiled(tx, itemsOfTypeQuery, [row.id, body.type])
    for (const item of items) {
      const unmatched = unmatchedConstraints(JSON.parse(item.constraints) as PackageItemConstraints, target.subject)
      if (unmatched.length > 0) {
        const label = candidates.length > 1 ? `package ${row.id} item ${item.item}` : `item ${item.item}`
        errors.push(...unmatched.map((e) => ({ ...e, message: `${label}: ${e.message}`, details: { ...e.details, package: row.id, item: item.item } })))
        continue
      }
      if (item.remaining_items === 0) {
        matchedButEmpty = true
        continue
      }
      const redemption = await take(tx, row, item, target, userId, actor, deps, now)
      if (redemption) return { created: true, redemption: toRedemption(redemption) }
      matchedButEmpty = true
    }
  }
  if (candidates.length === 1 && reasons.length === 1) throw new ConflictError(`${reasons[0]}; nothing can be redeemed from it`)
  if (matchedButEmpty) throw new ConflictError(`no ${body.type} item is left${candidates.length > 1 ? ' in any usable package' : ` in package ${candidates[0]!.id}`}`)
  if (errors.length > 0) throw new RedemptionRefusedError(`no ${body.type} item may pay for this: ${errors.map((e) => e.message).join('; ')}`.slice(0, 1000), errors)
  throw new ConflictError(candidates.length === 1 ? `package ${candidates[0]!.id} has no ${body.type} items` : `you hold no usable package with a ${body.type} item`)
}

// A redemption's rules (one item per redemption, a retry answered, EXHAUSTED when the last goes) are
// kept by the lock on each candidate package's row, taken before anything is read: redemptions of
// one package take turns, those of different packages (and processes) run side by side.
export async function redeemFromPackage(db: Db, packageId: string, body: RedemptionRequest, actor: Actor, deps: RedemptionDeps): Promise<Redeemed> {
  return rowLocked(db, async (tx) => {
    const row = await visiblePackage(tx, packageId, actor, { forUpdate: true })
    return redeemFrom(tx, [row], row.user_id, body, actor, deps)
  })
}

/** From whichever of the actor's usable packages holding a matching item expires first. */
export async function redeemFromAny(db: Db, body: RedemptionRequest, actor: Actor, deps: RedemptionDeps): Promise<Redeemed> {
  return rowLocked(db, (tx) => redeemFromAnyIn(tx, body, actor, deps))
}

/** redeemFromAny inside a caller's transaction (a replay is recorded with the item that pays for it). */
export async function redeemFromAnyIn(tx: DbOrTx, body: RedemptionRequest, actor: Actor, deps: RedemptionDeps): Promise<Redeemed> {
  const nowIso = deps.clock.now().toISOString()
  // Locked in this order by every redemption from any package: two never wait on each other crosswise.
  const candidates = tx
    .selectFrom('packages')
    .selectAll()
    .where('user_id', '=', actor.id)
    .where('status', '!=', 'CANCELED')
    .where('expiration_date', '>', nowIso)
    .where((eb) => eb.exists(eb.selectFrom('package_items').select('id').whereRef('package_items.package_id', '=', 'packages.id').where('package_items.type', '=', body.type)))
    .orderBy('expiration_date')
    .orderBy('created_at')
    .orderBy('id')
  const rows = await forUpdate(tx, candidates).execute()
  if (rows.length === 0) {
    // Resolve the target first, so a bad target is a 400 rather than "no package".
    await resolveTarget(tx, body.type, body.target, actor.id, deps.clubTimezone)
    throw new ConflictError(`you hold no usable package with a ${body.type} item`)
  }
  return redeemFrom(tx, rows, actor.id, body, actor, deps)
}

/**
 * Cancels a redemption for its item back, while what it paid for has not been delivered (BILLING.md,
 * "Packages"): an event or a booking until PACKAGE_LATE_CANCEL_HOURS before it begins; a replay
 * while it is still being made (it is given up with the item: a replay and its item never both
 * stay). Past that the cancellation is refused with 409 naming the rule: spent is spent. An expired
 * or cancelled package takes the cancellation and gives nothing back (forfeited). Cancelling again
 * answers it as it is.
 */
export async function cancelRedemption(db: Db, packageId: string, redemptionId: string, actor: Actor, deps: RedemptionDeps): Promise<PackageItemRedemption> {
  return db.transaction().execute((tx) => cancelRedemptionIn(tx, packageId, redemptionId, actor, deps))
}

/** The redemption of a package the actor may see, or 404. */
async function visibleRedemption(tx: DbOrTx, packageId: string, redemptionId: string, actor: Actor) {
  const row = await visiblePackage(tx, packageId, actor)
  const redemption = await tx.selectFrom('package_redemptions').selectAll().where('id', '=', redemptionId).where('package_id', '=', row.id).executeTakeFirst()
  if (!redemption) throw new NotFoundError(`redemption ${quote(redemptionId)} not found in package ${row.id}`)
  return { row, redemption }
}

export async function getRedemption(db: DbOrTx, packageId: string, redemptionId: string, actor: Actor): Promise<PackageItemRedemption> {
  return toRedemption((await visibleRedemption(db, packageId, redemptionId, actor)).redemption)
}

export async function listRedemptions(db: DbOrTx, packageId: string, actor: Actor) {
  const row = await visiblePackage(db, packageId, actor)
  const rows = await db.selectFrom('package_redemptions').selectAll().where('package_id', '=', row.id).orderBy('redemption_date').orderBy('id').execute()
  return redemptionCollection(row.id, rows)
}

const REPLAY_BEING_MADE = ['REQUESTED', 'EXPORTING', 'UPLOADING'] as const

/**
 * Why the item cannot come back (its target delivered or begun), or null. A replay still being made
 * is given up here, conditionally on its status, so a box reporting READY at the same moment either
 * came first (and this refuses) or finds it FAILED (and its report is refused).
 */
async function spentReason(tx: DbOrTx, redemption: PackageRedemptionsTable, now: Date, deps: RedemptionDeps): Promise<string | null> {
  // Delivered is for good: a replay once READY stays paid for when its row is deleted, taken down or expired.
  if (redemption.delivered_at !== null) return deliveredReason(redemption)
  if (redemption.type === 'REPLAY') {
    const replay = await tx.selectFrom('replays').select(['id', 'status']).where('redemption_id', '=', redemption.id).executeTakeFirst()
    // No replay row and never delivered (deleted before READY, which gave the item back) or a FAILED one.
    if (!replay || replay.status === 'FAILED') return null
    const givenUp = await tx
      .updateTable('replays')
      .set({ status: 'FAILED', reason: 'redemption_cancelled', updated_at: now.toISOString() })
      .where('id', '=', replay.id)
      .where('status', 'in', [...REPLAY_BEING_MADE])
      .executeTakeFirst()
    if (Number(givenUp.numUpdatedRows) === 1) return null
    return `replay ${replay.id} it paid for was delivered (${replay.status}): its item stays spent`
  }
  const startAt = await targetStartNow(tx, redemption)
  if (startAt === null) return null
  const deadline = Date.parse(startAt) - deps.lateCancelHours * 3_600_000
  if (now.getTime() < deadline) return null
  const window = deps.lateCancelHours > 0 ? ` (PACKAGE_LATE_CANCEL_HOURS is ${deps.lateCancelHours}: until ${new Date(deadline).toISOString()})` : ''
  return `what it paid for begins at ${startAt}; an item comes back only when cancelled before it begins${window}: its item stays spent`
}

/**
 * When what a redemption paid for begins, as the venue stands now: an event moved since counts where
 * it is (one deleted keeps the start recorded); a series counts from its earliest event, recorded or
 * added since (a series redeemed before it had events would otherwise stay cancellable for good).
 */
async function targetStartNow(tx: DbOrTx, redemption: PackageRedemptionsTable): Promise<string | null> {
  const target = JSON.parse(redemption.target) as { event?: { id: string }; series?: { id: string } }
  if (target.event) {
    const event = await tx.selectFrom('events').select('start_at').where('id', '=', target.event.id).executeTakeFirst()
    return event?.start_at ?? redemption.target_start_at
  }
  if (target.series) {
    const first = await tx.selectFrom('events').select('start_at').where('series_id', '=', target.series.id).orderBy('start_at').executeTakeFirst()
    const starts = [redemption.target_start_at, first?.start_at].filter((at): at is string => typeof at === 'string')
    return starts.length === 0 ? null : starts.reduce((a, b) => (Date.parse(a) <= Date.parse(b) ? a : b))
  }
  return redemption.target_start_at
}

function deliveredReason(redemption: PackageRedemptionsTable): string {
  const replayId = (JSON.parse(redemption.target) as { replay?: { id: string } }).replay?.id
  const what = replayId === undefined ? 'what' : `replay ${replayId}`
  return `${what} it paid for was delivered on ${redemption.delivered_at}, whatever became of it since: its item stays spent`
}

/**
 * Marks what a redemption paid for delivered (a replay reported READY), in the transaction that
 * delivers it: from then on no cancellation gives its item back, only staff's give-back.
 */
export async function markDelivered(tx: DbOrTx, redemptionId: string, nowIso: string): Promise<void> {
  await tx.updateTable('package_redemptions').set({ delivered_at: nowIso }).where('id', '=', redemptionId).where('delivered_at', 'is', null).execute()
}

/** The item of a cancelled (or given back) redemption returns, and the package's status with it. */
async function returnItem(tx: DbOrTx, redemption: PackageRedemptionsTable, nowIso: string): Promise<void> {
  await tx.updateTable('package_items').set((eb) => ({ remaining_items: eb('remaining_items', '+', 1) })).where('id', '=', redemption.item_id).execute()
  const items = await tx.selectFrom('package_items').select('remaining_items').where('package_id', '=', redemption.package_id).execute()
  await tx.updateTable('packages').set({ status: storedStatus(items), updated_at: nowIso }).where('id', '=', redemption.package_id).execute()
}

/**
 * Marks the redemption cancelled if no one else did first (a conditional update: two cancellations
 * racing in two processes give one item back) and, unless staff give it back on purpose, if what it
 * paid for was not delivered meanwhile (a READY committed after the redemption was read); answers the
 * row as it ends up.
 */
async function markCancelled(
  tx: DbOrTx,
  redemption: PackageRedemptionsTable,
  changes: Partial<PackageRedemptionsTable>,
  rule: { evenDelivered: boolean } = { evenDelivered: false }
): Promise<PackageRedemptionsTable | null> {
  let update = tx.updateTable('package_redemptions').set(changes).where('id', '=', redemption.id).where('cancelation_date', 'is', null)
  if (!rule.evenDelivered) update = update.where('delivered_at', 'is', null)
  const done = await update.executeTakeFirst()
  if (Number(done.numUpdatedRows) !== 1) return null
  const cancelled = { ...redemption, ...changes }
  await recordRedemptionEvent(tx, cancelled, 'package_redemption.canceled', new Date(cancelled.cancelation_date!))
  return cancelled
}

async function currentRedemption(tx: DbOrTx, id: string): Promise<PackageItemRedemption> {
  return toRedemption(await tx.selectFrom('package_redemptions').selectAll().where('id', '=', id).executeTakeFirstOrThrow())
}

/** cancelRedemption inside a caller's transaction (a failed replay gives its item back with its status). */
export async function cancelRedemptionIn(tx: DbOrTx, packageId: string, redemptionId: string, actor: Actor, deps: RedemptionDeps): Promise<PackageItemRedemption> {
  const now = deps.clock.now()
  const nowIso = now.toISOString()
  const { row, redemption } = await visibleRedemption(tx, packageId, redemptionId, actor)
  if (redemption.cancelation_date !== null) return toRedemption(redemption)
  const givesBack = usable(row, nowIso)
  if (givesBack) {
    const spent = await spentReason(tx, redemption, now, deps)
    if (spent) throw new ConflictError(`redemption ${redemption.id} cannot be cancelled: ${spent}`)
  }
  const cancelled = await markCancelled(tx, redemption, { cancelation_date: nowIso, forfeited: givesBack ? 0 : 1 })
  if (!cancelled) {
    const current = await tx.selectFrom('package_redemptions').selectAll().where('id', '=', redemption.id).executeTakeFirstOrThrow()
    if (current.cancelation_date === null) throw new ConflictError(`redemption ${redemption.id} cannot be cancelled: ${deliveredReason(current)}`)
    return toRedemption(current)
  }
  if (givesBack) await returnItem(tx, redemption, nowIso)
  return toRedemption(cancelled)
}

/**
 * The item of a replay that was never delivered (the box failed it, nobody started it, staff took it
 * down or its member deleted it before READY) comes back: the server's finding, not a member's
 * cancellation, so the rules for those (spentReason) do not apply. A package that has expired or was
 * cancelled meanwhile keeps it used, as a member's cancellation would.
 */
export async function returnUndeliveredIn(tx: DbOrTx, packageId: string, redemptionId: string, holder: Actor, clock: Clock): Promise<void> {
  const nowIso = clock.now().toISOString()
  const { row, redemption } = await visibleRedemption(tx, packageId, redemptionId, holder)
  if (redemption.cancelation_date !== null) return
  const givesBack = usable(row, nowIso)
  const cancelled = await markCancelled(tx, redemption, { cancelation_date: nowIso, forfeited: givesBack ? 0 : 1 })
  if (cancelled && givesBack) await returnItem(tx, redemption, nowIso)
}

/**
 * Staff give an item back on purpose, past the cancellation rules (a class the club called off, a
 * replay that came out black), recorded with who and why. Not once the package expired or was
 * cancelled; a redemption already cancelled is answered as it is.
 */
export async function giveBackRedemption(db: Db, packageId: string, redemptionId: string, reason: string, actor: Actor, clock: Clock): Promise<PackageItemRedemption> {
  if (!isStaff(actor)) throw new ForbiddenError('only staff may give an item back past the cancellation rules')
  const why = reason.trim()
  if (why === '') throw new BadRequestError('body.reason: say why the item is given back')
  return db.transaction().execute(async (tx) => {
    const nowIso = clock.now().toISOString()
    const { row, redemption } = await visibleRedemption(tx, packageId, redemptionId, actor)
    if (redemption.cancelation_date !== null) return toRedemption(redemption)
    const unusable = unusableReason(row, nowIso)
    if (unusable) throw new ConflictError(`${unusable}; no item can be given back to it`)
    const given = await markCancelled(tx, redemption, { cancelation_date: nowIso, forfeited: 0, given_back_by: actor.id, given_back_reason: why }, { evenDelivered: true })
    if (!given) return currentRedemption(tx, redemption.id)
    await returnItem(tx, redemption, nowIso)
    return toRedemption(given)
  })
}
