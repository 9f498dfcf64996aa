import { randomUUID } from 'node:crypto'
import t from 'tap'
// app.swagger() is declared by @fastify/swagger's types, which the app's compiled declarations do not import.
import type {} from '@fastify/swagger'
import { createApiKey } from './api-keys/service.js'
import { createLogger, redactUrl } from './logging.js'
import { createClient } from './oauth2/clients.js'
import { REGISTER, adminOf, approve, area, registeredBox, statusUrl } from './replay-servers/test-helpers.js'
import { testApp, userWithApiKey, userWithToken, type TestApp } from './test-support/app.js'
import { TWILIO, fakeTwilio } from './test-support/fake-sms-providers.js'
import { fakeSmtp } from './test-support/fake-smtp.js'

interface Line {
  level: number
  msg: string
  reqId?: string
  method?: string
  url?: string
  statusCode?: number
  responseTime?: number
}

const lines = (ctx: TestApp): Line[] =>
  ctx
    .logs()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line)
const requestLines = (ctx: TestApp) => lines(ctx).filter((l) => l.msg === 'request')

const DEBUG = 20
const INFO = 30

function noSecretIn(t: { notOk(value: unknown, message: string): void }, logs: string, secrets: Record<string, string>) {
  for (const [what, secret] of Object.entries(secrets)) t.notOk(logs.includes(secret), `the log does not contain the ${what}`)
}

t.test('one line per request, written at the answer, with its request id, method, redacted URL, status and time', async (t) => {
  const ctx = await testApp(t)
  const res = await ctx.app.inject({ url: '/apis/v2/users/current?access_token=abc&page=2' })
  t.equal(res.statusCode, 401)
  const mine = lines(ctx).filter((l) => l.reqId === res.headers['x-request-id'])
  t.equal(mine.length, 1, 'one line, not an incoming and a completed pair')
  t.match(mine[0], { level: INFO, msg: 'request', method: 'GET', url: '/apis/v2/users/current?access_token=%5Bredacted%5D&page=2', statusCode: 401 })
  t.type(mine[0]!.responseTime, 'number')
})

t.test('status polls and health checks are logged at debug, unless they fail or change something', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const box = await registeredBox(ctx, { version: '1.0.0' })
  t.equal((await approve(ctx, admin, box.id, { areaId: await area(ctx) })).statusCode, 200)
  const before = requestLines(ctx).length

  t.equal((await ctx.app.inject({ url: statusUrl(box.serverId, 'version=1.0.0') })).statusCode, 200)
  t.equal((await ctx.app.inject({ url: '/health/live' })).statusCode, 200)
  t.equal((await ctx.app.inject({ url: '/health/ready' })).statusCode, 200)
  t.equal((await ctx.app.inject({ url: '/metrics' })).statusCode, 200)
  t.equal(requestLines(ctx).length, before, 'nothing at info for a poll, a probe or a scrape that went well')

  const unknown = await ctx.app.inject({ url: statusUrl('not-a-box') })
  t.equal(unknown.statusCode, 404)
  const upgraded = await ctx.app.inject({ url: statusUrl(box.serverId, 'version=1.1.0') })
  t.equal(upgraded.statusCode, 200)
  const logged = requestLines(ctx).slice(before)
  t.same(
    logged.map((l) => [l.reqId, l.level, l.statusCode, l.url]),
    [
      [unknown.headers['x-request-id'], INFO, 404, '/apis/v2/replay-servers/device/[redacted]/status'],
      [upgraded.headers['x-request-id'], INFO, 200, '/apis/v2/replay-servers/device/[redacted]/status?version=1.1.0']
    ],
    'a failed poll and a poll that recorded a new version are at info'
  )

  const verbose = await testApp(t, { LOG_LEVEL: 'debug' })
  const live = await verbose.app.inject({ url: '/health/live' })
  t.match(lines(verbose).filter((l) => l.reqId === live.headers['x-request-id']), [{ level: DEBUG, msg: 'request', url: '/health/live', statusCode: 200 }])
})

