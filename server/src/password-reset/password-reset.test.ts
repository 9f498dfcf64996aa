import t from 'tap'
import { fakeSmtp } from '../test-support/fake-smtp.js'
import { errorOf, testApp, userWithApiKey, userWithToken, type TestApp } from '../test-support/app.js'

const requestReset = (ctx: TestApp, email: string, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method: 'PATCH', url: '/apis/v2/oauth2/users/credentials', headers, payload: { email } })

const reset = (ctx: TestApp, token: string, password: string) =>
  ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/users/credentials/reset', payload: { token, password } })

const outbox = (ctx: TestApp) => ctx.app.db.selectFrom('mail_outbox').selectAll().orderBy('created_at').execute()

/** Log lines as objects. */
const logLines = (ctx: TestApp) =>
  ctx
    .logs()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, any>)

/** The reset links the development mailer printed, newest last. */
function mailedTokens(ctx: TestApp): string[] {
  return logLines(ctx)
    .filter((l) => l.msg === 'mail (development log mailer)')
    .flatMap((l) => [...String(l.mail.body).matchAll(/\?token=([A-Za-z0-9_-]+)/g)].map((m) => m[1]!))
}

t.test('known and unknown addresses get the same answer; only the real user gets a mail', async (t) => {
  const ctx = await testApp(t, { PUBLIC_BASE_URL: 'https://club.example.org/app' })
  const user = await userWithToken(ctx)
  const known = await requestReset(ctx, user.email.toUpperCase(), { host: 'evil.example.com' })
  const unknown = await requestReset(ctx, 'nobody@example.org', { host: 'evil.example.com' })
  t.equal(known.statusCode, 200)
  t.equal(unknown.statusCode, known.statusCode)
  t.equal(known.body, '{}')
  t.equal(unknown.body, known.body)
  t.same(Object.keys(unknown.headers).sort(), Object.keys(known.headers).sort(), 'the same headers too')

  await ctx.app.background.idle()
  const mails = await outbox(ctx)
  t.equal(mails.length, 1)
  t.match(mails[0], { kind: 'password_reset', recipient: user.email, status: 'sent', subject: 'Reset your club password' })
  const mailLine = logLines(ctx).find((l) => l.msg === 'mail (development log mailer)')!
  t.equal(mailLine.mail.to, user.email)
  t.match(mailLine.mail.body, /https:\/\/club\.example\.org\/app\/password-reset\?token=[A-Za-z0-9_-]{43}/, 'the link is built from PUBLIC_BASE_URL')
  t.notMatch(mailLine.mail.body, /evil/, 'never from the Host header')
  t.equal(mailedTokens(ctx).length, 1)
  const rows = await ctx.app.db.selectFrom('password_reset_tokens').selectAll().execute()
  t.equal(rows.length, 1)
  t.notOk(JSON.stringify(rows).includes(mailedTokens(ctx)[0]!), 'the token is stored only as a hash')
})

t.test('the mailed link opens the reset page, its script and style from this server', async (t) => {
  const ctx = await testApp(t, { PUBLIC_BASE_URL: 'https://club.example.org' })
  const user = await userWithToken(ctx)
  await requestReset(ctx, user.email)
  await ctx.app.background.idle()
  const link = logLines(ctx).find((l) => l.msg === 'mail (development log mailer)')!.mail.body.match(/https:\S+/)[0] as string
  const { pathname, search } = new URL(link)
  const page = await ctx.app.inject({ url: `${pathname}${search}` })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  t.equal(page.headers['referrer-policy'], 'no-referrer', 'the token in the address goes to no other site')
  t.match(page.headers['content-security-policy'], /default-src 'none'/)
  const script = /src="([^"]+\/password-reset\/main\.js)"/.exec(page.body)?.[1]
  const style = /href="([^"]+\/pages\.css)"/.exec(page.body)?.[1]
  t.equal((await ctx.app.inject({ url: script! })).statusCode, 200, 'the script')
  t.equal((await ctx.app.inject({ url: style! })).statusCode, 200, 'the style')
  t.notOk(ctx.logs().split('\n').some((line) => line.includes('/password-reset?token=') && !line.includes('development log mailer')), 'the request log redacts the token')
})

t.test('the development mailer warns at start; the token appears in no other log line', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx)
  t.ok(logLines(ctx).some((l) => l.level === 40 && /for development only/.test(l.msg)))
  await requestReset(ctx, user.email)
  await ctx.app.background.idle()
  const [token] = mailedTokens(ctx)
  t.equal((await reset(ctx, token!, 'a brand new password')).statusCode, 200)
  const carrying = logLines(ctx).filter((l) => JSON.stringify(l).includes(token!))
  t.equal(carrying.length, 1)
  t.equal(carrying[0]!.msg, 'mail (development log mailer)')
})

t.test('a reset sets the password, revokes every token, tells the user, and works once', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx)
  await requestReset(ctx, user.email)
  await ctx.app.background.idle()
  const [token] = mailedTokens(ctx)

  const weak = await reset(ctx, token!, 'short')
  t.equal(weak.statusCode, 400)
  t.match(errorOf(weak).message, /password must be at least 8 characters/)

  const done = await reset(ctx, token!, 'a brand new password')
  t.equal(done.statusCode, 200)
  t.same(done.json(), {})
  const me = await ctx.app.inject({ method: 'GET', url: '/apis/v2/users/current', headers: { authorization: user.authorization } })
  t.equal(me.statusCode, 401, 'the old sessions are signed out')
  const login = (password: string) =>
    ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/token', payload: { grant_type: 'password', username: user.email, password } })
  t.equal((await login('a brand new password')).statusCode, 201)
  t.equal((await login(user.password)).statusCode, 400, 'the old password no longer works')

  const again = await reset(ctx, token!, 'yet another password')
  t.equal(again.statusCode, 400)
  t.match(errorOf(again).message, /already used/)

  await ctx.app.background.idle()
  t.same((await outbox(ctx)).map((m) => m.kind), ['password_reset', 'password_changed'])
})

