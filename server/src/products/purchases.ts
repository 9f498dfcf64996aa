// Buying products (POST /orders): each line priced by priceItem, the total charged to the buyer's
// saved method under the order's idempotency key, and what was bought issued in the same transaction
// that records the successful charge, so a paid order and its packages exist together or not at all.
import { randomUUID } from 'node:crypto'
import type { Purchase, PurchaseItem, PurchaseRequest, ValidationError } from '@club/contract'
import { isStaff, type Actor } from '../actor.js'
import { unitsOf } from '../billing/money.js'
import type { ChargeLine, PricedTax } from '../billing/pricing.js'
import type { Clock } from '../clock.js'
import type { Db, DbOrTx } from '../db/database.js'
import type { OrdersTable, ProductType } from '../db/schema.js'
import { BadGatewayError, BadRequestError, ConflictError, NotFoundError, PaymentRequiredError, quote } from '../errors.js'
import { membershipRow, toPlan } from '../memberships/plans.js'
import { draftPurchasedSubscription, settleFirstCharge } from '../memberships/subscriptions.js'
import { authenticationErrors, chargeOrder, confirmCharge, recordOrderOutcome } from '../orders/charging.js'
import { orderPath } from '../orders/service.js'
import { issuePackage } from '../packages/issue.js'
import { PaymentProviderError, type ChargeResult, type PaymentProvider } from '../payments/provider.js'
import { catalogueProduct, type CatalogueProduct } from './catalogue.js'
import { memberDiscounts, priceItem, type PricedItem } from './pricing.js'

export interface PurchaseDeps {
  clock: Clock
  provider: PaymentProvider
  /** CLUB_TIMEZONE: where a package's validity days and a membership's renewals are counted. */
  clubTimezone: string
}

/** A product line as an order keeps it: enough to explain the charge and to answer the purchase again. */
interface PurchaseLine extends ChargeLine {
  kind: 'product'
  product: { id: string; sku: string; name: string; type: ProductType }
  quantity: number
  price: number
  discount: { amount: number; description: string }
  tax: { amount: number; description: string }
  subtotal: number
  total: number
  /** PACKAGE products: the template as it was named when ordered. */
  packageTemplate: { id: string } | null
  membership: { id: string } | null
}

const isPurchaseLine = (line: ChargeLine): line is PurchaseLine => line.kind === 'product'

function purchaseLines(item: PricedItem): ChargeLine[] {
  const { row } = item.product
  const line: PurchaseLine = {
    kind: 'product',
    description: item.quantity === 1 ? row.name : `${row.name} x ${item.quantity}`,
    amount: item.amount,
    product: { id: row.id, sku: row.sku, name: row.name, type: row.type },
    quantity: item.quantity,
    price: row.price_minor,
    discount: item.discount,
    tax: { amount: item.taxAmount, description: item.taxDescription },
    subtotal: item.charge.subtotal,
    total: item.charge.total,
    packageTemplate: row.package_template_id === null ? null : { id: row.package_template_id },
    membership: row.membership_id === null ? null : { id: row.membership_id }
  }
  if (item.discount.amount === 0) return [line]
  return [line, { kind: 'discount', description: item.discount.description, amount: -item.discount.amount, product: { id: row.id } }]
}

/** The products of a request, each on sale, each once; a MEMBERSHIP is bought on its own, one at a time. */
async function requestedProducts(db: DbOrTx, request: PurchaseRequest, currency: string): Promise<Array<{ product: CatalogueProduct; quantity: number }>> {
  const seen = new Set<string>()
  const wanted: Array<{ product: CatalogueProduct; quantity: number }> = []
  for (const [i, item] of request.items.entries()) {
    const field = `items/${i}/product/id`
    if (seen.has(item.product.id)) throw new BadRequestError(`${field}: product ${quote(item.product.id)} is listed twice; give its quantity once`)
    seen.add(item.product.id)
    const product = await catalogueProduct(db, item.product.id).catch((err) => {
      if (err instanceof NotFoundError) throw new BadRequestError(`${field}: no product ${quote(item.product.id)}`)
      throw err
    })
    if (product.row.status !== 'ON_SALE') throw new ConflictError(`product ${product.row.sku} is no longer on sale`)
    if (product.row.currency !== currency) throw new ConflictError(`product ${product.row.sku} is priced in ${product.row.currency}, not ${currency}`)
    if (product.row.type === 'MEMBERSHIP' && (item.quantity !== 1 || request.items.length > 1)) {
      throw new BadRequestError(`items/${i}: a MEMBERSHIP product is bought on its own, quantity 1`)
    }
    wanted.push({ product, quantity: item.quantity })
  }
  return wanted
}