t.test('the secrets of every flow never reach the log', async (t) => {
  const smtp = await fakeSmtp(t)
  const twilio = await fakeTwilio(t, { code: '918273' })
  const ctx = await testApp(t, {
    LOG_LEVEL: 'trace',
    SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
    PHONE_VERIFICATION_PROVIDER: 'twilio',
    TWILIO_ACCOUNT_SID: TWILIO.accountSid,
    TWILIO_AUTH_TOKEN: TWILIO.authToken,
    TWILIO_VERIFY_SERVICE_SID: TWILIO.serviceSid,
    TWILIO_VERIFY_BASE_URL: twilio.baseUrl
  })
  const user = await userWithApiKey(ctx)
  const client = await createClient(
    ctx.app.db,
    { name: 'c', redirectUris: ['https://app.example.org/cb'], grants: ['password', 'refresh_token', 'client_credentials', 'authorization_code'], scopes: ['api'] },
    ctx.clock
  )
  const basic = `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`
  const formType = { 'content-type': 'application/x-www-form-urlencoded' }
  const form = (fields: Record<string, string>) => ({ payload: new URLSearchParams(fields).toString() })

  // Passwords and tokens: the password, refresh and client credentials grants.
  const login = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/token?utm_location=app',
    headers: { authorization: basic },
    payload: { grant_type: 'password', username: user.email, password: user.password }
  })
  t.equal(login.statusCode, 201)
  const tokens = login.json()
  await ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/token', payload: { grant_type: 'password', username: user.email, password: 'wrong password here' } })
  const refreshed = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/token',
    payload: { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.clientId, client_secret: client.clientSecret }
  })
  t.equal(refreshed.statusCode, 201)
  const clientToken = await ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/token', headers: { authorization: basic, ...formType }, ...form({ grant_type: 'client_credentials' }) })
  t.equal(clientToken.statusCode, 201)

  // An authorization code and its PKCE verifier.
  const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
  const authorized = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/authorizations',
    headers: { authorization: user.authorization },
    payload: {
      type: 'OAUTH2_AUTHORIZATION_CODE',
      clientId: client.clientId,
      redirectUri: 'https://app.example.org/cb',
      codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      codeChallengeMethod: 'S256'
    }
  })
  t.equal(authorized.statusCode, 201)
  const code = authorized.json().code
  const exchanged = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/token',
    headers: { authorization: basic, ...formType },
    ...form({ grant_type: 'authorization_code', code, redirect_uri: 'https://app.example.org/cb', code_verifier: verifier })
  })
  t.equal(exchanged.statusCode, 201)

  // Credentials on the read routes: Bearer, API key, a token in the query, a cookie.
  await ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: `Bearer ${tokens.access_token}`, cookie: 'session=cookie-secret-value' } })
  await ctx.app.inject({ url: '/apis/v2/users/current', headers: { 'x-api-key': user.apiKey } })
  await ctx.app.inject({ url: `/apis/v2/users/current?access_token=${tokens.access_token}` })

  // A password reset: the link mailed, then the token it carries and the new password.
  const requested = await ctx.app.inject({ method: 'PATCH', url: '/apis/v2/oauth2/users/credentials', payload: { email: user.email } })
  t.equal(requested.statusCode, 200)
  await ctx.app.background.idle()
  const resetToken = /token=([A-Za-z0-9_-]{43})/.exec(smtp.messages.join('\n').replace(/=\n/g, '').replace(/=3D/g, '='))?.[1]
  t.ok(resetToken, 'the reset link was mailed')
  const reset = await ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/users/credentials/reset', payload: { token: resetToken, password: 'the new secret password' } })
  t.equal(reset.statusCode, 200)

  // A signup code sent by SMS and checked.
  const sent = await ctx.app.inject({ method: 'POST', url: '/apis/v2/signup/phone-verifications', payload: { phoneNumber: '+14155552671' } })
  t.equal(sent.statusCode, 201)
  const verified = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/signup/phone-verifications',
    payload: { sessionId: sent.json().sessionId, verificationCode: '918273' }
  })
  t.match(verified.json(), { status: 'approved' })

  // A recording box: its serverId (the status call's secret) and the device token it is given.
  const admin = await adminOf(ctx)
  const box = await registeredBox(ctx)
  await approve(ctx, admin, box.id, { areaId: await area(ctx) })
  const status = await ctx.app.inject({ url: statusUrl(box.serverId) })
  const deviceToken = status.json().accessToken
  t.ok(deviceToken, 'an approved box is given its token')

  const logs = ctx.logs()
  t.ok(requestLines(ctx).length >= 15, 'every request above is logged')
  noSecretIn(t, logs, {
    password: user.password,
    'wrong password': 'wrong password here',
    'new password': 'the new secret password',
    'access token': tokens.access_token,
    'refresh token': tokens.refresh_token,
    'refreshed access token': refreshed.json().access_token,
    'client token': clientToken.json().access_token,
    'API key': user.apiKey,
    'client secret': client.clientSecret,
    'Basic credentials': basic.slice(6),
    'authorization code': code,
    'PKCE verifier': verifier,
    'exchanged token': exchanged.json().access_token,
    'user access token': user.accessToken,
    cookie: 'cookie-secret-value',
    'reset token': resetToken!,
    'SMS code': '918273',
    serverId: box.serverId,
    'device token': deviceToken,
    'Twilio auth token': TWILIO.authToken
  })
  t.match(logs, /\/apis\/v2\/users\/current/)
})

