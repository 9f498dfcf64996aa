// The Stripe payment provider (PAYMENT_PROVIDER=stripe) on the official SDK: a charge is a
// PaymentIntent created and confirmed off-session in one request, with the caller's idempotency key
// as Stripe's Idempotency-Key; a refund is a Refund of that PaymentIntent. Stripe's shapes stay in
// this file: callers see ChargeResult and RefundResult only.
import type Stripe from 'stripe'
import {
  IdempotencyKeyReusedError,
  PaymentProviderError,
  type ChargeInput,
  type ChargeResult,
  type PaymentProvider,
  type RefundInput,
  type RefundResult
} from './provider.js'

export interface StripeSettings {
  secretKey: string
  /** Stripe's API origin, https://api.stripe.com; tests give a local server. */
  apiBaseUrl: string
  /**
   * Retries of a request that got no answer, a 409 or a 5xx. The SDK sends each retry with the same
   * Idempotency-Key, so Stripe charges at most once however many are made.
   */
  maxNetworkRetries?: number
  /** How long one request may take. A member may be waiting on the answer (an ORDER). */
  timeoutMs?: number
}

type PaymentIntent = Stripe.PaymentIntent

export class StripePaymentProvider implements PaymentProvider {
  readonly name = 'stripe'
  private readonly options: Stripe.StripeConfig
  private sdk: Promise<{ errors: typeof Stripe.errors; stripe: Stripe }> | undefined

  constructor(private readonly settings: StripeSettings) {
    const origin = new URL(settings.apiBaseUrl)
    const protocol = origin.protocol === 'http:' ? 'http' : 'https'
    // The API version is the one this SDK release is pinned to and typed for (not set here, so the
    // types and the requests cannot disagree); upgrading the package is upgrading the API version.
    this.options = {
      host: origin.hostname,
      port: origin.port || (protocol === 'http' ? 80 : 443),
      protocol,
      maxNetworkRetries: settings.maxNetworkRetries ?? 2,
      timeout: settings.timeoutMs ?? 20_000,
      telemetry: false
    }
  }

  /**
   * The SDK, loaded on the first charge or refund: it is a tenth of a second of every process's
   * start, and most processes (the CLI, a server on PAYMENT_PROVIDER=test) never charge through it.
   */
  private client(): Promise<{ errors: typeof Stripe.errors; stripe: Stripe }> {
    this.sdk ??= import('stripe').then(({ default: StripeSdk }) => ({
      errors: StripeSdk.errors,
      stripe: new StripeSdk(this.settings.secretKey, this.options)
    }))
    return this.sdk
  }

  async charge(input: ChargeInput): Promise<ChargeResult> {
    const { providerCustomerRef, providerMethodRef } = input.paymentMethod
    if (!providerCustomerRef || !providerMethodRef) {
      // Not a failure of Stripe's: this card was never saved through Stripe (e.g. test data from
      // `club payment-methods set`), so no retry can charge it. The customer must save it again.
      return {
        status: 'declined',
        reference: null,
        declineCode: 'payment_method_missing',
        message: 'the saved payment method was not saved through Stripe; the customer must add it again'
      }
    }
    const { errors, stripe } = await this.client()
    try {
      const intent = await stripe.paymentIntents.create(
        {
          amount: input.amount,
          currency: input.currency.toLowerCase(),
          customer: providerCustomerRef,
          payment_method: providerMethodRef,
          off_session: true,
          confirm: true,
          // Without this, confirming requires a return_url in case a Dashboard-enabled method
          // redirects; a saved card charged off-session never redirects, and a card's 3-D Secure is
          // completed with the client secret (Stripe.js), not by a redirect.
          automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
          description: input.description,
          metadata: input.metadata
        },
        { idempotencyKey: input.idempotencyKey }
      )
      return toChargeResult(intent)
    } catch (err) {
      if (err instanceof errors.StripeCardError) return cardErrorResult(err)
      // A customer or method Stripe no longer has (deleted, detached): no retry can charge it.
      if (err instanceof errors.StripeInvalidRequestError && (err.param === 'payment_method' || err.param === 'customer')) {
        return { status: 'declined', reference: null, declineCode: err.code ?? 'payment_method_unusable', message: err.message }
      }
      throw providerError(errors, err, 'charge')
    }
  }

  async retrieve(reference: string): Promise<ChargeResult> {
    const { errors, stripe } = await this.client()
    try {
      return toChargeResult(await stripe.paymentIntents.retrieve(reference))
    } catch (err) {
      throw providerError(errors, err, 'retrieve')
    }
  }

