// The default payment method of a user: only what a payment provider returns, never a card number.
import { randomUUID } from 'node:crypto'
import type { PaymentMethod } from '@club/contract'
import type { Clock } from '../clock.js'
import type { DbOrTx } from '../db/database.js'
import type { PaymentMethodsTable } from '../db/schema.js'
import { BadRequestError, NotFoundError } from '../errors.js'

export interface NewPaymentMethod {
  brand: string
  last4: string
  expMonth: number
  expYear: number
}

/** Makes this the user's default payment method, replacing the previous default. */
export async function setDefaultPaymentMethod(
  db: DbOrTx,
  userId: string,
  input: NewPaymentMethod,
  clock: Clock
): Promise<PaymentMethod> {
  if (!/^[a-z][a-z0-9_ -]{0,30}$/i.test(input.brand)) throw new BadRequestError('brand must be a card brand such as visa')
  if (!/^[0-9]{4}$/.test(input.last4)) throw new BadRequestError('last4 must be exactly 4 digits')
  if (!Number.isInteger(input.expMonth) || input.expMonth < 1 || input.expMonth > 12) {
    throw new BadRequestError('expMonth must be a month from 1 to 12')
  }
  if (!Number.isInteger(input.expYear) || input.expYear < 2000 || input.expYear > 2100) {
    throw new BadRequestError('expYear must be a four-digit year')
  }
  const row = {
    id: randomUUID(),
    user_id: userId,
    brand: input.brand.toLowerCase(),
    last4: input.last4,
    exp_month: input.expMonth,
    exp_year: input.expYear,
    is_default: 1,
    created_at: clock.now().toISOString(),
    // Saved from the CLI as test data: no provider holds it (the test provider needs none).
    provider_customer_ref: null,
    provider_method_ref: null
  }
  await db.transaction().execute(async (tx) => {
    await tx.updateTable('payment_methods').set({ is_default: 0 }).where('user_id', '=', userId).execute()
    await tx.insertInto('payment_methods').values(row).execute()
  })
  return toPaymentMethod(row)
}

export async function getDefaultPaymentMethod(db: DbOrTx, userId: string): Promise<PaymentMethod> {
  const row = await db
    .selectFrom('payment_methods')
    .selectAll()
    .where('user_id', '=', userId)
    .where('is_default', '=', 1)
    .executeTakeFirst()
  if (!row) throw new NotFoundError('the user has no payment method')
  return toPaymentMethod(row)
}

function toPaymentMethod(row: Omit<PaymentMethodsTable, 'is_default'>): PaymentMethod {
  return {
    id: row.id,
    brand: row.brand,
    last4: row.last4,
    expMonth: row.exp_month,
    expYear: row.exp_year,
    _links: { self: { href: '/apis/v2/users/current/payment-method' } }
  }
}