/** Every documented path's parameters filled in: the box's secret serverId, any other a fresh id. */
const fill = (path: string, serverId: string) => path.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'serverId' ? serverId : randomUUID()))

t.test('every served route writes one line per request and none of the secrets sent to it', async (t) => {
  const ctx = await testApp(t, { LOG_LEVEL: 'trace' })
  const admin = await userWithToken(ctx, 'admin')
  const adminKey = (await createApiKey(ctx.app.db, admin.id, ctx.clock)).apiKey
  const box = await registeredBox(ctx)
  const secretBody: Record<string, string> = {}
  for (const field of ['password', 'newPassword', 'token', 'refresh_token', 'client_secret', 'code', 'verificationCode', 'code_verifier', 'apiKey', 'secret']) {
    secretBody[field] = `body-secret-${field}-${randomUUID()}`
  }
  const querySecret = `query-secret-${randomUUID()}`
  const cookieSecret = `cookie-secret-${randomUUID()}`
  const document = ctx.app.swagger() as { paths: Record<string, Record<string, unknown>> }
  const before = requestLines(ctx).length
  const ids: string[] = []
  const operations: string[] = []
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const method of Object.keys(methods).filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))) {
      operations.push(`${method.toUpperCase()} ${path}`)
      const url = `${fill(path, box.serverId)}?access_token=${querySecret}&code=${querySecret}&state=plain`
      const withBody = method === 'get' ? {} : { payload: secretBody }
      for (const headers of [{ authorization: admin.authorization }, { 'x-api-key': adminKey, cookie: `session=${cookieSecret}` }]) {
        const res = await ctx.app.inject({ method: method.toUpperCase() as 'GET', url, headers, ...withBody })
        t.not(res.statusCode, 500, `${method.toUpperCase()} ${path} does not fail`)
        ids.push(res.headers['x-request-id'] as string)
      }
    }
  }
  t.ok(operations.length >= 60, `every documented operation was called (${operations.length})`)
  const logged = requestLines(ctx).slice(before)
  t.same(
    logged.map((l) => l.reqId),
    ids,
    'one line per request, in order'
  )
  t.ok(
    logged.every((l) => l.url!.endsWith('?access_token=%5Bredacted%5D&code=%5Bredacted%5D&state=plain')),
    'secret query values blanked, others kept'
  )
  noSecretIn(t, ctx.logs(), {
    ...Object.fromEntries(Object.entries(secretBody).map(([field, value]) => [`${field} sent in a body`, value])),
    'token in a query': querySecret,
    cookie: cookieSecret,
    'access token': admin.accessToken,
    'API key': adminKey,
    serverId: box.serverId
  })
  t.notOk(ctx.logs().includes(REGISTER + '/' + box.serverId), 'no device path carries its serverId')
})

t.test('secrets logged in an object are redacted at the top level and, for the commonest names, one level down', async (t) => {
  let written = ''
  const log = createLogger('info', { write: (line: string) => void (written += line) })
  log.info({ password: 'p0', apiKey: 'k0', user: { password: 'p1', token: 't1', secret: 's1', code: 'c1', name: 'kept' } }, 'logged')
  const line = JSON.parse(written) as Record<string, unknown>
  t.same(line.user, { password: '[redacted]', token: '[redacted]', secret: '[redacted]', code: '[redacted]', name: 'kept' })
  t.equal(line.password, '[redacted]')
  t.equal(line.apiKey, '[redacted]')
})

t.test('redactUrl', async (t) => {
  t.equal(redactUrl('/apis/v2/replay-servers/device/abc/status?version=1.0.0'), '/apis/v2/replay-servers/device/[redacted]/status?version=1.0.0')
  t.equal(redactUrl('/apis/v2/replay-servers/device/abc?version=1.0.0'), '/apis/v2/replay-servers/device/[redacted]?version=1.0.0')
  t.equal(redactUrl('/x?code=123&state=ok&refresh_token=r'), '/x?code=%5Bredacted%5D&state=ok&refresh_token=%5Bredacted%5D')
  t.equal(redactUrl('/plain'), '/plain')
  // A query with no secret name in it is kept as sent; an encoded secret name is still found.
  t.equal(redactUrl('/x?category=A&category=B%20C'), '/x?category=A&category=B+C')
  t.equal(redactUrl('/x?category=A&page=2'), '/x?category=A&page=2')
  t.equal(redactUrl('/x?%74oken=abc&page=2'), '/x?token=%5Bredacted%5D&page=2')
  t.equal(redactUrl('/apis/v2/replay-servers/device/abc/status?version=1'), '/apis/v2/replay-servers/device/[redacted]/status?version=1')
})