  async refund(input: RefundInput): Promise<RefundResult> {
    const { errors, stripe } = await this.client()
    try {
      // Stripe refunds in the charge's own currency; `currency` is the caller's record of it.
      const refund = await stripe.refunds.create(
        { payment_intent: input.reference, amount: input.amount },
        { idempotencyKey: input.idempotencyKey }
      )
      // A card refund is `succeeded` at once; `pending` is accepted and finished by Stripe (a
      // later failure arrives as the refund.failed event, which the webhooks will handle).
      if (refund.status === 'succeeded' || refund.status === 'pending') return { status: 'succeeded', reference: refund.id }
      return { status: 'failed', message: `Stripe refund ${refund.id} is ${refund.status}${refund.failure_reason ? ` (${refund.failure_reason})` : ''}` }
    } catch (err) {
      // Stripe refuses a refund with a 400 or 404 (already refunded, more than is left, no such
      // PaymentIntent): a decision about this refund, worded by Stripe.
      if (err instanceof errors.StripeInvalidRequestError) return { status: 'failed', message: err.message }
      throw providerError(errors, err, 'refund')
    }
  }
}

function toChargeResult(intent: PaymentIntent): ChargeResult {
  switch (intent.status) {
    case 'succeeded':
      return { status: 'succeeded', reference: intent.id }
    case 'requires_action':
      return requiresAuthentication(intent)
    case 'requires_payment_method': {
      // The last attempt failed. After an off-session `authentication_required` the same intent
      // waits for the customer to authenticate with its client secret: still theirs to complete.
      const last = intent.last_payment_error
      if (last?.code === 'authentication_required') return requiresAuthentication(intent)
      return {
        status: 'declined',
        reference: intent.id,
        declineCode: last?.decline_code ?? last?.code ?? 'card_declined',
        message: last?.message ?? 'the payment was declined'
      }
    }
    case 'canceled':
      return { status: 'declined', reference: intent.id, declineCode: 'canceled', message: 'the payment was canceled' }
    default:
      // processing, requires_confirmation, requires_capture: not a final answer for a card charged
      // off-session and confirmed at once. The id is no secret; the operator can look it up.
      throw new PaymentProviderError(`Stripe PaymentIntent ${intent.id} is ${intent.status}, not succeeded, declined or awaiting authentication`)
  }
}

function requiresAuthentication(intent: PaymentIntent): ChargeResult {
  return {
    status: 'requires_authentication',
    reference: intent.id,
    clientSecret: intent.client_secret,
    nextActionUrl: intent.next_action?.redirect_to_url?.url ?? null
  }
}

/** A 402: the bank declined, or asks the customer to authenticate (the intent comes with the error). */
function cardErrorResult(err: InstanceType<typeof Stripe.errors.StripeCardError>): ChargeResult {
  const intent = err.payment_intent
  if (err.code === 'authentication_required' && intent?.id) return requiresAuthentication(intent)
  return {
    status: 'declined',
    reference: intent?.id ?? null,
    declineCode: err.decline_code ?? err.code ?? 'card_declined',
    message: err.message
  }
}

/**
 * Everything that is not a decision. Messages name the failure and Stripe's request id, never the
 * key: Stripe's own 401 message quotes part of it, so it is not passed on.
 */
function providerError(errors: typeof Stripe.errors, err: unknown, operation: 'charge' | 'retrieve' | 'refund'): PaymentProviderError {
  if (!(err instanceof errors.StripeError)) {
    return new PaymentProviderError(`Stripe ${operation} failed: ${err instanceof Error ? err.name : 'unknown error'}`)
  }
  const request = err.requestId ? ` (request ${err.requestId})` : ''
  if (err instanceof errors.StripeIdempotencyError) {
    return new IdempotencyKeyReusedError(`Stripe ${operation}: the idempotency key was already used with other parameters${request}`)
  }
  if (err instanceof errors.StripeAuthenticationError || err instanceof errors.StripePermissionError) {
    return new PaymentProviderError(`Stripe refused STRIPE_SECRET_KEY (HTTP ${err.statusCode}) on ${operation}${request}`)
  }
  if (err instanceof errors.StripeRateLimitError) {
    return new PaymentProviderError(`Stripe is limiting this account's requests (HTTP ${err.statusCode}) on ${operation}; try again later${request}`)
  }
  if (err instanceof errors.StripeConnectionError) {
    return new PaymentProviderError(`Stripe could not be reached on ${operation} (no answer after retries); try again later with the same idempotency key`)
  }
  if (err instanceof errors.StripeInvalidRequestError) {
    return new PaymentProviderError(`Stripe refused the ${operation} request (HTTP ${err.statusCode}${err.code ? `, ${err.code}` : ''}): ${err.message}${request}`)
  }
  return new PaymentProviderError(
    `Stripe failed on ${operation} (HTTP ${err.statusCode ?? 'none'}, ${err.rawType ?? err.type}); try again later with the same idempotency key${request}`
  )
}
