// Packages as members and staff see them: issued by staff (or a purchase, or a membership's perk),
// read with their items' remaining counts and their redemptions, renamed or re-dated by staff, and
// cancelled by staff with the unused share of a bought package refunded through the provider.
import type { Package, PackageIssue, PackageListQuery, PackagePatch } from '@club/contract'
import { randomUUID } from 'node:crypto'
import { isStaff, type Actor } from '../actor.js'
import { divideRoundHalfUp } from '../billing/money.js'
import type { Clock } from '../clock.js'
import { compiledOnce, runCompiled } from '../db/compiled.js'
import type { Db, DbOrTx } from '../db/database.js'
import { forUpdate } from '../db/sql.js'
import type { OrdersTable, PackageItemsTable, PackagesTable } from '../db/schema.js'
import { BadGatewayError, BadRequestError, ConflictError, ForbiddenError, NotFoundError, quote } from '../errors.js'
import { requestInstant } from '../instants.js'
import { refundOrder } from '../orders/charging.js'
import { pageRequest, paged } from '../paging.js'
import { PaymentProviderError, type PaymentProvider } from '../payments/provider.js'
import { answerAll, answerPackage, recordPackageEvent } from './answers.js'
import { issuePackage } from './issue.js'

export interface PackageDeps {
  clock: Clock
  clubTimezone: string
}

/** What is written after a count changes or the date moves: EXHAUSTED when nothing is left. */
export const storedStatus = (items: Array<Pick<PackageItemsTable, 'remaining_items'>>) => (items.every((i) => i.remaining_items === 0) ? 'EXHAUSTED' : 'ACTIVE')

// Read on every redemption as well as every package route: compiled once (db/compiled.ts).
const packageQuery = compiledOnce((db) => db.selectFrom('packages').selectAll().where('id', '=', ''))
const lockedPackageQuery = compiledOnce((db) => forUpdate(db, db.selectFrom('packages').selectAll().where('id', '=', '')))

/**
 * The package if the actor holds it or is staff; anyone else is told it does not exist. `forUpdate`:
 * locked until the transaction ends, the lock a redemption's rules take (redemptions.ts).
 */
export async function visiblePackage(db: DbOrTx, id: string, actor: Actor, options: { forUpdate?: boolean } = {}): Promise<PackagesTable> {
  const row = (await runCompiled(db, options.forUpdate ? lockedPackageQuery : packageQuery, [id]))[0]
  if (!row || (row.user_id !== actor.id && !isStaff(actor))) throw new NotFoundError(`package ${quote(id)} not found`)
  return row
}

export async function createPackage(db: Db, input: PackageIssue, actor: Actor, deps: PackageDeps): Promise<Package> {
  const now = deps.clock.now()
  const expirationDate = input.expirationDate === undefined ? undefined : requestInstant(input.expirationDate, 'body.expirationDate')
  if (expirationDate !== undefined && expirationDate <= now) throw new BadRequestError('body.expirationDate must be in the future')
  return db.transaction().execute(async (tx) => {
    const user = await tx.selectFrom('users').select('id').where('id', '=', input.user.id).executeTakeFirst()
    if (!user) throw new BadRequestError(`body.user.id: no user ${quote(input.user.id)}`)
    const id = await issuePackage(tx, {
      templateId: input.template.id,
      userId: user.id,
      creatorId: actor.id,
      source: 'STAFF',
      issuedAt: now,
      timezone: deps.clubTimezone,
      expirationDate,
      field: 'body.template.id'
    })
    return answerPackage(tx, await tx.selectFrom('packages').selectAll().where('id', '=', id).executeTakeFirstOrThrow(), now)
  })
}

export async function getPackage(db: DbOrTx, id: string, actor: Actor, clock: Clock): Promise<Package> {
  return answerPackage(db, await visiblePackage(db, id, actor), clock.now())
}

/** A member's own packages; staff everyone's, or one user's. Newest first. */
export async function listPackages(db: DbOrTx, query: PackageListQuery, actor: Actor, clock: Clock, path: string) {
  if (query.userId !== undefined && query.userId !== actor.id && !isStaff(actor)) throw new ForbiddenError("only staff may list another user's packages")
  const now = clock.now().toISOString()
  const request = pageRequest(query)
  let base = db.selectFrom('packages')
  const userId = isStaff(actor) ? query.userId : actor.id
  if (userId !== undefined) base = base.where('user_id', '=', userId)
  // EXPIRED is derived: stored ACTIVE or EXHAUSTED with a passed date is EXPIRED to the reader.
  if (query.status === 'CANCELED') base = base.where('status', '=', 'CANCELED')
  else if (query.status === 'EXPIRED') base = base.where('status', '!=', 'CANCELED').where('expiration_date', '<=', now)
  else if (query.status !== undefined) base = base.where('status', '=', query.status).where('expiration_date', '>', now)
  if (query.itemType !== undefined) {
    const itemType = query.itemType
    base = base.where((eb) => eb.exists(eb.selectFrom('package_items').select('id').whereRef('package_items.package_id', '=', 'packages.id').where('package_items.type', '=', itemType)))
  }
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(request.ipp).offset(request.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  ])
  return paged(await answerAll(db, rows, clock.now()), Number(count.n), request, path, query)
}

