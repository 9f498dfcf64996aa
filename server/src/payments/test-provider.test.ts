import t from 'tap'
import { runCli } from '../cli.js'
import { loadConfig } from '../config.js'
import { createPaymentProvider, IdempotencyKeyReusedError, PaymentProviderError, StripePaymentProvider, TestPaymentProvider, type ChargeInput } from './index.js'

const card = (last4: string) => ({ brand: 'visa', last4, expMonth: 12, expYear: 2030, providerCustomerRef: null, providerMethodRef: null })

const charge = (last4: string, over: Partial<ChargeInput> = {}): ChargeInput => ({
  amount: 1500,
  currency: 'EUR',
  paymentMethod: card(last4),
  idempotencyKey: `membership:s1:cycle:${last4}`,
  description: 'Gold membership',
  metadata: { subscriptionId: 's1', cycle: '1' },
  ...over
})

t.test("the saved card's last four digits decide, as Stripe's test cards do", async (t) => {
  const provider = new TestPaymentProvider()
  const ok = await provider.charge(charge('4242'))
  t.match(ok, { status: 'succeeded', reference: /^test_ch_[0-9a-f-]{36}$/ })

  const declined = await provider.charge(charge('9995'))
  t.match(declined, { status: 'declined', reference: /^test_ch_/, declineCode: 'insufficient_funds', message: 'Your card has insufficient funds.' })

  const auth = await provider.charge(charge('3184'))
  t.match(auth, { status: 'requires_authentication', reference: /^test_ch_/, clientSecret: /^test_ch_.+_secret_[0-9a-f]{24}$/, nextActionUrl: null })

  t.match(await provider.charge(charge('1881')), { status: 'succeeded' }, 'any other number succeeds')
  t.same(
    provider.list().map((c) => [c.status, c.amount, c.currency]),
    [
      ['succeeded', 1500, 'EUR'],
      ['declined', 1500, 'EUR'],
      ['requires_authentication', 1500, 'EUR'],
      ['succeeded', 1500, 'EUR']
    ]
  )
  t.notOk(JSON.stringify(provider.list()).includes('_secret_'), 'the list does not hand out client secrets')
})

t.test('authentication: retrieve answers requires_authentication until the customer completes it', async (t) => {
  const provider = new TestPaymentProvider()
  const auth = await provider.charge(charge('3184'))
  if (auth.status !== 'requires_authentication') throw new Error('expected requires_authentication')
  t.same(await provider.retrieve(auth.reference), auth, 'the same reference and client secret')
  t.match(await provider.refund({ reference: auth.reference, amount: 100, currency: 'EUR', idempotencyKey: 'r0' }), {
    status: 'failed',
    message: /has not succeeded/
  })

  t.same(await provider.completeAuthentication(auth.reference), { status: 'succeeded', reference: auth.reference })
  t.same(await provider.retrieve(auth.reference), { status: 'succeeded', reference: auth.reference })
  t.same(await provider.completeAuthentication(auth.reference), { status: 'succeeded', reference: auth.reference }, 'completing twice changes nothing')
  t.match(await provider.charge(charge('3184')), auth, "a retry of the charge replays its first answer, as Stripe's idempotency does")
  t.equal(provider.list().length, 1)

  const declined = await provider.charge(charge('9995'))
  await t.rejects(provider.completeAuthentication(declined.reference!), { name: 'PaymentProviderError', message: /was declined/ })
  t.match(await provider.retrieve(declined.reference!), { status: 'declined', declineCode: 'insufficient_funds' })
  await t.rejects(provider.retrieve('test_ch_unknown'), PaymentProviderError)
  await t.rejects(new TestPaymentProvider().retrieve(auth.reference), { message: /memory of the process that made them/ }, 'another instance (process) does not know it')
})

