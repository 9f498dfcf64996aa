import t from 'tap'
import type { TestApp } from '../test-support/app.js'
import { errorOf, testApp, userWithToken } from '../test-support/app.js'
import { s256Challenge } from './authorization-code.js'
import { createClient } from './clients.js'

// RFC 7636 Appendix B.
const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'
const REDIRECT = 'https://app.example.org/callback?tenant=a%20b'

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`

async function setup(t: Parameters<typeof testApp>[0], env: Record<string, string> = {}) {
  const ctx = await testApp(t, env)
  const user = await userWithToken(ctx)
  const client = await createClient(
    ctx.app.db,
    { name: 'partner', redirectUris: [REDIRECT, 'https://app.example.org/other'], grants: ['authorization_code', 'refresh_token'], scopes: ['api', 'profile'] },
    ctx.clock
  )
  return { ctx, user, client, auth: basic(client.clientId, client.clientSecret) }
}

type Setup = Awaited<ReturnType<typeof setup>>

function authorizeRequest(s: Setup, body: Record<string, unknown> = {}) {
  return s.ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/authorizations',
    headers: { authorization: s.user.authorization },
    payload: { type: 'OAUTH2_AUTHORIZATION_CODE', clientId: s.client.clientId, redirectUri: REDIRECT, ...body }
  })
}

function exchange(ctx: TestApp, form: Record<string, string>, authorization?: string) {
  return ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(authorization ? { authorization } : {}) },
    payload: new URLSearchParams({ grant_type: 'authorization_code', ...form }).toString()
  })
}

async function codeFor(s: Setup, body: Record<string, unknown> = { codeChallenge: CHALLENGE, codeChallengeMethod: 'S256' }) {
  const res = await authorizeRequest(s, body)
  if (res.statusCode !== 201) throw new Error(res.body)
  return res.json().code as string
}

const currentUser = (ctx: TestApp, accessToken: string) =>
  ctx.app.inject({ method: 'GET', url: '/apis/v2/users/current', headers: { authorization: `Bearer ${accessToken}` } })

t.test('the PKCE test vector of RFC 7636', async (t) => {
  t.equal(s256Challenge(VERIFIER), CHALLENGE)
})

t.test('a signed-in user authorizes a client, which exchanges the code with PKCE for tokens', async (t) => {
  const s = await setup(t)
  const res = await authorizeRequest(s, { scope: 'api', state: 'xyz 1', codeChallenge: CHALLENGE, codeChallengeMethod: 'S256' })
  t.equal(res.statusCode, 201)
  t.equal(res.headers['cache-control'], 'no-store')
  const body = res.json()
  t.match(body, { type: 'OAUTH2_AUTHORIZATION_CODE', clientId: s.client.clientId, scope: 'api' })
  t.match(body.code, /^[A-Za-z0-9_-]{43}$/)
  // The redirect URI's own query is kept as registered; code and state are added.
  t.equal(body.callbackUrl, `${REDIRECT}&code=${body.code}&state=xyz+1`)
  t.notOk('redirectUri' in body, 'redirectUri is write-only')

  const token = await exchange(s.ctx, { code: body.code, redirect_uri: REDIRECT, code_verifier: VERIFIER }, s.auth)
  t.equal(token.statusCode, 201)
  t.equal(token.headers['cache-control'], 'no-store')
  t.match(token.json(), { token_type: 'bearer', scope: 'api', expires_in: 3600, access_token: String, refresh_token: String })
  const me = await currentUser(s.ctx, token.json().access_token)
  t.equal(me.statusCode, 200)
  t.equal(me.json().id, s.user.id, 'the tokens act for the user who authorized')

  const logs = s.ctx.logs()
  for (const secret of [body.code, token.json().access_token, token.json().refresh_token, s.client.clientSecret, VERIFIER]) {
    t.notOk(logs.includes(secret), 'no code, token, verifier or secret is logged')
  }
})

t.test('without a scope the code carries every scope the client may have; no state, no state parameter', async (t) => {
  const s = await setup(t)
  const res = await authorizeRequest(s, { redirectUri: 'https://app.example.org/other' })
  t.equal(res.statusCode, 201)
  t.equal(res.json().scope, 'api profile')
  t.equal(res.json().callbackUrl, `https://app.example.org/other?code=${res.json().code}`)
  const token = await exchange(s.ctx, { code: res.json().code, redirect_uri: 'https://app.example.org/other' }, s.auth)
  t.equal(token.statusCode, 201, 'no verifier is needed when no challenge was given')
  t.equal(token.json().scope, 'api profile')
})

