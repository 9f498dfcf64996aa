// A local stand-in for Stripe's API on 127.0.0.1, speaking its documented requests and answers:
// form-encoded POSTs with a Bearer secret key, PaymentIntent and Refund objects, error bodies
// `{error: {type, code, decline_code, message, payment_intent}}`, and Idempotency-Key replays.
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { stopServer } from './fake-sms-providers.js'

interface Teardown {
  teardown(fn: () => unknown): void
}

export interface StripeRequest {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
  /** The form body, flat: `metadata[orderId]` is one key, as Stripe's encoding sends it. */
  form: Record<string, string>
}

export const STRIPE_SECRET_KEY = 'sk_test_fakeStripeSecretKey123'

/**
 * Stripe's test PaymentMethods, by what they do when charged off-session and confirmed:
 * https://docs.stripe.com/testing. `threeDSecureRedirect` stands for an intent left in
 * `requires_action` with a redirect (what an on-session confirmation of a 3-D Secure card answers).
 */
export const STRIPE_TEST_METHODS = {
  succeeds: 'pm_card_visa',
  insufficientFunds: 'pm_card_visa_chargeDeclinedInsufficientFunds',
  authenticationRequired: 'pm_card_authenticationRequired',
  threeDSecureRedirect: 'pm_card_threeDSecure2Required',
  detached: 'pm_card_detached'
} as const

interface Intent {
  id: string
  object: 'payment_intent'
  amount: number
  amount_received: number
  currency: string
  customer: string | null
  payment_method: string | null
  description: string | null
  metadata: Record<string, string>
  status: string
  client_secret: string
  confirmation_method: 'automatic'
  capture_method: 'automatic_async'
  created: number
  livemode: false
  latest_charge: string | null
  last_payment_error: Record<string, unknown> | null
  next_action: Record<string, unknown> | null
  payment_method_types: string[]
  /** Not Stripe's: what this fake has refunded of it. */
  refunded: number
}

interface Stored {
  body: string
  status: number
  answer: unknown
}