interface Answer {
  created: boolean
  purchase: Purchase
}

/**
 * PREVIEW prices the request and writes nothing. ORDER writes the order PENDING (and, for a
 * MEMBERSHIP product, its subscription DRAFT) in one IMMEDIATE transaction, charges outside it, then
 * records the outcome and issues what was bought in one more. With an idempotency key, the same key
 * again answers (or, when the provider could not be reached, retries) that first order, whatever
 * changed since: the product withdrawn or repriced, the card removed. Without one, an order left
 * PENDING by an unreachable provider is retried by POST /orders/{id}/confirm.
 */
export async function createPurchase(db: Db, request: PurchaseRequest, actor: Actor, idempotencyKey: string | undefined, deps: PurchaseDeps & { currency: string }): Promise<Answer> {
  const key = idempotencyKey === undefined ? `purchase:${randomUUID()}` : `purchase:${actor.id}:${idempotencyKey}`
  if (request.mode === 'ORDER' && idempotencyKey !== undefined) {
    const existing = await db.selectFrom('orders').selectAll().where('idempotency_key', '=', key).executeTakeFirst()
    if (existing) return carryOn(db, firstOrder(existing, request), false, idempotencyKey, deps)
  }
  const now = deps.clock.now()
  const wanted = await requestedProducts(db, request, deps.currency)
  const discounts = await memberDiscounts(db, actor.id, now)
  const items = wanted.map((w) => priceItem(w.product, w.quantity, discounts))
  const lines = items.flatMap(purchaseLines)
  const total = items.reduce((sum, i) => sum + i.charge.total, 0)
  if (request.mode === 'PREVIEW') {
    const preview = newOrder(actor, lines, items.flatMap((i) => i.charge.taxes), total, deps.currency, null, 'preview', now)
    return { created: false, purchase: toPurchase(preview, 'PREVIEW', [], null) }
  }
  if (total > 0 && !(await db.selectFrom('payment_methods').select('id').where('user_id', '=', actor.id).where('is_default', '=', 1).executeTakeFirst())) {
    throw new BadRequestError('add a payment method first (users/current/payment-method)')
  }

  const claimed = await db.transaction().execute(async (tx) => {
    // Again here: the same key may have been claimed by a request running alongside since the look-up above.
    const existing = await tx.selectFrom('orders').selectAll().where('idempotency_key', '=', key).executeTakeFirst()
    if (existing) return { order: firstOrder(existing, request), created: false }
    const order = newOrder(actor, lines, items.flatMap((i) => i.charge.taxes), total, deps.currency, total > 0 ? deps.provider.name : null, key, now)
    const membership = wanted.find((w) => w.product.row.type === 'MEMBERSHIP')
    if (membership) {
      order.membership_subscription_id = randomUUID()
      order.period_start = now.toISOString()
    }
    await tx.insertInto('orders').values(order).execute()
    if (membership) {
      const plan = toPlan(await membershipRow(tx, membership.product.row.membership_id!))
      await draftPurchasedSubscription(tx, {
        id: order.membership_subscription_id!,
        plan,
        memberId: actor.id,
        creatorId: actor.id,
        orderId: order.id,
        timezone: deps.clubTimezone,
        now
      })
    }
    // Nothing to charge: paid as it is made, and fulfilled in the same transaction.
    if (total === 0) return { order: await settle(tx, order, { status: 'succeeded', reference: '' }, now, deps.clubTimezone), created: true }
    return { order, created: true }
  })

  return carryOn(db, claimed.order, claimed.created, idempotencyKey, deps)
}

/** The order a key first made, if the request asks for the same products and quantities. */
function firstOrder(existing: OrdersTable, request: PurchaseRequest): OrdersTable {
  if (!sameItems(existing, request)) throw new ConflictError('this Idempotency-Key was used for another order; use a new key for a new order')
  return existing
}

/** Charges an order still PENDING (its first attempt, or a retry of one that never got an answer), then answers it. */
async function carryOn(db: Db, order: OrdersTable, created: boolean, idempotencyKey: string | undefined, deps: PurchaseDeps): Promise<Answer> {
  if (order.status !== 'PENDING') return answer(db, order, created, null)
  const charged = await chargePending(db, order, idempotencyKey, deps)
  return answer(db, charged.order, created, charged.errors)
}

/**
 * Charges a PENDING order under its own idempotency key (the provider charges at most once per key,
 * so a retry after a lost answer cannot charge twice), with the description its lines gave the first
 * attempt, and records the outcome. An unreachable provider is a 502 that names the order, which
 * stays PENDING: its confirm link (or, when the buyer sent one, the same Idempotency-Key) retries it.
 */
