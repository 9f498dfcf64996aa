// Orders: every charge and refund, with the lines, fees and taxes that explain its total.
import type { EventType, Order, OrderListQuery } from '@club/contract'
import { isStaff, type Actor } from '../actor.js'
import { toPercentage, unitsOf } from '../billing/money.js'
import type { ChargeLine, PricedFee, PricedTax } from '../billing/pricing.js'
import type { DbOrTx } from '../db/database.js'
import type { OrdersTable } from '../db/schema.js'
import { ForbiddenError, NotFoundError } from '../errors.js'
import { recordEvent } from '../events/outbox.js'
import { pageRequest, paged } from '../paging.js'

export const orderPath = (id: string) => `/apis/v2/orders/${id}`

export function toOrder(row: OrdersTable): Order {
  const units = unitsOf(row.currency)
  return {
    id: row.id,
    kind: row.kind,
    status: row.status,
    currency: row.currency,
    lines: (JSON.parse(row.lines) as ChargeLine[]).map((l) => ({
      kind: l.kind,
      description: l.description,
      amount: units(l.amount),
      ...(l.product ? { product: { id: l.product.id } } : {}),
      ...(l.quantity !== undefined ? { quantity: l.quantity } : {})
    })),
    subtotal: units(row.subtotal_minor),
    fees: (JSON.parse(row.fees) as PricedFee[]).map((f) => ({ name: f.name, percentage: toPercentage(f.rate), amount: units(f.amount) })),
    taxes: (JSON.parse(row.taxes) as PricedTax[]).map((t) => ({ name: t.name, percentage: toPercentage(t.rate), inclusive: t.inclusive, amount: units(t.amount) })),
    total: units(row.total_minor),
    user: { id: row.user_id },
    membershipSubscription: row.membership_subscription_id === null ? null : { id: row.membership_subscription_id },
    provider: row.provider,
    providerReference: row.provider_ref,
    failure: row.failure_code === null ? null : { code: row.failure_code, message: row.failure_message ?? '' },
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: orderPath(row.id) } }
  }
}

/** order.paid, .failed or .refunded with the order as GET answers it, in the transaction that changed it. */
export async function recordOrderEvent(tx: DbOrTx, orderId: string, type: Extract<EventType, `order.${string}`>, now: Date): Promise<void> {
  const row = await tx.selectFrom('orders').selectAll().where('id', '=', orderId).executeTakeFirstOrThrow()
  await recordEvent(tx, { type, resourceId: row.id, data: toOrder(row) }, now)
}

/** The event of an order's new status, if it is one integrators are told of. */
export async function recordOrderStatusEvent(tx: DbOrTx, orderId: string, status: OrdersTable['status'], now: Date): Promise<void> {
  const type = ({ PAID: 'order.paid', FAILED: 'order.failed', REFUNDED: 'order.refunded' } as const)[status as 'PAID' | 'FAILED' | 'REFUNDED']
  if (type) await recordOrderEvent(tx, orderId, type, now)
}

export async function getOrder(db: DbOrTx, id: string, actor: Actor): Promise<Order> {
  const row = await db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row || (row.user_id !== actor.id && !isStaff(actor))) throw new NotFoundError(`order ${id.slice(0, 100)} not found`)
  return toOrder(row)
}

/** A member's own orders; staff see everyone's and may filter by user. Newest first. */
export async function listOrders(db: DbOrTx, query: OrderListQuery, actor: Actor, path: string) {
  if (query.userId !== undefined && query.userId !== actor.id && !isStaff(actor)) throw new ForbiddenError("only staff may list another user's orders")
  const request = pageRequest(query)
  let base = db.selectFrom('orders')
  const userId = isStaff(actor) ? query.userId : actor.id
  if (userId !== undefined) base = base.where('user_id', '=', userId)
  if (query.status !== undefined) base = base.where('status', '=', query.status)
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(request.ipp).offset(request.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  ])
  return paged(rows.map(toOrder), Number(count.n), request, path, query)
}
