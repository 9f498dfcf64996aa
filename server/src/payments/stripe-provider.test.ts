// The Stripe provider against a local server answering Stripe's documented requests and errors.
import t from 'tap'
import { stopServer } from '../test-support/fake-sms-providers.js'
import { STRIPE_SECRET_KEY, STRIPE_TEST_METHODS, fakeStripe } from '../test-support/fake-stripe.js'
import { IdempotencyKeyReusedError, PaymentProviderError, StripePaymentProvider, type ChargeInput, type StripeSettings } from './index.js'

const CUSTOMER = 'cus_RtestCustomer1'

const charge = (paymentMethod: string, over: Partial<ChargeInput> = {}): ChargeInput => ({
  amount: 13310,
  currency: 'EUR',
  paymentMethod: { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030, providerCustomerRef: CUSTOMER, providerMethodRef: paymentMethod },
  idempotencyKey: `membership:sub_1:cycle:1:${paymentMethod}`,
  description: 'Gold membership, first month',
  metadata: { orderId: 'ord_1', subscriptionId: 'sub_1' },
  ...over
})

async function setup(t: Parameters<typeof fakeStripe>[0], settings: Partial<StripeSettings> = {}) {
  const stripe = await fakeStripe(t)
  const provider = new StripePaymentProvider({ secretKey: STRIPE_SECRET_KEY, apiBaseUrl: stripe.baseUrl, ...settings })
  return { stripe, provider }
}

t.test('a charge is one PaymentIntent created and confirmed off-session, with the Idempotency-Key', async (t) => {
  const { stripe, provider } = await setup(t)
  const result = await provider.charge(charge(STRIPE_TEST_METHODS.succeeds))
  t.match(result, { status: 'succeeded', reference: /^pi_/ })

  t.equal(stripe.requests.length, 1)
  const request = stripe.requests[0]!
  t.equal(request.method, 'POST')
  t.equal(request.url, '/v1/payment_intents')
  t.equal(request.headers.authorization, `Bearer ${STRIPE_SECRET_KEY}`)
  t.equal(request.headers['content-type'], 'application/x-www-form-urlencoded')
  t.equal(request.headers['idempotency-key'], `membership:sub_1:cycle:1:${STRIPE_TEST_METHODS.succeeds}`)
  t.notOk(request.headers['x-stripe-client-telemetry'], 'no telemetry')
  t.same(request.form, {
    amount: '13310',
    currency: 'eur',
    customer: CUSTOMER,
    payment_method: STRIPE_TEST_METHODS.succeeds,
    off_session: 'true',
    confirm: 'true',
    'automatic_payment_methods[enabled]': 'true',
    'automatic_payment_methods[allow_redirects]': 'never',
    description: 'Gold membership, first month',
    'metadata[orderId]': 'ord_1',
    'metadata[subscriptionId]': 'sub_1'
  })

  t.same(await provider.retrieve(result.reference!), result, 'retrieve: GET /v1/payment_intents/:id')
  t.match(stripe.requests[1], { method: 'GET', url: `/v1/payment_intents/${result.reference}` })
})

t.test('card_declined (402) is a decline with the bank reason and the PaymentIntent as reference', async (t) => {
  const { stripe, provider } = await setup(t)
  const result = await provider.charge(charge(STRIPE_TEST_METHODS.insufficientFunds))
  const intent = [...stripe.intents.values()][0]!
  t.same(result, { status: 'declined', reference: intent.id, declineCode: 'insufficient_funds', message: 'Your card has insufficient funds.' })
  t.same(await provider.retrieve(intent.id), result, 'the intent left in requires_payment_method reads the same')
})

t.test('authentication_required (402 with the intent) asks the customer, until they complete it', async (t) => {
  const { stripe, provider } = await setup(t)
  const result = await provider.charge(charge(STRIPE_TEST_METHODS.authenticationRequired))
  const intent = [...stripe.intents.values()][0]!
  t.same(result, { status: 'requires_authentication', reference: intent.id, clientSecret: intent.client_secret, nextActionUrl: null })
  t.same(await provider.retrieve(intent.id), result, 'retrieve: still the customer’s to complete')
  stripe.completeAuthentication(intent.id)
  t.same(await provider.retrieve(intent.id), { status: 'succeeded', reference: intent.id })
})

t.test('an intent answered in requires_action gives its client secret and redirect URL', async (t) => {
  const { stripe, provider } = await setup(t)
  const result = await provider.charge(charge(STRIPE_TEST_METHODS.threeDSecureRedirect))
  const intent = [...stripe.intents.values()][0]!
  t.same(result, {
    status: 'requires_authentication',
    reference: intent.id,
    clientSecret: intent.client_secret,
    nextActionUrl: `https://hooks.stripe.com/3d_secure_2/hosted?payment_intent=${intent.id}`
  })
})

t.test('a method Stripe no longer has, or one never saved through Stripe, is declined without retrying', async (t) => {
  const { stripe, provider } = await setup(t)
  t.match(await provider.charge(charge(STRIPE_TEST_METHODS.detached)), {
    status: 'declined',
    reference: null,
    declineCode: 'resource_missing',
    message: "No such PaymentMethod: 'pm_card_detached'"
  })
  const unsaved = charge('x', { paymentMethod: { brand: 'visa', last4: '4242', expMonth: 1, expYear: 2030, providerCustomerRef: null, providerMethodRef: null } })
  t.match(await provider.charge(unsaved), { status: 'declined', reference: null, declineCode: 'payment_method_missing' })
  t.equal(stripe.requests.length, 1, 'the unsaved method never reaches Stripe')
})

