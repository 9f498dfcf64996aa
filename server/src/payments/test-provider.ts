// The built-in `test` payment provider (PAYMENT_PROVIDER=test): no network, no money. The saved
// card's last four digits decide the outcome, as Stripe's test cards do (BILLING.md, "Payments").
//
// Charges live in this instance's memory. That is enough for retries within one process (the same
// idempotency key answers the first result and charges once), but it cannot make "at most once"
// hold across processes: the server, the `club` command and a second server each have their own
// map. Across processes it is the caller's job, as it is with any provider: the business keeps a
// unique key per charge in the database (e.g. one order per subscription and cycle) and calls the
// provider only for the row it inserted. A reference made by another process is unknown here.
import { randomBytes, randomUUID } from 'node:crypto'
import type { Minor } from '../billing/money.js'
import {
  IdempotencyKeyReusedError,
  PaymentProviderError,
  type ChargeInput,
  type ChargeResult,
  type PaymentProvider,
  type RefundInput,
  type RefundResult
} from './provider.js'

/** The last four digits the `test` provider understands (Stripe's 4242…4242, …9995 and 4000 0027 6000 3184). */
export const TEST_CARDS = {
  succeeds: '4242',
  declines: '9995',
  requiresAuthentication: '3184'
} as const

/** One line for `club payment-methods set --help` and the docs, from the same table the provider decides by. */
export const TEST_CARDS_HELP =
  `With PAYMENT_PROVIDER=test the last four digits decide: ${TEST_CARDS.succeeds} succeeds, ` +
  `${TEST_CARDS.declines} declines (insufficient_funds), ${TEST_CARDS.requiresAuthentication} requires authentication; any other number succeeds.`

export type TestChargeStatus = ChargeResult['status']

/** What the test provider remembers of a charge; `refunded` is the sum of its succeeded refunds. */
export interface TestCharge {
  reference: string
  idempotencyKey: string
  amount: Minor
  currency: string
  status: TestChargeStatus
  refunded: Minor
}

interface Remembered<T> {
  /** The request as first made with the key: a retry must match it. */
  request: string
  answer: T
}

const DECLINE_MESSAGE = 'Your card has insufficient funds.'

export class TestPaymentProvider implements PaymentProvider {
  readonly name = 'test'
  private readonly charges = new Map<string, TestCharge & { clientSecret: string | null }>()
  private readonly chargeKeys = new Map<string, Remembered<ChargeResult>>()
  private readonly refundKeys = new Map<string, Remembered<RefundResult>>()

  async charge(input: ChargeInput): Promise<ChargeResult> {
    checkAmount(input.amount)
    const request = JSON.stringify([
      input.amount,
      input.currency,
      input.paymentMethod.last4,
      input.paymentMethod.providerCustomerRef,
      input.paymentMethod.providerMethodRef,
      input.description,
      Object.entries(input.metadata).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    ])
    const earlier = this.chargeKeys.get(input.idempotencyKey)
    if (earlier) {
      // As Stripe: a retry replays the first answer, whatever happened to the charge since.
      if (earlier.request === request) return earlier.answer
      throw new IdempotencyKeyReusedError(`idempotencyKey ${JSON.stringify(input.idempotencyKey)} was already used for a different charge`)
    }
    const reference = `test_ch_${randomUUID()}`
    const answer = decide(reference, input.paymentMethod.last4)
    const clientSecret = answer.status === 'requires_authentication' ? answer.clientSecret : null
    this.charges.set(reference, {
      reference,
      idempotencyKey: input.idempotencyKey,
      amount: input.amount,
      currency: input.currency,
      status: answer.status,
      refunded: 0,
      clientSecret
    })
    this.chargeKeys.set(input.idempotencyKey, { request, answer })
    return answer
  }

  async retrieve(reference: string): Promise<ChargeResult> {
    const charge = this.find(reference)
    if (charge.status === 'succeeded') return { status: 'succeeded', reference }
    if (charge.status === 'declined') return { status: 'declined', reference, declineCode: 'insufficient_funds', message: DECLINE_MESSAGE }
    return { status: 'requires_authentication', reference, clientSecret: charge.clientSecret, nextActionUrl: null }
  }

  /**
   * The customer completed the bank's check (3-D Secure): the charge succeeds. For tests and for a
   * confirm route in development; with Stripe, the customer does this in the browser with Stripe.js.
   * Completing a charge that already succeeded changes nothing.
   */
  async completeAuthentication(reference: string): Promise<ChargeResult> {
    const charge = this.find(reference)
    if (charge.status === 'declined') throw new PaymentProviderError(`the test charge ${reference} was declined; there is nothing to authenticate`)
    charge.status = 'succeeded'
    return this.retrieve(reference)
  }

  async refund(input: RefundInput): Promise<RefundResult> {
    checkAmount(input.amount)
    const request = JSON.stringify([input.reference, input.amount, input.currency])
    const earlier = this.refundKeys.get(input.idempotencyKey)
    if (earlier) {
      if (earlier.request === request) return earlier.answer
      throw new IdempotencyKeyReusedError(`idempotencyKey ${JSON.stringify(input.idempotencyKey)} was already used for a different refund`)
    }
    const answer = this.refundOnce(input)
    // A refused refund is remembered too: a retry of it is refused the same way, as Stripe replays a 400.
    this.refundKeys.set(input.idempotencyKey, { request, answer })
    return answer
  }

  /** The charges this instance made, oldest first (for tests and a development view). */
  list(): TestCharge[] {
    return [...this.charges.values()].map(({ clientSecret: _secret, ...charge }) => ({ ...charge }))
  }

  private refundOnce(input: RefundInput): RefundResult {
    const charge = this.charges.get(input.reference)
    if (!charge) return { status: 'failed', message: `no test charge ${input.reference} (charges are kept in the memory of the process that made them)` }
    if (charge.status !== 'succeeded') return { status: 'failed', message: `the charge ${input.reference} has not succeeded; there is nothing to refund` }
    if (input.currency !== charge.currency) {
      return { status: 'failed', message: `the charge ${input.reference} was made in ${charge.currency}, not ${input.currency}` }
    }
    const refundable = charge.amount - charge.refunded
    if (input.amount > refundable) {
      return { status: 'failed', message: `the refund of ${input.amount} is more than the ${refundable} left to refund on ${input.reference}` }
    }
    charge.refunded += input.amount
    return { status: 'succeeded', reference: `test_re_${randomUUID()}` }
  }

  private find(reference: string) {
    const charge = this.charges.get(reference)
    if (!charge) {
      throw new PaymentProviderError(`no test charge ${reference}: the test provider keeps charges in the memory of the process that made them`)
    }
    return charge
  }
}

function decide(reference: string, last4: string): ChargeResult {
  switch (last4) {
    case TEST_CARDS.declines:
      return { status: 'declined', reference, declineCode: 'insufficient_funds', message: DECLINE_MESSAGE }
    case TEST_CARDS.requiresAuthentication:
      // Shaped like Stripe's (`pi_…_secret_…`) so client code handles both alike; it grants nothing.
      return { status: 'requires_authentication', reference, clientSecret: `${reference}_secret_${randomBytes(12).toString('hex')}`, nextActionUrl: null }
    default:
      return { status: 'succeeded', reference }
  }
}

function checkAmount(amount: Minor): void {
  // The caller's bug, refused as Stripe refuses it (400), before anything is remembered.
  if (!Number.isSafeInteger(amount) || amount <= 0) throw new PaymentProviderError(`amount must be a positive whole number of minor units, got ${amount}`)
}
