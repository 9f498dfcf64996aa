import t from 'tap'
import { createClient } from './clients.js'
import { testApp, userWithToken, errorOf, type TestApp } from '../test-support/app.js'

const TOKEN = '/apis/v2/oauth2/token'

function form(fields: Record<string, string>): string {
  return new URLSearchParams(fields).toString()
}

async function token(ctx: TestApp, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return ctx.app.inject({
    method: 'POST',
    url: TOKEN,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: form(fields)
  })
}

function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`
}

function oauthError(res: { statusCode: number; json(): any }, code: string) {
  const body = errorOf(res)
  return { ...body, ok: body.error === code && typeof (body as any).error_description === 'string' }
}

async function client(ctx: TestApp, grants: string[], scopes?: string[]) {
  return createClient(ctx.app.db, { name: 'app', grants, scopes }, ctx.clock)
}

t.test('password grant', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx, 'member')

  t.test('succeeds with form-urlencoded credentials and no client', async (t) => {
    const res = await token(ctx, { grant_type: 'password', username: user.email.toUpperCase(), password: user.password })
    t.equal(res.statusCode, 201)
    t.equal(res.headers['cache-control'], 'no-store')
    t.equal(res.headers.pragma, 'no-cache')
    const body = res.json()
    t.match(body, { token_type: 'bearer', expires_in: 3600, scope: 'api' })
    t.ok(Buffer.from(body.access_token, 'base64url').length >= 32, 'access token carries at least 256 bits')
    t.ok(Buffer.from(body.refresh_token, 'base64url').length >= 32, 'refresh token carries at least 256 bits')
    const me = await ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: `Bearer ${body.access_token}` } })
    t.equal(me.json().id, user.id)
  })

  t.test('accepts JSON too', async (t) => {
    const res = await ctx.app.inject({ method: 'POST', url: TOKEN, payload: { grant_type: 'password', username: user.email, password: user.password } })
    t.equal(res.statusCode, 201)
  })

  t.test('a wrong password or an unknown user is invalid_grant', async (t) => {
    for (const fields of [
      { username: user.email, password: 'not the password' },
      { username: 'nobody@example.org', password: user.password }
    ]) {
      const res = await token(ctx, { grant_type: 'password', ...fields })
      t.equal(res.statusCode, 400)
      t.ok(oauthError(res, 'invalid_grant').ok)
      t.equal(res.headers['cache-control'], 'no-store')
    }
  })

  t.test('a missing username or password is invalid_request', async (t) => {
    const res = await token(ctx, { grant_type: 'password', password: user.password })
    t.equal(res.statusCode, 400)
    t.ok(oauthError(res, 'invalid_request').ok)
    t.match(res.json().message, /username/)
  })

  t.test('with a client: valid credentials work, a client without the grant is unauthorized_client', async (t) => {
    const allowed = await client(ctx, ['password', 'refresh_token'])
    const ok = await token(ctx, { grant_type: 'password', username: user.email, password: user.password }, { authorization: basic(allowed.clientId, allowed.clientSecret) })
    t.equal(ok.statusCode, 201)
    const other = await client(ctx, ['client_credentials'])
    const refused = await token(ctx, { grant_type: 'password', username: user.email, password: user.password, client_id: other.clientId, client_secret: other.clientSecret })
    t.equal(refused.statusCode, 400)
    t.ok(oauthError(refused, 'unauthorized_client').ok)
  })

  t.test('a scope beyond what is allowed is invalid_scope', async (t) => {
    const res = await token(ctx, { grant_type: 'password', username: user.email, password: user.password, scope: 'api admin' })
    t.equal(res.statusCode, 400)
    t.ok(oauthError(res, 'invalid_scope').ok)
  })
})

t.test('the password grant can be switched off', async (t) => {
  const ctx = await testApp(t, { PASSWORD_GRANT_ENABLED: 'false' })
  const user = await userWithToken(ctx)
  const res = await token(ctx, { grant_type: 'password', username: user.email, password: user.password })
  t.equal(res.statusCode, 400)
  t.ok(oauthError(res, 'unsupported_grant_type').ok)
})

t.test('client authentication', async (t) => {
  const ctx = await testApp(t)
  const c = await client(ctx, ['client_credentials'])

  t.test('client_credentials without any client authentication is invalid_request', async (t) => {
    const res = await token(ctx, { grant_type: 'client_credentials' })
    t.equal(res.statusCode, 400)
    t.ok(oauthError(res, 'invalid_request').ok)
  })

  t.test('a wrong secret is 401 invalid_client with a Basic challenge', async (t) => {
    for (const res of [
      await token(ctx, { grant_type: 'client_credentials' }, { authorization: basic(c.clientId, 'wrong') }),
      await token(ctx, { grant_type: 'client_credentials', client_id: c.clientId, client_secret: 'wrong' }),
      await token(ctx, { grant_type: 'client_credentials' }, { authorization: basic('no-such-client', c.clientSecret) })
    ]) {
      t.equal(res.statusCode, 401)
      t.ok(oauthError(res, 'invalid_client').ok)
      t.match(res.headers['www-authenticate'], /^Basic/)
    }
  })

  t.test('Basic plus client_secret in the body is invalid_request', async (t) => {
    const res = await token(ctx, { grant_type: 'client_credentials', client_secret: c.clientSecret }, { authorization: basic(c.clientId, c.clientSecret) })
    t.equal(res.statusCode, 400)
    t.ok(oauthError(res, 'invalid_request').ok)
  })

  t.test('a body client_id differing from the Basic one is invalid_request', async (t) => {
    const res = await token(ctx, { grant_type: 'client_credentials', client_id: 'someone-else' }, { authorization: basic(c.clientId, c.clientSecret) })
    t.equal(res.statusCode, 400)
    t.ok(oauthError(res, 'invalid_request').ok)
  })

  t.test('Basic with no value or no colon is invalid_request', async (t) => {
    for (const authorization of ['Basic', 'Basic ', `Basic ${Buffer.from('nocolon').toString('base64')}`, 'Digest abc']) {
      const res = await token(ctx, { grant_type: 'client_credentials' }, { authorization })
      t.equal(res.statusCode, 400, authorization)
      t.ok(oauthError(res, 'invalid_request').ok)
    }
  })

  t.test('Basic credentials are form-urlencoded before base64 (RFC 6749 Appendix B)', async (t) => {
    const raw = `Basic ${Buffer.from(`${c.clientId.replace(/-/g, '%2D')}:${c.clientSecret}`).toString('base64')}`
    const res = await token(ctx, { grant_type: 'client_credentials' }, { authorization: raw })
    t.equal(res.statusCode, 201)
  })

  t.test('client_credentials succeeds; its token has no user', async (t) => {
    const res = await token(ctx, { grant_type: 'client_credentials' }, { authorization: basic(c.clientId, c.clientSecret) })
    t.equal(res.statusCode, 201)
    const body = res.json()
    t.equal(body.scope, 'api')
    t.type(body.refresh_token, 'string')
    const me = await ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: `Bearer ${body.access_token}` } })
    t.equal(me.statusCode, 403)
  })

  t.test('a client not allowed client_credentials is unauthorized_client', async (t) => {
    const pw = await client(ctx, ['password'])
    const res = await token(ctx, { grant_type: 'client_credentials' }, { authorization: basic(pw.clientId, pw.clientSecret) })
    t.equal(res.statusCode, 400)
    t.ok(oauthError(res, 'unauthorized_client').ok)
  })
})

t.test('malformed requests', async (t) => {
  const ctx = await testApp(t)
  t.test('an unknown grant_type is unsupported_grant_type', async (t) => {
    const res = await token(ctx, { grant_type: 'foobar' })
    t.equal(res.statusCode, 400)
    t.ok(oauthError(res, 'unsupported_grant_type').ok)
  })
  t.test('a missing grant_type is invalid_request', async (t) => {
    const res = await token(ctx, { username: 'x' })
    t.equal(res.statusCode, 400)
    t.ok(oauthError(res, 'invalid_request').ok)
  })
  t.test('a repeated parameter is invalid_request', async (t) => {
    const res = await ctx.app.inject({
      method: 'POST',
      url: TOKEN,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=password&username=a@example.org&username=b@example.org&password=x'
    })
    t.equal(res.statusCode, 400)
    t.ok(oauthError(res, 'invalid_request').ok)
    t.match(res.json().message, /username/)
  })
  t.test('malformed JSON is invalid_request', async (t) => {
    const res = await ctx.app.inject({ method: 'POST', url: TOKEN, headers: { 'content-type': 'application/json' }, payload: '{"grant_type":' })
    t.equal(res.statusCode, 400)
    t.ok(oauthError(res, 'invalid_request').ok)
  })
})

t.test('refresh_token grant', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx)
  const login = async () =>
    (await token(ctx, { grant_type: 'password', username: user.email, password: user.password })).json()

  t.test('exchanges the refresh token for a new pair; the old one works once', async (t) => {
    const first = await login()
    const res = await token(ctx, { grant_type: 'refresh_token', refresh_token: first.refresh_token })
    t.equal(res.statusCode, 201)
    const second = res.json()
    t.not(second.access_token, first.access_token)
    t.not(second.refresh_token, first.refresh_token)
    const me = await ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: `Bearer ${second.access_token}` } })
    t.equal(me.statusCode, 200)
  })

  t.test('presenting a used refresh token revokes the whole family', async (t) => {
    const first = await login()
    const second = (await token(ctx, { grant_type: 'refresh_token', refresh_token: first.refresh_token })).json()
    const reuse = await token(ctx, { grant_type: 'refresh_token', refresh_token: first.refresh_token })
    t.equal(reuse.statusCode, 400)
    t.ok(oauthError(reuse, 'invalid_grant').ok)
    for (const access of [first.access_token, second.access_token]) {
      const me = await ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: `Bearer ${access}` } })
      t.equal(me.statusCode, 401, 'every access token of the login is revoked')
    }
    const descendant = await token(ctx, { grant_type: 'refresh_token', refresh_token: second.refresh_token })
    t.equal(descendant.statusCode, 400, 'the descendant refresh token is revoked too')
  })

  t.test('two concurrent refreshes with one token: one wins at most, and the family is revoked', async (t) => {
    const first = await login()
    const results = await Promise.all([
      token(ctx, { grant_type: 'refresh_token', refresh_token: first.refresh_token }),
      token(ctx, { grant_type: 'refresh_token', refresh_token: first.refresh_token })
    ])
    const codes = results.map((r) => r.statusCode).sort()
    t.same(codes, [201, 400])
    const winner = results.find((r) => r.statusCode === 201)!.json()
    const me = await ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: `Bearer ${winner.access_token}` } })
    t.equal(me.statusCode, 401)
  })

  t.test('a refresh may narrow the scope, never widen it', async (t) => {
    const c = await createClient(ctx.app.db, { name: 'wide', grants: ['password', 'refresh_token'], scopes: ['api', 'profile'] }, ctx.clock)
    const auth = { authorization: basic(c.clientId, c.clientSecret) }
    const tokens = (await token(ctx, { grant_type: 'password', username: user.email, password: user.password }, auth)).json()
    t.equal(tokens.scope, 'api profile')
    const narrowed = await token(ctx, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, scope: 'api' }, auth)
    t.equal(narrowed.json().scope, 'api')
    const widened = await token(ctx, { grant_type: 'refresh_token', refresh_token: narrowed.json().refresh_token, scope: 'api profile' }, auth)
    t.equal(widened.statusCode, 400)
    t.ok(oauthError(widened, 'invalid_scope').ok)
  })

  t.test("another client's refresh token is invalid_grant", async (t) => {
    const c = await createClient(ctx.app.db, { name: 'a', grants: ['password', 'refresh_token'] }, ctx.clock)
    const tokens = (await token(ctx, { grant_type: 'password', username: user.email, password: user.password }, { authorization: basic(c.clientId, c.clientSecret) })).json()
    const res = await token(ctx, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token })
    t.equal(res.statusCode, 400)
    t.ok(oauthError(res, 'invalid_grant').ok)
  })

  t.test('an unknown, missing or expired refresh token is refused', async (t) => {
    const unknown = await token(ctx, { grant_type: 'refresh_token', refresh_token: 'nope' })
    t.ok(oauthError(unknown, 'invalid_grant').ok)
    const missing = await token(ctx, { grant_type: 'refresh_token' })
    t.ok(oauthError(missing, 'invalid_request').ok)
    const fresh = await login()
    ctx.clock.advance((ctx.config.REFRESH_TOKEN_TTL_SECONDS + 1) * 1000)
    const expired = await token(ctx, { grant_type: 'refresh_token', refresh_token: fresh.refresh_token })
    t.ok(oauthError(expired, 'invalid_grant').ok)
    t.match(expired.json().message, /expired/)
  })
})

t.test('an expired access token gets 401', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx)
  ctx.clock.advance(ctx.config.ACCESS_TOKEN_TTL_SECONDS * 1000 + 1)
  const res = await ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: user.authorization } })
  t.equal(res.statusCode, 401)
  t.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"')
  t.match(errorOf(res).message, /expired/)
})

t.test('the token endpoint is rate limited per client IP', async (t) => {
  const ctx = await testApp(t, { TOKEN_RATE_LIMIT_MAX: '2' })
  const guess = (remoteAddress: string) =>
    ctx.app.inject({ method: 'POST', url: TOKEN, remoteAddress, payload: { grant_type: 'password', username: 'a@example.org', password: 'guess guess' } })
  t.equal((await guess('10.1.1.1')).statusCode, 400)
  t.equal((await guess('10.1.1.1')).statusCode, 400)
  const limited = await guess('10.1.1.1')
  t.equal(limited.statusCode, 429)
  t.ok(Number(limited.headers['retry-after']) > 0)
  t.match(errorOf(limited).message, /Too many token requests/)
  t.equal((await guess('10.1.1.2')).statusCode, 400, 'another client IP still gets an answer')
})

t.test('revocation (sign-out) ends the login: its access and refresh tokens stop working', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx, 'staff')
  const login = (await token(ctx, { grant_type: 'password', username: user.email, password: user.password })).json()
  const other = (await token(ctx, { grant_type: 'password', username: user.email, password: user.password })).json()
  const me = (accessToken: string) => ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: `Bearer ${accessToken}` } })
  t.equal((await me(login.access_token)).statusCode, 200, 'the token works before')

  const res = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/revoke',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: form({ token: login.refresh_token, token_type_hint: 'refresh_token' })
  })
  t.equal(res.statusCode, 200)
  t.same(res.json(), {})
  t.equal(res.headers['cache-control'], 'no-store')
  const after = await me(login.access_token)
  t.equal(after.statusCode, 401)
  t.match(errorOf(after).message, /revoked/)
  const refreshed = await token(ctx, { grant_type: 'refresh_token', refresh_token: login.refresh_token })
  t.ok(oauthError(refreshed, 'invalid_grant').ok, 'the refresh token is refused too')
  t.equal((await me(other.access_token)).statusCode, 200, "another login of the same user goes on")

  const unknown = await ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/revoke', payload: { token: 'never issued' } })
  t.equal(unknown.statusCode, 200, 'an unknown token answers the same: nothing is learnt')
  const missing = await ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/revoke', payload: {} })
  t.equal(missing.statusCode, 400)
  t.match(errorOf(missing).message, /token/)
})

t.test("a client's token is revoked only with that client's authentication (RFC 7009 section 2.1)", async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx)
  const partner = await client(ctx, ['password', 'refresh_token'])
  const other = await client(ctx, ['password', 'refresh_token'])
  const login = (await token(ctx, { grant_type: 'password', username: user.email, password: user.password }, { authorization: basic(partner.clientId, partner.clientSecret) })).json()
  const revoke = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
    ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/revoke', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, payload: form(fields) })
  const works = async () => (await ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: `Bearer ${login.access_token}` } })).statusCode

  const stranger = await revoke({ token: login.access_token }, { authorization: basic(other.clientId, other.clientSecret) })
  t.equal(stranger.statusCode, 400)
  t.ok(oauthError(stranger, 'unauthorized_client').ok, "another client's credentials are refused")
  t.equal(await works(), 200, 'and the token is not revoked')
  const inBody = await revoke({ token: login.refresh_token, client_id: other.clientId, client_secret: other.clientSecret })
  t.ok(oauthError(inBody, 'unauthorized_client').ok, 'in the body too')

  const anonymous = await revoke({ token: login.access_token })
  t.equal(anonymous.statusCode, 401)
  t.ok(oauthError(anonymous, 'invalid_client').ok, 'holding the token is not enough')
  t.match(anonymous.headers['www-authenticate'], /^Basic/)
  const wrongSecret = await revoke({ token: login.access_token }, { authorization: basic(partner.clientId, 'not the secret') })
  t.ok(oauthError(wrongSecret, 'invalid_client').ok)
  t.equal(await works(), 200)

  const own = await revoke({ token: login.access_token }, { authorization: basic(partner.clientId, partner.clientSecret) })
  t.equal(own.statusCode, 200)
  t.equal(await works(), 401, "the client's own authentication revokes it")
  const missing = await revoke({}, { authorization: basic(partner.clientId, partner.clientSecret) })
  t.ok(oauthError(missing, 'invalid_request').ok, 'a request without a token is invalid_request')
  t.match(errorOf(missing).message, /token/)
})
