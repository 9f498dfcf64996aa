// Scopes mean something: a token asked for with a narrow scope, a web view's token or a partner's
// can do only what its scope allows, whatever its user's role (PROTOCOLS.md, docs/integrating.md, "Scopes").
import t, { type Test } from 'tap'
import { createClient } from './clients.js'
import { errorOf, testApp, userWithApiKey, userWithToken, type TestApp } from '../test-support/app.js'

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString()

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`

function tokenRequest(ctx: TestApp, fields: Record<string, string>, authorization?: string) {
  return ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(authorization ? { authorization } : {}) },
    payload: form(fields)
  })
}

/** A password-grant token of a new user of `role` with `scope`. */
async function scopedToken(ctx: TestApp, role: 'member' | 'staff' | 'admin', scope: string): Promise<string> {
  const user = await userWithToken(ctx, role)
  const res = await tokenRequest(ctx, { grant_type: 'password', username: user.email, password: user.password, scope })
  if (res.statusCode !== 201 || res.json().scope !== scope) throw new Error(`no ${scope} token: ${res.body}`)
  return `Bearer ${res.json().access_token}`
}

const call = (ctx: TestApp, method: 'GET' | 'POST' | 'DELETE' | 'HEAD', url: string, authorization: string, payload?: object) =>
  ctx.app.inject({ method, url, headers: { authorization }, ...(payload ? { payload } : {}) })

function insufficientScope(t: Test, res: { statusCode: number; headers: Record<string, unknown>; json(): any }, needed: string) {
  t.equal(res.statusCode, 403)
  const body = errorOf(res)
  t.equal(body.error, 'insufficient_scope', 'RFC 6750 section 3.1 code in the error shape')
  t.match(body.message, new RegExp(`needs a token with the scope .*\\b${needed}\\b`), 'the message names the scope needed')
  t.equal(res.headers['www-authenticate'], `Bearer error="insufficient_scope", scope="${needed}"`)
}

t.test('a read token reads what its user may read, and may change nothing', async (t) => {
  const ctx = await testApp(t)
  const read = await scopedToken(ctx, 'member', 'read')
  t.equal((await call(ctx, 'GET', '/apis/v2/users/current', read)).statusCode, 200)
  t.equal((await call(ctx, 'HEAD', '/apis/v2/users/current', read)).statusCode, 200)
  t.equal((await call(ctx, 'GET', '/apis/v2/packages', read)).statusCode, 200)
  t.equal((await call(ctx, 'GET', '/apis/v2/replays', read)).statusCode, 200)

  // Refused before the body is read: the same answer whether the body is good or not.
  insufficientScope(t, await call(ctx, 'POST', '/apis/v2/replays', read, { court: { id: 'c1' } }), 'replays')
  insufficientScope(t, await call(ctx, 'DELETE', '/apis/v2/users/current', read), 'api')
  t.equal((await call(ctx, 'GET', '/apis/v2/users/current', read)).json().deletionRequestedDate, undefined, 'nothing was asked for')
})

t.test('staff and admin routes need api, whatever the role of the token\'s user', async (t) => {
  const ctx = await testApp(t)
  const replays = await scopedToken(ctx, 'admin', 'replays')
  insufficientScope(t, await call(ctx, 'GET', '/apis/v2/admin/replay-servers', replays), 'api')
  insufficientScope(t, await call(ctx, 'GET', '/apis/v2/admin/agent-releases', replays), 'api')
  insufficientScope(t, await call(ctx, 'GET', '/apis/v2/admin/replay-servers', await scopedToken(ctx, 'admin', 'read')), 'api')
  const read = await scopedToken(ctx, 'staff', 'read')
  insufficientScope(t, await call(ctx, 'GET', '/apis/v2/templates', read), 'api')
  insufficientScope(t, await call(ctx, 'POST', '/apis/v2/packages', read, {}), 'api')

  const api = await scopedToken(ctx, 'admin', 'api')
  t.equal((await call(ctx, 'GET', '/apis/v2/admin/replay-servers', api)).statusCode, 200, 'the same admin with api')
  t.equal((await call(ctx, 'GET', '/apis/v2/replays', replays)).statusCode, 200, 'a replays token on the replay routes')
})

t.test("a staff member's narrow token acts as a member on the routes every user shares", async (t) => {
  const ctx = await testApp(t)
  const member = await userWithToken(ctx, 'member')
  const staffUser = await userWithToken(ctx, 'staff')
  const login = async (scope: string) => {
    const res = await tokenRequest(ctx, { grant_type: 'password', username: staffUser.email, password: staffUser.password, scope })
    return `Bearer ${res.json().access_token}`
  }
  const replays = await login('replays')
  const read = await login('read')
  // With api, staff list another member's replays and orders; a narrow token of the same user may not.
  t.equal((await call(ctx, 'GET', `/apis/v2/replays?user=${member.id}`, staffUser.authorization)).statusCode, 200, 'api: staff powers')
  const asMember = await call(ctx, 'GET', `/apis/v2/replays?user=${member.id}`, replays)
  t.equal(asMember.statusCode, (await call(ctx, 'GET', `/apis/v2/replays?user=${staffUser.id}`, member.authorization)).statusCode, 'a replays token: as a member asking for someone else')
  t.not(asMember.statusCode, 200)
  t.not((await call(ctx, 'GET', `/apis/v2/orders?userId=${member.id}`, read)).statusCode, 200, "a read token: not another member's orders")
  // Older footage is for staff with api: the accessReason of a narrow token is a member's.
  const old = await call(ctx, 'POST', '/apis/v2/replays', replays, { court: { id: 'c1' }, end: '2026-03-01T08:00:00.000Z', accessReason: 'incident report' })
  t.equal(old.statusCode, 403, 'no staff footage through a web view token')
  // users/current still says who the user is.
  t.equal((await call(ctx, 'GET', '/apis/v2/users/current', replays)).json().role, 'staff')
})

t.test('profile reads users/current only; replays adds the replay routes', async (t) => {
  const ctx = await testApp(t)
  const profile = await scopedToken(ctx, 'member', 'profile')
  t.equal((await call(ctx, 'GET', '/apis/v2/users/current', profile)).statusCode, 200)
  insufficientScope(t, await call(ctx, 'GET', '/apis/v2/replays', profile), 'read')
  insufficientScope(t, await call(ctx, 'GET', '/apis/v2/users/current/payment-method', profile), 'read')
  insufficientScope(t, await call(ctx, 'DELETE', '/apis/v2/users/current', profile), 'api')

  const replays = await scopedToken(ctx, 'member', 'replays')
  t.equal((await call(ctx, 'GET', '/apis/v2/users/current', replays)).statusCode, 200)
  t.equal((await call(ctx, 'GET', '/apis/v2/replays', replays)).statusCode, 200)
  insufficientScope(t, await call(ctx, 'GET', '/apis/v2/packages', replays), 'read')
  insufficientScope(t, await call(ctx, 'POST', '/apis/v2/oauth2/webview-token', replays, {}), 'api')
})

t.test('an API key is api: its user made it for an integration of their own', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithApiKey(ctx)
  const res = await ctx.app.inject({ method: 'DELETE', url: '/apis/v2/users/current', headers: { 'x-api-key': user.apiKey } })
  t.equal(res.statusCode, 202)
})

t.test('a token is granted only scopes its client is registered with, and only the club\'s scopes', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx)
  const c = await createClient(ctx.app.db, { name: 'replay viewer', grants: ['password', 'client_credentials'], scopes: ['replays'] }, ctx.clock)
  const auth = basic(c.clientId, c.clientSecret)

  const beyond = await tokenRequest(ctx, { grant_type: 'password', username: user.email, password: user.password, scope: 'api' }, auth)
  t.equal(beyond.statusCode, 400)
  t.equal(beyond.json().error, 'invalid_scope')
  t.match(beyond.json().error_description, /scope api is not allowed/)
  const read = await tokenRequest(ctx, { grant_type: 'client_credentials', scope: 'replays read' }, auth)
  t.equal(read.json().error, 'invalid_scope', 'read is not within replays either: scopes compare as strings (RFC 6749 section 3.3)')
  const granted = await tokenRequest(ctx, { grant_type: 'password', username: user.email, password: user.password }, auth)
  t.equal(granted.json().scope, 'replays', 'without scope: what the client is registered with')

  const unknown = await tokenRequest(ctx, { grant_type: 'password', username: user.email, password: user.password, scope: `admin ${'x'.repeat(5000)}` })
  t.equal(unknown.json().error, 'invalid_scope')
  t.ok(unknown.body.length < 600, 'a long unknown scope is not echoed whole')
  t.equal((await tokenRequest(ctx, { grant_type: 'password', username: user.email, password: user.password })).json().scope, 'api', 'no client, no scope: api')

  await t.rejects(createClient(ctx.app.db, { name: 'odd', scopes: ['api', 'everything'] }, ctx.clock), /scope everything is not one of api, read, replays, profile/)
})

t.test('a web view token has replays profile, or less when it asks', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx)
  const webview = (body: object) => call(ctx, 'POST', '/apis/v2/oauth2/webview-token', user.authorization, { username: user.email, grant_type: 'mobile_webview_auth', ...body })
  const full = await webview({})
  t.equal(full.statusCode, 201)
  t.equal(full.json().scope, 'replays profile')
  const bearer = `Bearer ${full.json().access_token}`
  t.equal((await call(ctx, 'GET', '/apis/v2/replays', bearer)).statusCode, 200)
  insufficientScope(t, await call(ctx, 'GET', '/apis/v2/packages', bearer), 'read')
  t.equal((await webview({ scope: 'profile' })).json().scope, 'profile')
  const more = await webview({ scope: 'api' })
  t.equal(more.statusCode, 400)
  t.match(errorOf(more).message, /scope: scope api is not allowed; a web view token may have replays profile/)
})

t.test('the OpenAPI document names the scopes and which operations take the narrow ones', async (t) => {
  const ctx = await testApp(t)
  const doc = (await ctx.app.inject({ url: '/documentation/json' })).json()
  t.same(Object.keys(doc.components.securitySchemes.oauth2.flows.password.scopes), ['api', 'read', 'replays', 'profile'])
  t.same(doc.paths['/apis/v2/users/current'].get.security, [{ apiKey: [] }, { oauth2: ['api'] }, { oauth2: ['replays'] }, { oauth2: ['profile'] }])
  // A court page guest's token (no scope) is the replay routes' plain bearer.
  t.same(doc.paths['/apis/v2/replays'].post.security, [{ apiKey: [] }, { oauth2: ['api'] }, { oauth2: ['replays'] }, { bearerAuth: [] }])
})