t.test('a retry after a 500 carries the same Idempotency-Key, and Stripe charges once', async (t) => {
  const { stripe, provider } = await setup(t)
  stripe.state.failNext = 1
  const result = await provider.charge(charge(STRIPE_TEST_METHODS.succeeds))
  t.match(result, { status: 'succeeded' })
  t.equal(stripe.requests.length, 2, 'one 500, one retry')
  t.equal(stripe.requests[1]!.headers['idempotency-key'], stripe.requests[0]!.headers['idempotency-key'])
  t.equal(stripe.requests[1]!.body, stripe.requests[0]!.body)

  t.same(await provider.charge(charge(STRIPE_TEST_METHODS.succeeds)), result, 'a later retry by the caller is replayed by Stripe')
  t.equal(stripe.intents.size, 1, 'one PaymentIntent')

  await t.rejects(provider.charge(charge(STRIPE_TEST_METHODS.succeeds, { amount: 100 })), IdempotencyKeyReusedError, "the same key with another amount is Stripe's idempotency_error")
  t.equal(stripe.intents.size, 1)
})

t.test('failures that are not decisions throw PaymentProviderError, without the secret key', async (t) => {
  const { stripe, provider } = await setup(t)
  const messages: string[] = []
  const failing = async (promise: Promise<unknown>, message: RegExp) => {
    const err = await promise.then(
      () => null,
      (e: unknown) => e
    )
    t.type(err, PaymentProviderError)
    t.match((err as Error).message, message)
    messages.push((err as Error).message)
  }

  stripe.state.failNext = 3
  await failing(provider.charge(charge(STRIPE_TEST_METHODS.succeeds)), /^Stripe failed on charge \(HTTP 500, api_error\); try again later with the same idempotency key \(request req_/)
  t.equal(stripe.requests.length, 3, 'the first request and two retries')
  t.equal(new Set(stripe.requests.map((r) => r.headers['idempotency-key'])).size, 1, 'all with one key')
  t.equal(stripe.intents.size, 0)

  stripe.state.failNext = 1
  stripe.state.failWith = 429
  await failing(provider.refund({ reference: 'pi_x', amount: 1, currency: 'EUR', idempotencyKey: 'refund:429' }), /^Stripe is limiting this account's requests \(HTTP 429\)/)

  await failing(provider.retrieve('pi_unknown'), /^Stripe refused the retrieve request \(HTTP 404, resource_missing\): No such payment_intent: 'pi_unknown'/)

  const wrongKey = 'sk_test_wrongSecretKey9876'
  const badKey = new StripePaymentProvider({ secretKey: wrongKey, apiBaseUrl: stripe.baseUrl })
  await failing(badKey.charge(charge(STRIPE_TEST_METHODS.succeeds)), /^Stripe refused STRIPE_SECRET_KEY \(HTTP 401\) on charge/)

  const down = await fakeStripe(t)
  await stopServer(down.server)
  const unreachable = new StripePaymentProvider({ secretKey: STRIPE_SECRET_KEY, apiBaseUrl: down.baseUrl, maxNetworkRetries: 1 })
  await failing(unreachable.charge(charge(STRIPE_TEST_METHODS.succeeds)), /^Stripe could not be reached on charge/)

  const hanging = await fakeStripe(t)
  hanging.state.hang = true
  const slow = new StripePaymentProvider({ secretKey: STRIPE_SECRET_KEY, apiBaseUrl: hanging.baseUrl, maxNetworkRetries: 0, timeoutMs: 200 })
  await failing(slow.retrieve('pi_slow'), /^Stripe could not be reached on retrieve/)

  for (const message of messages) {
    t.notOk(message.includes(STRIPE_SECRET_KEY) || message.includes(wrongKey) || message.includes('9876'), `no key in: ${message}`)
    t.notOk(message.includes('_secret_'), 'no client secret')
  }
})

t.test('refunds: POST /v1/refunds for the PaymentIntent, at most what was charged', async (t) => {
  const { stripe, provider } = await setup(t)
  const { reference } = (await provider.charge(charge(STRIPE_TEST_METHODS.succeeds))) as { reference: string }
  const refund = (amount: number, idempotencyKey: string) => provider.refund({ reference, amount, currency: 'EUR', idempotencyKey })

  const first = await refund(10000, 'refund:ord_2')
  t.match(first, { status: 'succeeded', reference: /^re_/ })
  const request = stripe.requests.at(-1)!
  t.match(request, { method: 'POST', url: '/v1/refunds' })
  t.same(request.form, { payment_intent: reference, amount: '10000' })
  t.equal(request.headers['idempotency-key'], 'refund:ord_2')
  t.same(await refund(10000, 'refund:ord_2'), first, 'a retried refund is replayed, not made twice')

  t.same(await refund(3311, 'refund:ord_3'), { status: 'failed', message: 'Refund amount (3311) is greater than unrefunded amount on charge (3310)' })
  t.match(await refund(3310, 'refund:ord_4'), { status: 'succeeded' })
  t.match(await refund(1, 'refund:ord_5'), { status: 'failed', message: /has already been refunded/ })

  const declined = await provider.charge(charge(STRIPE_TEST_METHODS.insufficientFunds))
  t.match(await provider.refund({ reference: declined.reference!, amount: 100, currency: 'EUR', idempotencyKey: 'refund:ord_6' }), {
    status: 'failed',
    message: /does not have a successful charge to refund/
  })
})
