import t from 'tap'
import { testApp, userWithToken, errorOf } from '../test-support/app.js'

t.test('GET /apis/v2/users/current answers the Bearer token\'s user', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx, 'staff')
  const res = await ctx.app.inject({ method: 'GET', url: '/apis/v2/users/current', headers: { authorization: user.authorization } })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.match(body, { id: user.id, email: user.email, role: 'staff', _links: { self: { href: '/apis/v2/users/current' } } })
  t.notOk('password_hash' in body)
})

t.test('no credentials is a 401 in the error shape', async (t) => {
  const ctx = await testApp(t)
  const res = await ctx.app.inject({ method: 'GET', url: '/apis/v2/users/current' })
  t.equal(res.statusCode, 401)
  t.equal(res.headers['www-authenticate'], 'Bearer')
  t.equal(errorOf(res).error, 'Unauthorized')
})
