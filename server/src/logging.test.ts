import t from 'tap'
import { createClient } from './oauth2/clients.js'
import { testApp, userWithApiKey } from './test-support/app.js'
import { redactUrl } from './logging.js'

t.test('passwords, tokens, keys and client secrets never reach the log', async (t) => {
  const ctx = await testApp(t, { LOG_LEVEL: 'trace' })
  const user = await userWithApiKey(ctx)
  const client = await createClient(ctx.app.db, { name: 'c', grants: ['password', 'refresh_token', 'client_credentials'] }, ctx.clock)
  const basic = `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`

  const login = await ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/token?utm_location=app',
    headers: { authorization: basic },
    payload: { grant_type: 'password', username: user.email, password: user.password }
  })
  const tokens = login.json()
  await ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/token', payload: { grant_type: 'password', username: user.email, password: 'wrong password here' } })
  await ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/token', payload: { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.clientId, client_secret: client.clientSecret } })
  await ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: `Bearer ${tokens.access_token}` } })
  await ctx.app.inject({ url: '/apis/v2/users/current', headers: { 'x-api-key': user.apiKey } })
  await ctx.app.inject({ url: `/apis/v2/users/current?access_token=${tokens.access_token}` })
  await ctx.app.inject({ url: '/apis/v2/replay-servers/device/s3cr3t-server-id/status' })

  const logs = ctx.logs()
  t.ok(logs.split('\n').length > 10, 'the log is not empty')
  for (const secret of [user.password, 'wrong password here', tokens.access_token, tokens.refresh_token, user.apiKey, client.clientSecret, user.accessToken, 's3cr3t-server-id']) {
    t.notOk(logs.includes(secret), `the log does not contain ${secret.slice(0, 4)}…`)
  }
  t.match(logs, /\/apis\/v2\/users\/current/)
})

t.test('redactUrl', async (t) => {
  t.equal(redactUrl('/apis/v2/replay-servers/device/abc/status?version=1.0.0'), '/apis/v2/replay-servers/device/[redacted]/status?version=1.0.0')
  t.equal(redactUrl('/x?code=123&state=ok&refresh_token=r'), '/x?code=%5Bredacted%5D&state=ok&refresh_token=%5Bredacted%5D')
  t.equal(redactUrl('/plain'), '/plain')
})