async function chargePending(db: Db, order: OrdersTable, idempotencyKey: string | undefined, deps: PurchaseDeps) {
  const description = (JSON.parse(order.lines) as ChargeLine[]).filter(isPurchaseLine).map((l) => l.description).join(', ').slice(0, 200)
  let outcome: ChargeResult
  try {
    outcome = await chargeOrder(db, deps.provider, order, description)
  } catch (err) {
    if (err instanceof PaymentProviderError) {
      const retry = `POST ${orderPath(order.id)}/confirm retries this same charge${idempotencyKey === undefined ? '' : ', as does this request again with the same Idempotency-Key'}`
      throw new BadGatewayError(`the payment provider could not be reached (${err.message}); nothing is known to be charged. Order ${order.id} stays PENDING: ${retry}, charging at most once`)
    }
    throw err
  }
  const settled = await db.transaction().execute((tx) => settle(tx, order, outcome, deps.clock.now(), deps.clubTimezone))
  const errors = outcome.status === 'requires_authentication' && settled.status === 'REQUIRES_AUTHENTICATION' ? authenticationErrors(outcome) : null
  return { order: settled, errors }
}

/**
 * An order left PENDING (the provider could not be reached): its charge is retried under the same key.
 * One waiting for authentication (the customer completed it with their bank): how the charge stands
 * now. Either way, what was paid is issued; a refusal answers the FAILED order.
 */
export async function confirmPurchase(db: Db, id: string, actor: Actor, deps: PurchaseDeps): Promise<Purchase> {
  const order = await visibleOrder(db, id, actor)
  if (order.status === 'PENDING') {
    const charged = await chargePending(db, order, undefined, deps)
    return (await answer(db, charged.order, false, charged.errors, false)).purchase
  }
  if (order.status !== 'REQUIRES_AUTHENTICATION') {
    throw new ConflictError(`the order is ${order.status}; only one PENDING (its charge never answered) or waiting for authentication can be confirmed`)
  }
  const outcome = await confirmCharge(deps.provider, order)
  const settled = await db.transaction().execute((tx) => settle(tx, order, outcome, deps.clock.now(), deps.clubTimezone))
  return (await answer(db, settled, false, null, false)).purchase
}

async function visibleOrder(db: DbOrTx, id: string, actor: Actor): Promise<OrdersTable> {
  const order = await db.selectFrom('orders').selectAll().where('id', '=', id).where('kind', '=', 'PURCHASE').executeTakeFirst()
  if (!order || (order.user_id !== actor.id && !isStaff(actor))) throw new NotFoundError(`order ${quote(id)} not found`)
  return order
}

/** The same products and quantities as the order a key first made. */
function sameItems(order: OrdersTable, request: PurchaseRequest): boolean {
  const stored = (JSON.parse(order.lines) as ChargeLine[]).filter(isPurchaseLine).map((l) => `${l.product.id}:${l.quantity}`)
  const asked = request.items.map((i) => `${i.product.id}:${i.quantity}`)
  return stored.length === asked.length && stored.every((s, i) => s === asked[i])
}

function newOrder(
  actor: Actor,
  lines: ChargeLine[],
  taxes: PricedTax[],
  total: number,
  currency: string,
  provider: string | null,
  key: string,
  now: Date
): OrdersTable {
  return {
    id: randomUUID(),
    user_id: actor.id,
    creator_id: actor.id,
    kind: 'PURCHASE',
    membership_subscription_id: null,
    period_start: null,
    // Nothing to charge (provider null): settled as paid in the transaction that writes it.
    status: 'PENDING',
    currency,
    subtotal_minor: lines.reduce((sum, l) => sum + l.amount, 0),
    total_minor: total,
    lines: JSON.stringify(lines),
    fees: '[]',
    taxes: JSON.stringify(taxes),
    provider,
    provider_ref: null,
    idempotency_key: key,
    failure_code: null,
    failure_message: null,
    created_at: now.toISOString(),
    updated_at: now.toISOString()
  }
}

/**
 * Records a charge's outcome once (an order already settled is answered as it is) and, once paid,
 * issues what was bought in the same transaction: one package per unit of a PACKAGE line, each with
 * its share of the line's total (the shares add up to the line exactly), and the subscription of a
 * MEMBERSHIP line confirmed (its order pays the first period).
 */