t.test('authorization refusals', async (t) => {
  const s = await setup(t)
  const other = await createClient(s.ctx.app.db, { name: 'machine', grants: ['client_credentials'] }, s.ctx.clock)
  const cases: Array<[string, Record<string, unknown>, number, RegExp]> = [
    ['unknown client', { clientId: 'no-such-client' }, 400, /clientId no-such-client is not a registered client/],
    ['client without the grant', { clientId: other.clientId }, 400, /not allowed the authorization_code grant/],
    ['redirect URI with an extra query', { redirectUri: `${REDIRECT}&x=1` }, 400, /redirectUri is not one of the redirect URIs/],
    ['redirect URI prefix', { redirectUri: 'https://app.example.org/callback' }, 400, /redirectUri is not one/],
    ['redirect URI with a trailing slash', { redirectUri: 'https://app.example.org/other/' }, 400, /redirectUri is not one/],
    ['scope beyond the client', { scope: 'api admin' }, 400, /scope admin is not allowed/],
    ['challenge without method', { codeChallenge: CHALLENGE }, 400, /codeChallengeMethod must be S256/],
    ['plain method', { codeChallenge: CHALLENGE, codeChallengeMethod: 'plain' }, 400, /codeChallengeMethod/],
    ['method without challenge', { codeChallengeMethod: 'S256' }, 400, /without codeChallenge/],
    ['wrong type', { type: 'FORUM_CONNECT' }, 400, /body.type/]
  ]
  for (const [name, body, status, message] of cases) {
    const res = await authorizeRequest(s, body)
    t.equal(res.statusCode, status, name)
    t.match(errorOf(res).message, message, name)
  }
  const anonymous = await s.ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/authorizations',
    payload: { type: 'OAUTH2_AUTHORIZATION_CODE', clientId: s.client.clientId, redirectUri: REDIRECT }
  })
  t.equal(anonymous.statusCode, 401)
  t.equal(anonymous.headers['www-authenticate'], 'Bearer')
})

t.test('the code grant needs HTTP Basic client authentication', async (t) => {
  const s = await setup(t)
  const code = await codeFor(s)
  const none = await exchange(s.ctx, { code, redirect_uri: REDIRECT, code_verifier: VERIFIER })
  t.equal(none.statusCode, 401)
  t.equal(none.json().error, 'invalid_client')
  t.match(none.headers['www-authenticate'], /^Basic/)
  const inBody = await exchange(s.ctx, {
    code,
    redirect_uri: REDIRECT,
    code_verifier: VERIFIER,
    client_id: s.client.clientId,
    client_secret: s.client.clientSecret
  })
  t.equal(inBody.statusCode, 401)
  t.match(inBody.json().error_description, /requires HTTP Basic/)
  const wrongSecret = await exchange(s.ctx, { code, redirect_uri: REDIRECT, code_verifier: VERIFIER }, basic(s.client.clientId, 'wrong'))
  t.equal(wrongSecret.statusCode, 401)
  t.equal(wrongSecret.json().error, 'invalid_client')
  const ok = await exchange(s.ctx, { code, redirect_uri: REDIRECT, code_verifier: VERIFIER }, s.auth)
  t.equal(ok.statusCode, 201, 'the refused attempts did not use up the code')
})

t.test('invalid_grant: other client, redirect mismatch, missing, wrong or unasked verifier', async (t) => {
  const s = await setup(t)
  const other = await createClient(
    s.ctx.app.db,
    { name: 'other', redirectUris: [REDIRECT], grants: ['authorization_code'] },
    s.ctx.clock
  )
  const code = await codeFor(s)
  const cases: Array<[string, Record<string, string>, string, RegExp]> = [
    ['code of another client', { code, redirect_uri: REDIRECT, code_verifier: VERIFIER }, basic(other.clientId, other.clientSecret), /not valid for this client/],
    ['redirect_uri differs', { code, redirect_uri: 'https://app.example.org/other', code_verifier: VERIFIER }, s.auth, /redirect_uri differs/],
    ['redirect_uri with extra query', { code, redirect_uri: `${REDIRECT}&x=1`, code_verifier: VERIFIER }, s.auth, /redirect_uri differs/],
    ['no verifier', { code, redirect_uri: REDIRECT }, s.auth, /code_verifier is required/],
    ['wrong verifier', { code, redirect_uri: REDIRECT, code_verifier: 'x'.repeat(43) }, s.auth, /does not match/],
    ['unknown code', { code: 'nope', redirect_uri: REDIRECT }, s.auth, /not valid/]
  ]
  for (const [name, form, authorization, message] of cases) {
    const res = await exchange(s.ctx, form, authorization)
    t.equal(res.statusCode, 400, name)
    t.equal(res.json().error, 'invalid_grant', name)
    t.match(res.json().error_description, message, name)
  }
  const malformed = await exchange(s.ctx, { code, redirect_uri: REDIRECT, code_verifier: 'short' }, s.auth)
  t.equal(malformed.json().error, 'invalid_request')
  t.equal((await exchange(s.ctx, { redirect_uri: REDIRECT }, s.auth)).json().error_description, 'code is required')
  t.equal((await exchange(s.ctx, { code }, s.auth)).json().error_description, 'redirect_uri is required')

  const plain = await codeFor(s, {})
  const downgrade = await exchange(s.ctx, { code: plain, redirect_uri: REDIRECT, code_verifier: VERIFIER }, s.auth)
  t.equal(downgrade.json().error, 'invalid_grant', 'a verifier is accepted only when a challenge was given')
  t.match(downgrade.json().error_description, /without a code challenge/)
})