export async function fakeStripe(t: Teardown) {
  const intents = new Map<string, Intent>()
  const idempotent = new Map<string, Stored>()
  const requests: StripeRequest[] = []
  /**
   * `failNext`: that many requests answer `failWith` (500 by default) before normal service resumes.
   * `hang`: requests are never answered (to make the client time out).
   */
  const state = { failNext: 0, failWith: 500, hang: false }

  const server: Server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      const recorded: StripeRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
        form: Object.fromEntries(new URLSearchParams(body))
      }
      requests.push(recorded)
      if (state.hang) return
      handle(recorded, res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => stopServer(server))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0

  function send(res: ServerResponse, status: number, answer: unknown, headers: Record<string, string> = {}) {
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomBytes(7).toString('hex')}`, ...headers })
    res.end(JSON.stringify(answer))
  }
  const error = (type: string, message: string, extra: Record<string, unknown> = {}) => ({ error: { type, message, ...extra } })

  function handle(req: StripeRequest, res: ServerResponse) {
    if (req.headers.authorization !== `Bearer ${STRIPE_SECRET_KEY}`) {
      const given = String(req.headers.authorization ?? '').replace(/^Bearer /, '')
      // Stripe's own answer quotes the end of the key it refused.
      return send(res, 401, error('invalid_request_error', `Invalid API Key provided: ${given.slice(0, 8)}****${given.slice(-4)}`))
    }
    if (state.failNext > 0) {
      state.failNext -= 1
      return send(res, state.failWith, error('api_error', 'An unknown error occurred while processing your request.'))
    }
    // Stripe keeps the answer of a POST made with an Idempotency-Key and replays it to a retry
    // with the same parameters; other parameters with the same key are a 400 idempotency_error.
    const key = req.method === 'POST' ? req.headers['idempotency-key'] : undefined
    if (typeof key === 'string') {
      const stored = idempotent.get(key)
      if (stored && stored.body !== req.body) {
        return send(
          res,
          400,
          error(
            'idempotency_error',
            `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`
          )
        )
      }
      if (stored) return send(res, stored.status, stored.answer, { 'idempotent-replayed': 'true' })
    }
    const [status, answer] = route(req)
    if (typeof key === 'string') idempotent.set(key, { body: req.body, status, answer })
    send(res, status, answer)
  }

  function route(req: StripeRequest): [number, unknown] {
    const path = req.url.split('?')[0]!
    if (req.method === 'POST' && path === '/v1/payment_intents') return createIntent(req.form)
    const retrieve = /^\/v1\/payment_intents\/([^/]+)$/.exec(path)
    if (req.method === 'GET' && retrieve) {
      const intent = intents.get(decodeURIComponent(retrieve[1]!))
      if (!intent) return notFound('payment_intent', retrieve[1]!)
      return [200, view(intent)]
    }
    if (req.method === 'POST' && path === '/v1/refunds') return createRefund(req.form)
    return [404, error('invalid_request_error', `Unrecognized request URL (${req.method}: ${path}).`)]
  }

  const notFound = (what: string, id: string): [number, unknown] => [
    404,
    error('invalid_request_error', `No such ${what}: '${id}'`, { code: 'resource_missing', param: what })
  ]

  function view(intent: Intent) {
    const { refunded: _refunded, ...shown } = intent
    return shown
  }

  function createIntent(form: Record<string, string>): [number, unknown] {
    const amount = Number(form.amount)
    if (!/^\d+$/.test(form.amount ?? '') || amount < 1) {
      return [400, error('invalid_request_error', 'This value must be greater than or equal to 1.', { code: 'parameter_invalid_integer', param: 'amount' })]
    }
    if (!form.currency) return [400, error('invalid_request_error', 'Missing required param: currency.', { code: 'parameter_missing', param: 'currency' })]
    if (form.payment_method === STRIPE_TEST_METHODS.detached) {
      return [
        400,
        error('invalid_request_error', `No such PaymentMethod: '${form.payment_method}'`, { code: 'resource_missing', param: 'payment_method' })
      ]
    }
    const metadata: Record<string, string> = {}
    for (const [name, value] of Object.entries(form)) {
      const match = /^metadata\[(.+)\]$/.exec(name)
      if (match) metadata[match[1]!] = value
    }
    const id = `pi_${randomBytes(12).toString('hex')}`
    const intent: Intent = {
      id,
      object: 'payment_intent',
      amount,
      amount_received: 0,
      currency: form.currency,
      customer: form.customer ?? null,
      payment_method: form.payment_method ?? null,
      description: form.description ?? null,
      metadata,
      status: 'requires_confirmation',
      client_secret: `${id}_secret_${randomBytes(12).toString('hex')}`,
      confirmation_method: 'automatic',
      capture_method: 'automatic_async',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      latest_charge: null,
      last_payment_error: null,
      next_action: null,
      payment_method_types: ['card'],
      refunded: 0
    }
    intents.set(id, intent)
    if (form.confirm !== 'true') return [200, view(intent)]
    const paymentMethod = { id: form.payment_method, object: 'payment_method', type: 'card', card: { brand: 'visa', last4: '4242' } }
    switch (form.payment_method) {
      case STRIPE_TEST_METHODS.insufficientFunds: {
        const lastError = {
          type: 'card_error',
          code: 'card_declined',
          decline_code: 'insufficient_funds',
          message: 'Your card has insufficient funds.',
          payment_method: paymentMethod
        }
        Object.assign(intent, { status: 'requires_payment_method', last_payment_error: lastError, latest_charge: `ch_${randomBytes(12).toString('hex')}` })
        return [402, { error: { ...lastError, charge: intent.latest_charge, doc_url: 'https://docs.stripe.com/error-codes/card-declined', payment_intent: view(intent) } }]
      }
      case STRIPE_TEST_METHODS.authenticationRequired: {
        const lastError = {
          type: 'card_error',
          code: 'authentication_required',
          decline_code: 'authentication_required',
          message: 'Your card was declined. This transaction requires authentication.',
          payment_method: paymentMethod
        }
        Object.assign(intent, { status: 'requires_payment_method', last_payment_error: lastError, latest_charge: `ch_${randomBytes(12).toString('hex')}` })
        return [
          402,
          { error: { ...lastError, charge: intent.latest_charge, doc_url: 'https://docs.stripe.com/error-codes/authentication-required', payment_intent: view(intent) } }
        ]
      }
      case STRIPE_TEST_METHODS.threeDSecureRedirect:
        Object.assign(intent, {
          status: 'requires_action',
          next_action: {
            type: 'redirect_to_url',
            redirect_to_url: { url: `https://hooks.stripe.com/3d_secure_2/hosted?payment_intent=${id}`, return_url: 'https://club.example.org/return' }
          }
        })
        return [200, view(intent)]
      default:
        succeed(intent)
        return [200, view(intent)]
    }
  }

  function succeed(intent: Intent) {
    Object.assign(intent, {
      status: 'succeeded',
      amount_received: intent.amount,
      last_payment_error: null,
      next_action: null,
      latest_charge: intent.latest_charge ?? `ch_${randomBytes(12).toString('hex')}`
    })
  }

  function createRefund(form: Record<string, string>): [number, unknown] {
    const intent = intents.get(form.payment_intent ?? '')
    if (!intent) return notFound('payment_intent', form.payment_intent ?? '')
    if (intent.status !== 'succeeded') {
      return [400, error('invalid_request_error', `This PaymentIntent (${intent.id}) does not have a successful charge to refund.`, { code: 'charge_not_refundable' })]
    }
    const amount = form.amount === undefined ? intent.amount - intent.refunded : Number(form.amount)
    const left = intent.amount - intent.refunded
    if (left === 0) return [400, error('invalid_request_error', `Charge ${intent.latest_charge} has already been refunded.`, { code: 'charge_already_refunded' })]
    if (amount > left) {
      return [400, error('invalid_request_error', `Refund amount (${amount}) is greater than unrefunded amount on charge (${left})`, { param: 'amount' })]
    }
    intent.refunded += amount
    return [
      200,
      {
        id: `re_${randomBytes(12).toString('hex')}`,
        object: 'refund',
        amount,
        charge: intent.latest_charge,
        currency: intent.currency,
        payment_intent: intent.id,
        status: 'succeeded',
        reason: null,
        metadata: {},
        created: Math.floor(Date.now() / 1000)
      }
    ]
  }

  /** The customer completes the authentication in the browser (Stripe.js): the intent succeeds. */
  function completeAuthentication(id: string) {
    const intent = intents.get(id)
    if (!intent) throw new Error(`no intent ${id}`)
    succeed(intent)
  }

  return { baseUrl: `http://127.0.0.1:${port}`, server, requests, intents, state, completeAuthentication }
}