async function settle(tx: DbOrTx, order: OrdersTable, outcome: ChargeResult, now: Date, timezone: string): Promise<OrdersTable> {
  const at = now.toISOString()
  const current = await tx.selectFrom('orders').selectAll().where('id', '=', order.id).executeTakeFirstOrThrow()
  if (current.status !== 'PENDING' && current.status !== 'REQUIRES_AUTHENTICATION') return current
  const status = await recordOrderOutcome(tx, order.id, outcome, at)
  if (current.membership_subscription_id !== null) {
    const subscription = await tx.selectFrom('membership_subscriptions').select('membership_id').where('id', '=', current.membership_subscription_id).executeTakeFirstOrThrow()
    await settleFirstCharge(tx, current.membership_subscription_id, outcome, toPlan(await membershipRow(tx, subscription.membership_id)), at)
  }
  if (status === 'PAID') {
    for (const line of (JSON.parse(current.lines) as ChargeLine[]).filter(isPurchaseLine)) {
      if (line.packageTemplate === null) continue
      for (let unit = 0; unit < line.quantity; unit++) {
        await issuePackage(tx, {
          templateId: line.packageTemplate.id,
          userId: current.user_id,
          creatorId: current.creator_id,
          source: 'PURCHASE',
          issuedAt: now,
          timezone,
          orderId: current.id,
          paidMinor: shareOf(line.total, line.quantity, unit),
          currency: current.currency,
          field: `product ${line.product.sku}'s packageTemplate`
        })
      }
    }
  }
  return tx.selectFrom('orders').selectAll().where('id', '=', order.id).executeTakeFirstOrThrow()
}

/** The unit-th of `count` shares of `total`: the remainder's minor units go one each to the first units. */
function shareOf(total: number, count: number, unit: number): number {
  const base = Math.floor(total / count)
  return base + (unit < total - base * count ? 1 : 0)
}

/** The purchase answer of a stored order; a refused charge is a 402 (the order stays, FAILED, with nothing issued). */
async function answer(db: DbOrTx, order: OrdersTable, created: boolean, errors: ValidationError[] | null, refuseFailed = true): Promise<Answer> {
  if (order.status === 'FAILED' && refuseFailed) {
    throw new PaymentRequiredError(`the charge was refused (${order.failure_code}: ${order.failure_message}); order ${order.id} is FAILED and nothing was issued`)
  }
  const packages = await db.selectFrom('packages').select(['id', 'template_id']).where('order_id', '=', order.id).orderBy('created_at').orderBy('id').execute()
  const failure = order.failure_code === null ? null : [{ code: order.failure_code, message: order.failure_message ?? '', details: null }]
  return { created, purchase: toPurchase(order, 'ORDER', packages, errors ?? failure) }
}

function toPurchase(order: OrdersTable, mode: 'PREVIEW' | 'ORDER', packages: Array<{ id: string; template_id: string | null }>, errors: ValidationError[] | null): Purchase {
  const units = unitsOf(order.currency)
  const lines = (JSON.parse(order.lines) as ChargeLine[]).filter(isPurchaseLine)
  const remaining = [...packages]
  const items: PurchaseItem[] = lines.map((line) => {
    const issued: Array<{ id: string }> = []
    while (line.packageTemplate !== null && issued.length < line.quantity) {
      const at = remaining.findIndex((p) => p.template_id === line.packageTemplate!.id)
      if (at < 0) break
      issued.push({ id: remaining.splice(at, 1)[0]!.id })
    }
    return {
      product: line.product,
      quantity: line.quantity,
      price: units(line.price),
      amount: units(line.amount),
      discount: { amount: units(line.discount.amount), description: line.discount.description },
      tax: { amount: units(line.tax.amount), description: line.tax.description },
      subtotal: units(line.subtotal),
      total: units(line.total),
      packages: issued,
      membershipSubscription: line.membership !== null && order.membership_subscription_id !== null && mode === 'ORDER' ? { id: order.membership_subscription_id } : null
    }
  })
  const id = mode === 'PREVIEW' ? null : order.id
  return {
    id,
    mode,
    status: mode === 'PREVIEW' ? null : order.status,
    currency: order.currency,
    items,
    discount: units(lines.reduce((sum, l) => sum + l.discount.amount, 0)),
    tax: units(lines.reduce((sum, l) => sum + l.tax.amount, 0)),
    subtotal: units(order.subtotal_minor),
    total: units(order.total_minor),
    user: { id: order.user_id },
    errors,
    createdDate: order.created_at,
    _links:
      id === null
        ? { self: { href: '/apis/v2/orders' } }
        : { self: { href: orderPath(id) }, ...(order.status === 'REQUIRES_AUTHENTICATION' ? { confirm: { href: `${orderPath(id)}/confirm` } } : {}) }
  }
}