export async function patchPackage(db: Db, id: string, patch: PackagePatch, actor: Actor, clock: Clock): Promise<Package> {
  const expiration = patch.expirationDate === undefined ? undefined : requestInstant(patch.expirationDate, 'body.expirationDate').toISOString()
  return db.transaction().execute(async (tx) => {
    const row = await visiblePackage(tx, id, actor)
    if (row.status === 'CANCELED') throw new ConflictError(`package ${row.id} was cancelled; a cancelled package is final`)
    const items = await tx.selectFrom('package_items').select('remaining_items').where('package_id', '=', id).execute()
    const updated: PackagesTable = {
      ...row,
      display_name: patch.displayName ?? row.display_name,
      display_name_plural: patch.displayNamePlural ?? row.display_name_plural,
      expiration_date: expiration ?? row.expiration_date,
      // A new date may bring an expired package back: its status follows its counts again.
      status: storedStatus(items),
      updated_at: clock.now().toISOString()
    }
    await tx
      .updateTable('packages')
      .set({ display_name: updated.display_name, display_name_plural: updated.display_name_plural, expiration_date: updated.expiration_date, status: updated.status, updated_at: updated.updated_at })
      .where('id', '=', id)
      .execute()
    return answerPackage(tx, updated, clock.now())
  })
}

/**
 * The unused share of what was paid: paid x unused items / all items, rounded half up. Unused means
 * never used: an item staff gave back on purpose (`givenBack`) was used once, so it is not refunded
 * even while it sits in the remaining count.
 */
export function refundOf(paidMinor: number, items: Array<Pick<PackageItemsTable, 'total_items' | 'remaining_items'>>, givenBack: number) {
  const all = items.reduce((sum, i) => sum + i.total_items, 0)
  const unused = Math.max(0, items.reduce((sum, i) => sum + i.remaining_items, 0) - givenBack)
  return { amount: all === 0 ? 0 : divideRoundHalfUp(BigInt(paidMinor) * BigInt(unused), BigInt(all)), unused, all }
}

/**
 * Cancels (final) and, for a bought package, refunds the unused share under a key of its own: the
 * refund order is written with the cancellation, then the provider is asked. If it cannot be
 * reached the answer is a 502 and calling cancel again retries that same refund; once made, nothing
 * more is refunded however often it is called.
 */
export async function cancelPackage(db: Db, id: string, actor: Actor, provider: PaymentProvider, clock: Clock): Promise<Package> {
  const now = clock.now()
  const { row, refund } = await db.transaction().execute(async (tx) => {
    const row = await visiblePackage(tx, id, actor)
    if (row.status === 'CANCELED') {
      const pending = row.refund_order_id === null ? undefined : await tx.selectFrom('orders').selectAll().where('id', '=', row.refund_order_id).where('status', '=', 'PENDING').executeTakeFirst()
      return { row, refund: pending }
    }
    const items = await tx.selectFrom('package_items').selectAll().where('package_id', '=', id).execute()
    const order = row.order_id === null ? undefined : await tx.selectFrom('orders').selectAll().where('id', '=', row.order_id).executeTakeFirst()
    const givenBack = await tx
      .selectFrom('package_redemptions')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('package_id', '=', id)
      .where('given_back_by', 'is not', null)
      .executeTakeFirstOrThrow()
    const { amount, unused, all } = refundOf(row.paid_minor, items, Number(givenBack.n))
    let refund: OrdersTable | undefined
    if (amount > 0 && order?.status === 'PAID' && order.provider_ref !== null) {
      refund = {
        id: randomUUID(),
        user_id: row.user_id,
        creator_id: actor.id,
        kind: 'REFUND',
        membership_subscription_id: null,
        period_start: null,
        status: 'PENDING',
        currency: order.currency,
        subtotal_minor: amount,
        total_minor: amount,
        lines: JSON.stringify([{ kind: 'refund', description: `${row.display_name}: ${unused} of ${all} items unused (order ${order.id})`, amount }]),
        fees: '[]',
        taxes: '[]',
        provider: order.provider,
        provider_ref: null,
        idempotency_key: `package:${row.id}:cancel-refund`,
        failure_code: null,
        failure_message: null,
        created_at: now.toISOString(),
        updated_at: now.toISOString()
      }
      await tx.insertInto('orders').values(refund).execute()
    }
    const canceled: PackagesTable = { ...row, status: 'CANCELED', canceled_at: now.toISOString(), refund_order_id: refund?.id ?? null, updated_at: now.toISOString() }
    await tx.updateTable('packages').set({ status: 'CANCELED', canceled_at: canceled.canceled_at, refund_order_id: canceled.refund_order_id, updated_at: canceled.updated_at }).where('id', '=', id).execute()
    await recordPackageEvent(tx, id, 'package.canceled', now)
    return { row: canceled, refund }
  })
  if (refund) await makeRefund(db, refund, row, provider, clock)
  return answerPackage(db, row, now)
}

async function makeRefund(db: Db, refund: OrdersTable, row: PackagesTable, provider: PaymentProvider, clock: Clock): Promise<void> {
  const charged = await db.selectFrom('orders').select(['provider_ref']).where('id', '=', row.order_id!).executeTakeFirstOrThrow()
  try {
    await refundOrder(db, provider, refund, charged.provider_ref!, clock)
  } catch (err) {
    if (err instanceof PaymentProviderError) {
      throw new BadGatewayError(`package ${row.id} is cancelled, but the payment provider could not be reached for its refund; cancel it again to retry the refund`)
    }
    throw err
  }
}