t.test('the same idempotency key charges once; with another amount it is an error', async (t) => {
  const provider = new TestPaymentProvider()
  const [first, second] = await Promise.all([provider.charge(charge('4242')), provider.charge(charge('4242'))])
  t.same(second, first, 'two calls at once with one key: one answer')
  t.same(await provider.charge(charge('4242', { metadata: { cycle: '1', subscriptionId: 's1' } })), first, 'metadata in another order is the same request')
  t.equal(provider.list().length, 1, 'one charge')

  await t.rejects(provider.charge(charge('4242', { amount: 1600 })), {
    name: 'IdempotencyKeyReusedError',
    message: 'idempotencyKey "membership:s1:cycle:4242" was already used for a different charge'
  })
  await t.rejects(provider.charge(charge('4242', { currency: 'USD' })), IdempotencyKeyReusedError)
  await t.rejects(provider.charge(charge('4242', { paymentMethod: card('1881') })), IdempotencyKeyReusedError)
  t.ok(new IdempotencyKeyReusedError('x') instanceof PaymentProviderError, 'callers that catch PaymentProviderError catch it too')
  t.equal(provider.list().length, 1, 'still one charge')

  const next = await provider.charge(charge('4242', { idempotencyKey: 'membership:s1:cycle:2' }))
  t.not(next.reference, first.reference, 'another key is another charge')
  t.equal(provider.list().length, 2)
})

t.test('amounts must be positive whole minor units', async (t) => {
  const provider = new TestPaymentProvider()
  for (const amount of [0, -100, 12.5, Number.NaN]) {
    await t.rejects(provider.charge(charge('4242', { amount })), { name: 'PaymentProviderError', message: /positive whole number/ })
  }
  t.equal(provider.list().length, 0)
  t.match(await provider.charge(charge('4242')), { status: 'succeeded' }, 'a refused call leaves the key unused')
})

t.test('refunds: at most what was charged, in total; a retried refund refunds once', async (t) => {
  const provider = new TestPaymentProvider()
  const { reference } = (await provider.charge(charge('4242'))) as { reference: string }
  const refund = (amount: number, idempotencyKey: string, currency = 'EUR') => provider.refund({ reference, amount, currency, idempotencyKey })

  const first = await refund(1000, 'refund:1')
  t.match(first, { status: 'succeeded', reference: /^test_re_[0-9a-f-]{36}$/ })
  t.same(await refund(1000, 'refund:1'), first, 'a retry answers the same refund')
  t.equal(provider.list()[0]!.refunded, 1000, 'and refunds once')

  t.match(await refund(501, 'refund:2'), { status: 'failed', message: 'the refund of 501 is more than the 500 left to refund on ' + reference })
  t.match(await refund(500, 'refund:3', 'USD'), { status: 'failed', message: /was made in EUR, not USD/ })
  t.match(await refund(500, 'refund:4'), { status: 'succeeded' })
  t.equal(provider.list()[0]!.refunded, 1500)
  t.match(await refund(1, 'refund:5'), { status: 'failed', message: /more than the 0 left/ })
  t.match(await refund(501, 'refund:2'), { message: /more than the 500 left/ }, 'a refused refund retried replays its first answer')
  await t.rejects(refund(700, 'refund:1'), IdempotencyKeyReusedError, 'a key used for another amount is an error')
  await t.rejects(refund(0, 'refund:6'), PaymentProviderError)

  const declined = await provider.charge(charge('9995'))
  t.match(await provider.refund({ reference: declined.reference!, amount: 100, currency: 'EUR', idempotencyKey: 'refund:7' }), {
    status: 'failed',
    message: /has not succeeded/
  })
  t.match(await provider.refund({ reference: 'test_ch_nope', amount: 100, currency: 'EUR', idempotencyKey: 'refund:8' }), {
    status: 'failed',
    message: /no test charge test_ch_nope/
  })
})

t.test('createPaymentProvider: test by default, Stripe with its key', async (t) => {
  t.type(createPaymentProvider(loadConfig({})), TestPaymentProvider)
  const stripe = createPaymentProvider(loadConfig({ PAYMENT_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'sk_test_abc' }))
  t.type(stripe, StripePaymentProvider)
  t.equal(stripe.name, 'stripe')
  t.throws(() => createPaymentProvider({ PAYMENT_PROVIDER: 'stripe', STRIPE_SECRET_KEY: '', STRIPE_API_BASE_URL: 'https://api.stripe.com' }), {
    name: 'ConfigError',
    message: 'STRIPE_SECRET_KEY is required with PAYMENT_PROVIDER=stripe'
  })
})

t.test('`club payment-methods set --help` says which last four digits do what', async (t) => {
  let stdout = ''
  const code = await runCli(['payment-methods', 'set', '--help'], { DATABASE_URL: ':memory:' }, (s) => (stdout += s), () => {})
  t.equal(code, 0)
  t.match(stdout, /^usage: club payment-methods set --email <value> --brand <value> --last4 <value>/)
  t.match(stdout, /4242 succeeds, 9995 declines \(insufficient_funds\), 3184 requires authentication; any other number succeeds/)
})