t.test('a client not allowed the grant is unauthorized_client', async (t) => {
  const s = await setup(t)
  const code = await codeFor(s)
  const machine = await createClient(s.ctx.app.db, { name: 'machine', grants: ['client_credentials'] }, s.ctx.clock)
  const res = await exchange(s.ctx, { code, redirect_uri: REDIRECT, code_verifier: VERIFIER }, basic(machine.clientId, machine.clientSecret))
  t.equal(res.statusCode, 400)
  t.equal(res.json().error, 'unauthorized_client')
})

t.test('a code presented twice is refused and revokes the tokens issued from it', async (t) => {
  const s = await setup(t)
  const code = await codeFor(s)
  const first = await exchange(s.ctx, { code, redirect_uri: REDIRECT, code_verifier: VERIFIER }, s.auth)
  t.equal(first.statusCode, 201)
  const { access_token: accessToken, refresh_token: refreshToken } = first.json()
  t.equal((await currentUser(s.ctx, accessToken)).statusCode, 200)

  const second = await exchange(s.ctx, { code, redirect_uri: REDIRECT, code_verifier: VERIFIER }, s.auth)
  t.equal(second.statusCode, 400)
  t.equal(second.json().error, 'invalid_grant')
  t.match(second.json().error_description, /already used/)

  const revoked = await currentUser(s.ctx, accessToken)
  t.equal(revoked.statusCode, 401)
  t.match(revoked.headers['www-authenticate'], /invalid_token/)
  const refresh = await exchange(s.ctx, { grant_type: 'refresh_token', refresh_token: refreshToken }, s.auth)
  t.equal(refresh.json().error, 'invalid_grant', 'the refresh token of that login is revoked too')
  t.equal((await currentUser(s.ctx, s.user.accessToken)).statusCode, 200, "the user's other logins are untouched")
})

t.test('two exchanges of one code at once: one gets tokens, the other is refused and revokes them', async (t) => {
  const s = await setup(t)
  const code = await codeFor(s)
  const answers = await Promise.all([1, 2].map(() => exchange(s.ctx, { code, redirect_uri: REDIRECT, code_verifier: VERIFIER }, s.auth)))
  t.same(answers.map((a) => a.statusCode).sort(), [201, 400])
  const issued = answers.find((a) => a.statusCode === 201)!.json()
  t.equal(answers.find((a) => a.statusCode === 400)!.json().error, 'invalid_grant')
  t.equal((await currentUser(s.ctx, issued.access_token)).statusCode, 401)
})

t.test('codes expire after 10 minutes, or sooner when configured', async (t) => {
  const s = await setup(t)
  const code = await codeFor(s)
  s.ctx.clock.advance(600_000)
  const late = await exchange(s.ctx, { code, redirect_uri: REDIRECT, code_verifier: VERIFIER }, s.auth)
  t.equal(late.json().error, 'invalid_grant')
  t.match(late.json().error_description, /expired/)

  const short = await setup(t, { AUTHORIZATION_CODE_TTL_SECONDS: '60' })
  const shortCode = await codeFor(short)
  short.ctx.clock.advance(59_000)
  t.equal((await exchange(short.ctx, { code: shortCode, redirect_uri: REDIRECT, code_verifier: VERIFIER }, short.auth)).statusCode, 201)
  const another = await codeFor(short)
  short.ctx.clock.advance(61_000)
  t.match((await exchange(short.ctx, { code: another, redirect_uri: REDIRECT, code_verifier: VERIFIER }, short.auth)).json(), {
    error: 'invalid_grant',
    error_description: /expired/
  })
})

t.test('codes are stored only as hashes', async (t) => {
  const s = await setup(t)
  const code = await codeFor(s)
  const rows = await s.ctx.app.db.selectFrom('authorization_codes').selectAll().execute()
  t.equal(rows.length, 1)
  t.notOk(JSON.stringify(rows).includes(code))
  t.match(rows[0], { client_id: s.client.clientId, user_id: s.user.id, redirect_uri: REDIRECT, scope: 'api profile', code_challenge: CHALLENGE })
})

t.test('the identity routes are in the OpenAPI document', async (t) => {
  const { ctx } = await setup(t)
  const doc = (await ctx.app.inject({ method: 'GET', url: '/documentation/json' })).json()
  for (const [path, method] of [
    ['/apis/v2/oauth2/authorizations', 'post'],
    ['/apis/v2/oauth2/webview-token', 'post'],
    ['/apis/v2/oauth2/forum-connect/authorizations', 'post'],
    ['/apis/v2/oauth2/users/credentials', 'patch'],
    ['/apis/v2/oauth2/users/credentials/reset', 'post'],
    ['/apis/v2/signup/phone-verifications', 'post']
  ] as const) {
    t.ok(doc.paths[path]?.[method], `${method} ${path}`)
  }
})
