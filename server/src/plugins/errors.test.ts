import t from 'tap'
import type { FastifyInstance } from 'fastify'
import Type from 'typebox'
import { testApp, userWithApiKey, userWithToken, errorOf } from '../test-support/app.js'

async function routes(app: FastifyInstance) {
  app.get('/test/boom', async () => {
    throw new Error('database exploded at /secret/path')
  })
  app.post(
    '/test/validated',
    { schema: { body: Type.Object({ name: Type.String(), count: Type.Integer() }, { additionalProperties: false }) } },
    async () => ({ ok: true })
  )
  app.get('/test/admin', { preHandler: app.auth.bearer({ roles: ['admin'] }) }, async () => ({ ok: true }))
}

t.test('every failure answers {statusCode, message, error} and no stack', async (t) => {
  const ctx = await testApp(t, { API_KEY_RATE_LIMIT_MAX: '1' }, routes)

  t.test('404 for an unknown route', async (t) => {
    const res = await ctx.app.inject({ url: '/apis/v2/nothing-here?x=1' })
    t.equal(res.statusCode, 404)
    t.same(errorOf(res), { statusCode: 404, error: 'Not Found', message: 'Route GET /apis/v2/nothing-here not found' })
  })

  t.test('400 for a validation failure names the field', async (t) => {
    const missing = await ctx.app.inject({ method: 'POST', url: '/test/validated', payload: { count: 1 } })
    t.equal(missing.statusCode, 400)
    t.equal(errorOf(missing).message, 'body.name is required')
    const wrongType = await ctx.app.inject({ method: 'POST', url: '/test/validated', payload: { name: 'x', count: '2' } })
    t.equal(errorOf(wrongType).message, 'body.count must be integer')
    const extra = await ctx.app.inject({ method: 'POST', url: '/test/validated', payload: { name: 'x', count: 2, admin: true } })
    t.equal(errorOf(extra).message, 'body.admin is not allowed')
    const badJson = await ctx.app.inject({ method: 'POST', url: '/test/validated', headers: { 'content-type': 'application/json' }, payload: '{' })
    t.equal(badJson.statusCode, 400)
    errorOf(badJson)
  })

  t.test('401 and 403', async (t) => {
    const unauthenticated = await ctx.app.inject({ url: '/test/admin' })
    t.equal(errorOf(unauthenticated).statusCode, 401)
    const member = await userWithToken(ctx)
    const forbidden = await ctx.app.inject({ url: '/test/admin', headers: { authorization: member.authorization } })
    t.same(errorOf(forbidden), { statusCode: 403, error: 'Forbidden', message: 'this operation needs the role admin' })
  })

  t.test('429', async (t) => {
    const user = await userWithApiKey(ctx)
    await ctx.app.inject({ url: '/apis/v2/users/current', headers: { 'x-api-key': user.apiKey } })
    const res = await ctx.app.inject({ url: '/apis/v2/users/current', headers: { 'x-api-key': user.apiKey } })
    t.equal(res.statusCode, 429)
    t.equal(errorOf(res).error, 'Too Many Requests')
  })

  t.test('500 hides what went wrong from the client and logs it', async (t) => {
    const res = await ctx.app.inject({ url: '/test/boom' })
    t.equal(res.statusCode, 500)
    t.same(errorOf(res), { statusCode: 500, error: 'Internal Server Error', message: 'An unexpected error occurred' })
    t.notMatch(res.body, /exploded|secret|at /)
    t.match(ctx.logs(), /database exploded/)
  })

  t.test('415 for a content type the route cannot read', async (t) => {
    const res = await ctx.app.inject({ method: 'POST', url: '/test/validated', headers: { 'content-type': 'text/csv' }, payload: 'a,b' })
    t.equal(res.statusCode, 415)
    errorOf(res)
  })
})