t.test('a reset revokes the API keys made with the old password, and the mails say so', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithApiKey(ctx)
  const withKey = () => ctx.app.inject({ method: 'GET', url: '/apis/v2/users/current', headers: { 'x-api-key': user.apiKey } })
  t.equal((await withKey()).statusCode, 200, 'the key works before')
  await requestReset(ctx, user.email)
  await ctx.app.background.idle()
  t.equal((await reset(ctx, mailedTokens(ctx)[0]!, 'a brand new password')).statusCode, 200)
  const after = await withKey()
  t.equal(after.statusCode, 401)
  t.match(errorOf(after).message, /API key was revoked/)
  await ctx.app.background.idle()
  const bodies = logLines(ctx).filter((l) => l.msg === 'mail (development log mailer)').map((l) => String(l.mail.body))
  t.match(bodies[0], /revokes the API keys of your account/, 'the reset mail warns before')
  t.match(bodies[1], /every API key of the account\nwas revoked/, 'the notice says it happened')
})

t.test('unknown, expired and replaced tokens are refused', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx)
  t.match(errorOf(await reset(ctx, 'x'.repeat(43), 'a brand new password')).message, /not a valid password reset token/)

  await requestReset(ctx, user.email)
  await ctx.app.background.idle()
  ctx.clock.advance(60 * 60 * 1000)
  const expired = await reset(ctx, mailedTokens(ctx)[0]!, 'a brand new password')
  t.equal(expired.statusCode, 400)
  t.match(errorOf(expired).message, /expired/)

  await requestReset(ctx, user.email)
  await ctx.app.background.idle()
  await requestReset(ctx, user.email)
  await ctx.app.background.idle()
  const [, first, second] = mailedTokens(ctx)
  t.match(errorOf(await reset(ctx, first!, 'a brand new password')).message, /not a valid/, 'a new request replaces the earlier token')
  t.equal((await reset(ctx, second!, 'a brand new password')).statusCode, 200)
})

t.test('bad input is a 400 naming the field', async (t) => {
  const ctx = await testApp(t)
  const res = await requestReset(ctx, 'not an address')
  t.equal(res.statusCode, 400)
  t.match(errorOf(res).message, /body.email/)
})

t.test('requests are limited per address and per client IP', async (t) => {
  const ctx = await testApp(t, { PASSWORD_RESET_RATE_LIMIT_MAX: '7' })
  for (let i = 0; i < 5; i++) t.equal((await requestReset(ctx, 'Someone@example.org')).statusCode, 200)
  const perAddress = await requestReset(ctx, 'someone@example.org')
  t.equal(perAddress.statusCode, 429)
  t.match(errorOf(perAddress).message, /password reset requests for this address/)
  t.ok(Number(perAddress.headers['retry-after']) > 0)
  t.equal((await requestReset(ctx, 'other@example.org')).statusCode, 200, 'another address is not affected')
  const perIp = await requestReset(ctx, 'third@example.org')
  t.equal(perIp.statusCode, 429)
  t.match(errorOf(perIp).message, /Too many password reset requests: at most 7 per 1 hour/)
  const fromElsewhere = await ctx.app.inject({
    method: 'PATCH',
    url: '/apis/v2/oauth2/users/credentials',
    remoteAddress: '192.0.2.9',
    payload: { email: 'fourth@example.org' }
  })
  t.equal(fromElsewhere.statusCode, 200, 'another client is not affected')
})


t.test('with SMTP_URL the mail goes through the SMTP relay', async (t) => {
  const smtp = await fakeSmtp(t)
  const ctx = await testApp(t, { SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, MAIL_FROM: 'Club <club@example.org>', PUBLIC_BASE_URL: 'https://club.example.org' })
  const user = await userWithToken(ctx)
  await requestReset(ctx, user.email)
  await ctx.app.background.idle()
  t.equal(smtp.messages.length, 1)
  const message = smtp.messages[0]!
  t.match(message, /From: Club <club@example\.org>/)
  t.match(message, new RegExp(`To: ${user.email}`))
  t.match(message, /Subject: Reset your club password/)
  const token = /password-reset\?token=([A-Za-z0-9_-]{43})/.exec(message.replace(/=\n/g, '').replace(/=3D/g, '='))?.[1]
  t.ok(token, 'the message carries the link')
  t.match((await outbox(ctx))[0], { status: 'sent', recipient: user.email })
  t.notOk(ctx.logs().includes(token!), 'with a real relay the link is never logged')
  t.notOk(/SMTP_URL is not set/.test(ctx.logs()), 'no development warning with a real mailer')
  t.equal((await reset(ctx, token!, 'a brand new password')).statusCode, 200)
})

t.test('a relay that refuses the mail leaves a failed outbox record and a log line without the link', async (t) => {
  const smtp = await fakeSmtp(t, true)
  const ctx = await testApp(t, { SMTP_URL: `smtp://127.0.0.1:${smtp.port}` })
  const user = await userWithToken(ctx)
  const res = await requestReset(ctx, user.email)
  t.equal(res.statusCode, 200, 'the answer does not depend on the mail')
  await ctx.app.background.idle()
  const [mail] = await outbox(ctx)
  t.equal(mail!.status, 'failed')
  t.match(mail!.error, /550/)
  const failure = logLines(ctx).find((l) => l.msg === 'background task failed')
  t.ok(failure)
  t.equal(failure!.task, 'password reset')
  t.notMatch(ctx.logs(), /token=/)
})
