import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { revokeApiKey } from '../api-keys/service.js'
import { revokeUserTokens } from '../oauth2/tokens.js'
import { testApp, userWithApiKey, userWithToken, errorOf } from '../test-support/app.js'

// A route that needs the staff or admin role, as templates do.
async function staffRoute(app: FastifyInstance) {
  app.get('/test/staff-only', { preHandler: app.auth.bearer({ roles: ['staff', 'admin'] }) }, async () => ({ ok: true }))
}

t.test('the Bearer guard', async (t) => {
  const ctx = await testApp(t, {}, staffRoute)
  const staff = await userWithToken(ctx, 'staff')
  const member = await userWithToken(ctx, 'member')
  const get = (authorization?: string) =>
    ctx.app.inject({ url: '/test/staff-only', headers: authorization === undefined ? {} : { authorization } })

  t.test('no header: 401 with a bare Bearer challenge', async (t) => {
    const res = await get()
    t.equal(res.statusCode, 401)
    t.equal(res.headers['www-authenticate'], 'Bearer')
    errorOf(res)
  })
  t.test('"Bearer" without a token: 401', async (t) => {
    for (const h of ['Bearer', 'Bearer ', 'Basic abc']) {
      const res = await get(h)
      t.equal(res.statusCode, 401, h)
      t.match(res.headers['www-authenticate'], /^Bearer error=/)
      errorOf(res)
    }
  })
  t.test('garbage: 401 invalid_token', async (t) => {
    const res = await get('Bearer not-a-token')
    t.equal(res.statusCode, 401)
    t.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"')
  })
  t.test('a valid token with the role passes', async (t) => {
    const res = await get(staff.authorization)
    t.equal(res.statusCode, 200)
    t.same(res.json(), { ok: true })
  })
  t.test('a valid token without the role: 403', async (t) => {
    const res = await get(member.authorization)
    t.equal(res.statusCode, 403)
    t.match(errorOf(res).message, /staff or admin/)
  })
  t.test('revoked: 401', async (t) => {
    const other = await userWithToken(ctx, 'admin')
    await revokeUserTokens(ctx.app.db, other.id, ctx.clock)
    const res = await get(other.authorization)
    t.equal(res.statusCode, 401)
    t.match(errorOf(res).message, /revoked/)
  })
  t.test('expired: 401', async (t) => {
    ctx.clock.advance(3601 * 1000)
    const res = await get(staff.authorization)
    t.equal(res.statusCode, 401)
    t.match(errorOf(res).message, /expired/)
  })
})

t.test('API keys on users/current and payment-method', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithApiKey(ctx)
  const me = (headers: Record<string, string>) => ctx.app.inject({ url: '/apis/v2/users/current', headers })

  t.test('valid', async (t) => {
    const res = await me({ 'x-api-key': user.apiKey })
    t.equal(res.statusCode, 200)
    t.equal(res.json().email, user.email)
  })
  t.test('missing', async (t) => {
    const res = await me({})
    t.equal(res.statusCode, 401)
  })
  t.test('wrong', async (t) => {
    const res = await me({ 'x-api-key': 'club_wrong' })
    t.equal(res.statusCode, 401)
    t.match(errorOf(res).message, /API key is not valid/)
  })
  t.test('revoked', async (t) => {
    const other = await userWithApiKey(ctx)
    await revokeApiKey(ctx.app.db, other.apiKeyId, ctx.clock)
    const res = await me({ 'x-api-key': other.apiKey })
    t.equal(res.statusCode, 401)
    t.match(errorOf(res).message, /revoked/)
  })
  t.test('payment method: 404 without one, then what the provider returned', async (t) => {
    const none = await ctx.app.inject({ url: '/apis/v2/users/current/payment-method', headers: { 'x-api-key': user.apiKey } })
    t.equal(none.statusCode, 404)
    errorOf(none)
    const { setDefaultPaymentMethod } = await import('../users/payment-methods.js')
    await setDefaultPaymentMethod(ctx.app.db, user.id, { brand: 'Visa', last4: '4242', expMonth: 12, expYear: 2030 }, ctx.clock)
    await setDefaultPaymentMethod(ctx.app.db, user.id, { brand: 'mastercard', last4: '4444', expMonth: 1, expYear: 2031 }, ctx.clock)
    const res = await ctx.app.inject({ url: '/apis/v2/users/current/payment-method', headers: { 'x-api-key': user.apiKey } })
    t.equal(res.statusCode, 200)
    t.match(res.json(), { brand: 'mastercard', last4: '4444', expMonth: 1, expYear: 2031, _links: { self: { href: String } } })
    const bearer = await ctx.app.inject({ url: '/apis/v2/users/current/payment-method', headers: { authorization: user.authorization } })
    t.equal(bearer.json().last4, '4444')
  })
})

t.test('the API-key rate limit', async (t) => {
  const ctx = await testApp(t, { API_KEY_RATE_LIMIT_MAX: '3', API_KEY_RATE_LIMIT_WINDOW_SECONDS: '60' })
  const user = await userWithApiKey(ctx)
  const call = (remoteAddress: string, url = '/apis/v2/users/current') =>
    ctx.app.inject({ url, remoteAddress, headers: { 'x-api-key': user.apiKey } })

  const first = await call('10.0.0.1')
  t.equal(first.statusCode, 200)
  t.equal(first.headers['x-ratelimit-limit'], '3')
  t.equal(first.headers['x-ratelimit-remaining'], '2')
  await call('10.0.0.1', '/apis/v2/users/current/payment-method')
  await call('10.0.0.1')
  const limited = await call('10.0.0.1')
  t.equal(limited.statusCode, 429, 'the limit is shared across the integration endpoints')
  t.ok(Number(limited.headers['retry-after']) > 0)
  t.equal(limited.headers['x-ratelimit-remaining'], '0')
  t.ok(limited.headers['x-ratelimit-reset'])
  t.match(errorOf(limited), { statusCode: 429, error: 'Too Many Requests', message: /Rate limit exceeded/ })

  const otherIp = await call('10.0.0.2')
  t.equal(otherIp.statusCode, 200, 'another client IP is not limited')

  const bearer = await ctx.app.inject({ url: '/apis/v2/users/current', remoteAddress: '10.0.0.1', headers: { authorization: user.authorization } })
  t.equal(bearer.statusCode, 200, 'Bearer callers are not counted against the API-key limit')
})

t.test('behind a trusted proxy the forwarded client IP counts', async (t) => {
  const ctx = await testApp(t, { API_KEY_RATE_LIMIT_MAX: '1', TRUST_PROXY: '127.0.0.1' })
  const user = await userWithApiKey(ctx)
  const call = (forwarded: string) =>
    ctx.app.inject({ url: '/apis/v2/users/current', remoteAddress: '127.0.0.1', headers: { 'x-api-key': user.apiKey, 'x-forwarded-for': forwarded } })
  t.equal((await call('203.0.113.1')).statusCode, 200)
  t.equal((await call('203.0.113.1')).statusCode, 429)
  t.equal((await call('203.0.113.2')).statusCode, 200)
})
