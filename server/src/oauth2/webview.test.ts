import t from 'tap'
import { errorOf, testApp, userWithToken, type TestApp } from '../test-support/app.js'

function webviewToken(ctx: TestApp, authorization: string | undefined, body: Record<string, unknown>) {
  return ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/webview-token',
    headers: authorization ? { authorization } : {},
    payload: body
  })
}

const me = (ctx: TestApp, accessToken: string) =>
  ctx.app.inject({ method: 'GET', url: '/apis/v2/users/current', headers: { authorization: `Bearer ${accessToken}` } })

t.test("the signed-in user gets a short-lived token pair for the web view", async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx)
  const res = await webviewToken(ctx, user.authorization, { username: user.email.toUpperCase(), grant_type: 'mobile_webview_auth' })
  t.equal(res.statusCode, 201)
  t.equal(res.headers['cache-control'], 'no-store')
  const body = res.json()
  t.match(body, { token_type: 'bearer', expires_in: 300, access_token: String, refresh_token: String, scope: 'replays profile' })
  t.not(body.access_token, user.accessToken)
  t.equal((await me(ctx, body.access_token)).json().id, user.id)

  ctx.clock.advance(301_000)
  t.equal((await me(ctx, body.access_token)).statusCode, 401, 'the web view token expires after 5 minutes')
  t.equal((await me(ctx, user.accessToken)).statusCode, 200, "the app's own token lives on")
  t.notOk(ctx.logs().includes(body.access_token) || ctx.logs().includes(body.refresh_token), 'no token is logged')
})

t.test('the lifetime is configurable', async (t) => {
  const ctx = await testApp(t, { WEBVIEW_TOKEN_TTL_SECONDS: '60' })
  const user = await userWithToken(ctx)
  const res = await webviewToken(ctx, user.authorization, { username: user.email, grant_type: 'mobile_webview_auth' })
  t.equal(res.json().expires_in, 60)
})

t.test("the web view token belongs to the app's login: a reused refresh token revokes both", async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx)
  const webview = (await webviewToken(ctx, user.authorization, { username: user.email, grant_type: 'mobile_webview_auth' })).json()
  const refresh = (token: string) =>
    ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/token', payload: { grant_type: 'refresh_token', refresh_token: token } })
  t.equal((await refresh(webview.refresh_token)).statusCode, 201)
  t.equal((await refresh(webview.refresh_token)).json().error, 'invalid_grant')
  t.equal((await me(ctx, user.accessToken)).statusCode, 401, "the app's token of the same login is revoked too")
})

t.test('refusals: another username, wrong grant_type, no Bearer', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx)
  const other = await userWithToken(ctx)
  const wrongUser = await webviewToken(ctx, user.authorization, { username: other.email, grant_type: 'mobile_webview_auth' })
  t.equal(wrongUser.statusCode, 403)
  t.match(errorOf(wrongUser).message, /username must be the signed-in user's own e-mail/)
  const wrongGrant = await webviewToken(ctx, user.authorization, { username: user.email, grant_type: 'password' })
  t.equal(wrongGrant.statusCode, 400)
  t.match(errorOf(wrongGrant).message, /grant_type must be mobile_webview_auth/)
  const missing = await webviewToken(ctx, user.authorization, { grant_type: 'mobile_webview_auth' })
  t.equal(missing.statusCode, 400)
  t.match(errorOf(missing).message, /body.username is required/)
  const anonymous = await webviewToken(ctx, undefined, { username: user.email, grant_type: 'mobile_webview_auth' })
  t.equal(anonymous.statusCode, 401)
})

t.test('refreshing a web view token keeps its short lifetimes', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx)
  const webview = (
    await ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/webview-token', headers: { authorization: user.authorization }, payload: { username: user.email, grant_type: 'mobile_webview_auth' } })
  ).json()
  const refreshed = await ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/token', payload: { grant_type: 'refresh_token', refresh_token: webview.refresh_token } })
  t.equal(refreshed.statusCode, 201)
  t.equal(refreshed.json().expires_in, 300)
  ctx.clock.advance(301 * 1000)
  const late = await ctx.app.inject({ method: 'POST', url: '/apis/v2/oauth2/token', payload: { grant_type: 'refresh_token', refresh_token: refreshed.json().refresh_token } })
  t.equal(late.statusCode, 400)
  t.match(late.json().message, /expired/)
})
