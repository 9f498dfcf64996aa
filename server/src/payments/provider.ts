// The payment provider interface (BILLING.md, "Payments"; the shape of Medusa's payment module):
// one method per operation, typed inputs and outputs, the provider's own data kept opaque. Business
// code (memberships, packages, products, orders) never sees a provider's shapes.
import type { Minor } from '../billing/money.js'

/** A customer's saved payment method as a provider knows it; never a card number. */
export interface SavedPaymentMethod {
  brand: string
  last4: string
  expMonth: number
  expYear: number
  /** The provider's customer id (Stripe `cus_…`), when the method was saved through the provider. */
  providerCustomerRef: string | null
  /** The provider's payment method id (Stripe `pm_…`). */
  providerMethodRef: string | null
}

export interface ChargeInput {
  /** A positive amount in minor units of `currency`. */
  amount: Minor
  /** ISO 4217, upper case. */
  currency: string
  paymentMethod: SavedPaymentMethod
  /**
   * Unique per charge attempt the business means once (e.g. `membership:<subscription>:cycle:<n>`):
   * the provider charges at most once per key, however often the call is retried.
   */
  idempotencyKey: string
  /** Shown on the customer's statement or the provider's dashboard. */
  description: string
  /** Kept with the charge at the provider (order id, subscription id). */
  metadata: Record<string, string>
}

export type ChargeResult =
  | { status: 'succeeded'; reference: string }
  | {
      status: 'declined'
      /** The provider's record of the attempt, when it made one. */
      reference: string | null
      /** The bank's or provider's reason code (`insufficient_funds`, `card_declined`, …). */
      declineCode: string
      message: string
    }
  | {
      /** The bank asks the customer (3-D Secure): they complete it, then the charge is confirmed. */
      status: 'requires_authentication'
      reference: string
      /** What a client-side SDK needs to complete it (Stripe's PaymentIntent client_secret). */
      clientSecret: string | null
      /** Where to send the customer, when the provider gives a page. */
      nextActionUrl: string | null
    }

export interface RefundInput {
  /** The reference of the succeeded charge. */
  reference: string
  amount: Minor
  currency: string
  idempotencyKey: string
}

export type RefundResult = { status: 'succeeded'; reference: string } | { status: 'failed'; message: string }

export interface PaymentProvider {
  readonly name: 'test' | 'stripe'
  /** Charges a saved method off-session (the customer is not present). */
  charge(input: ChargeInput): Promise<ChargeResult>
  /** The charge's state now, e.g. after the customer completed an authentication. */
  retrieve(reference: string): Promise<ChargeResult>
  refund(input: RefundInput): Promise<RefundResult>
}

/** The provider could not be reached or answered something other than a decision: nothing is known to be charged. */
export class PaymentProviderError extends Error {
  override name = 'PaymentProviderError'
}

/**
 * The idempotency key was already used for a different charge or refund (another amount, method or
 * currency): a bug in the caller's key, not a decision. What the first request did stands; Stripe
 * answers such a request 400 `idempotency_error`.
 */
export class IdempotencyKeyReusedError extends PaymentProviderError {
  override name = 'IdempotencyKeyReusedError'
}
