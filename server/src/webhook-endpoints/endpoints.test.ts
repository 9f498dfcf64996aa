// Webhook endpoints through the admin routes and the CLI: who may manage them, what is checked of a
// URL and of the event types (400 naming the field), that the secret is shown once and never stored,
// and its rotation.
import t from 'tap'
import { runCli } from '../cli.js'
import { errorOf, testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { secretText } from './secrets.js'

const PATH = '/apis/v2/admin/webhook-endpoints'
const GOOD = { url: 'https://93.184.215.14/hooks', eventTypes: ['membership_subscription.renewed', 'package.issued'] }

async function setup(t: Parameters<typeof testApp>[0], env: Record<string, string> = {}) {
  const ctx = await testApp(t, env)
  const admin = await userWithToken(ctx, 'admin')
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, who: { authorization: string } | undefined, payload?: object) =>
    ctx.app.inject({ method, url, headers: who ? { authorization: who.authorization } : {}, ...(payload ? { payload } : {}) })
  return { ctx, admin, call }
}

t.test('members and staff get 403 on every endpoint route; no token is 401', async (t) => {
  const { ctx, admin, call } = await setup(t)
  const made = (await call('POST', PATH, admin, GOOD)).json()
  const routes: Array<['GET' | 'POST' | 'PATCH' | 'DELETE', string, object?]> = [
    ['GET', PATH],
    ['POST', PATH, GOOD],
    ['GET', `${PATH}/${made.id}`],
    ['PATCH', `${PATH}/${made.id}`, { enabled: false }],
    ['DELETE', `${PATH}/${made.id}`],
    ['POST', `${PATH}/${made.id}/secret`],
    ['GET', `${PATH}/${made.id}/deliveries`],
    ['POST', `${PATH}/${made.id}/deliveries/x/retry`]
  ]
  for (const role of ['member', 'staff'] as const) {
    const user = await userWithToken(ctx, role)
    for (const [method, url, body] of routes) {
      const res = await call(method, url, user, body)
      t.equal(res.statusCode, 403, `${role} ${method} ${url}`)
      errorOf(res)
    }
  }
  for (const [method, url, body] of routes) t.equal((await call(method, url, undefined, body)).statusCode, 401, `anonymous ${method} ${url}`)
  t.equal((await call('GET', `${PATH}/${made.id}`, admin)).json().enabled, true, 'nothing the others sent changed it')
})

t.test('bad input is a 400 naming the field: not http(s), private and loopback addresses (also by name), unknown event types', async (t) => {
  const { call, admin } = await setup(t)
  const cases: Array<[object, RegExp]> = [
    [{ ...GOOD, url: 'ftp://93.184.215.14/hooks' }, /^body\.url must be an http:\/\/ or https:\/\/ URL, not ftp:/],
    [{ ...GOOD, url: 'file:///etc/passwd' }, /^body\.url must be an http/],
    [{ ...GOOD, url: 'not a url' }, /^body\.url .* is not a URL/],
    [{ ...GOOD, url: 'https://user:pw@93.184.215.14/' }, /^body\.url must not carry a user name or password/],
    [{ ...GOOD, url: 'http://10.1.2.3/hooks' }, /^body\.url host 10\.1\.2\.3 is at 10\.1\.2\.3: private/],
    [{ ...GOOD, url: 'http://192.168.1.20/' }, /^body\.url .*private, loopback and link-local/],
    [{ ...GOOD, url: 'http://127.0.0.1:8080/' }, /^body\.url .*WEBHOOK_ALLOWED_NETWORKS/],
    [{ ...GOOD, url: 'http://169.254.169.254/latest/meta-data' }, /^body\.url host 169\.254\.169\.254/],
    [{ ...GOOD, url: 'http://[::1]/' }, /^body\.url host ::1 is at ::1/],
    [{ ...GOOD, url: 'http://[fe80::1]/' }, /^body\.url host fe80::1/],
    [{ ...GOOD, url: 'http://[fd00::5]/' }, /^body\.url host fd00::5/],
    [{ ...GOOD, url: 'http://[::ffff:127.0.0.1]/' }, /^body\.url host ::ffff:7f00:1 is at/],
    [{ ...GOOD, url: 'http://localhost:9000/' }, /^body\.url host localhost is at .*127\.0\.0\.1/],
    // IPv6 forms that carry an IPv4 address other than ::ffff:a.b.c.d: IPv4-compatible, IPv4-translated, 6to4, Teredo; and site-local.
    [{ ...GOOD, url: 'http://[::127.0.0.1]/' }, /^body\.url host ::7f00:1 is at/],
    [{ ...GOOD, url: 'http://[::ffff:0:127.0.0.1]/' }, /^body\.url host ::ffff:0:7f00:1 is at/],
    [{ ...GOOD, url: 'http://[2002:7f00:1::]/' }, /^body\.url host 2002:7f00:1:: is at/],
    [{ ...GOOD, url: 'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/' }, /^body\.url host 2001:0:4136/],
    [{ ...GOOD, url: 'http://[64:ff9b:1::a00:1]/' }, /^body\.url host 64:ff9b:1::a00:1 is at/],
    [{ ...GOOD, url: 'http://[fec0::1]/' }, /^body\.url host fec0::1 is at/],
    [{ ...GOOD, eventTypes: ['membership_subscription.renewed', 'subscription.exploded'] }, /eventTypes/],
    [{ ...GOOD, eventTypes: [] }, /eventTypes/],
    [{ url: GOOD.url }, /eventTypes/],
    [{ ...GOOD, secret: 'whsec_mine' }, /secret/]
  ]
  for (const [body, message] of cases) {
    const res = await call('POST', PATH, admin, body)
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.match(errorOf(res).message, message, JSON.stringify(body))
  }
  const made = (await call('POST', PATH, admin, GOOD)).json()
  const patched = await call('PATCH', `${PATH}/${made.id}`, admin, { url: 'http://127.0.0.2/' })
  t.equal(patched.statusCode, 400)
  t.match(errorOf(patched).message, /^body\.url host 127\.0\.0\.2/)
  t.equal((await call('PATCH', `${PATH}/${made.id}`, admin, { eventTypes: ['nope'] })).statusCode, 400)
  t.equal((await call('GET', `${PATH}/${made.id}`, admin)).json().url, GOOD.url, 'a refused PATCH changed nothing')
  t.equal((await call('GET', PATH, admin)).json()._total, 1, 'no refused endpoint was stored')
})

t.test('WEBHOOK_ALLOWED_NETWORKS lets a listed private network in, and only it', async (t) => {
  const { call, admin } = await setup(t, { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32, 10.20.0.0/16' })
  t.equal((await call('POST', PATH, admin, { ...GOOD, url: 'http://127.0.0.1:9/hooks' })).statusCode, 201)
  t.equal((await call('POST', PATH, admin, { ...GOOD, url: 'http://10.20.3.4/hooks' })).statusCode, 201)
  t.equal((await call('POST', PATH, admin, { ...GOOD, url: 'http://10.21.3.4/hooks' })).statusCode, 400)
  t.equal((await call('POST', PATH, admin, { ...GOOD, url: 'http://127.0.0.2/hooks' })).statusCode, 400)
})

t.test('the secret is shown at creation and rotation only, is never stored, and rotation keeps the old one for 24 h', async (t) => {
  const { ctx, call, admin } = await setup(t)
  const created = await call('POST', PATH, admin, { ...GOOD, description: 'Accounting' })
  t.equal(created.statusCode, 201)
  const endpoint = created.json()
  t.match(endpoint, { url: GOOD.url, eventTypes: GOOD.eventTypes, description: 'Accounting', enabled: true, previousSecretExpiresDate: null })
  t.match(endpoint.secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
  const shown = await call('GET', `${PATH}/${endpoint.id}`, admin)
  t.notOk('secret' in shown.json(), 'GET never shows it')
  t.notOk('secret' in (await call('GET', PATH, admin)).json().items[0])
  const row = await ctx.app.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpoint.id).executeTakeFirstOrThrow()
  const stored = JSON.stringify(row)
  const keyBase64 = endpoint.secret.slice('whsec_'.length)
  t.notOk(stored.includes(keyBase64) || stored.includes(Buffer.from(keyBase64, 'base64').toString('hex')), 'the database holds no form of the secret')
  t.notOk(ctx.logs().includes(keyBase64), 'nor does the log')

  ctx.clock.advance(60_000)
  const rotated = await call('POST', `${PATH}/${endpoint.id}/secret`, admin)
  t.equal(rotated.statusCode, 200)
  t.not(rotated.json().secret, endpoint.secret)
  t.equal(rotated.json().previousSecretExpiresDate, new Date(ctx.clock.now().getTime() + 24 * 3600_000).toISOString())
  t.notOk(ctx.logs().includes(rotated.json().secret.slice(6)))
  t.equal((await call('POST', `${PATH}/nope/secret`, admin)).statusCode, 404)
})

t.test('an admin lists, changes and deletes endpoints; an empty PATCH changes nothing', async (t) => {
  const { ctx, call, admin } = await setup(t)
  const a = (await call('POST', PATH, admin, GOOD)).json()
  ctx.clock.advance(1_000)
  const b = (await call('POST', PATH, admin, { ...GOOD, enabled: false })).json()
  t.equal(b.enabled, false)
  const list = (await call('GET', PATH, admin)).json()
  t.same(list.items.map((e: { id: string }) => e.id), [a.id, b.id])
  t.equal(list._total, 2)
  t.same((await call('PATCH', `${PATH}/${a.id}`, admin, {})).json(), (await call('GET', `${PATH}/${a.id}`, admin)).json())
  const patched = (await call('PATCH', `${PATH}/${a.id}`, admin, { eventTypes: ['replay.ready'], description: null, enabled: false })).json()
  t.match(patched, { eventTypes: ['replay.ready'], description: null, enabled: false })
  t.equal((await call('DELETE', `${PATH}/${a.id}`, admin)).statusCode, 204)
  t.equal((await call('GET', `${PATH}/${a.id}`, admin)).statusCode, 404)
  t.equal((await call('DELETE', `${PATH}/${a.id}`, admin)).statusCode, 404)
  t.equal((await call('GET', `${PATH}/${a.id}/deliveries`, admin)).statusCode, 404)
})

t.test('club webhooks endpoints: the same checks and answers from a shell', async (t) => {
  const ctx: TestApp = await testApp(t)
  const env = { DATABASE_URL: ctx.config.DATABASE_URL, LOG_LEVEL: 'silent' }
  const club = async (...argv: string[]) => {
    let out = ''
    let err = ''
    const code = await runCli(['webhooks', 'endpoints', ...argv], env, (s) => (out += s), (s) => (err += s))
    return { code, out, err, json: () => JSON.parse(out) }
  }
  const made = await club('create', '--url', GOOD.url, '--type', 'package.issued', '--type', 'replay.ready', '--description', 'Door system')
  t.equal(made.code, 0, made.err)
  const endpoint = made.json()
  t.match(endpoint, { url: GOOD.url, eventTypes: ['package.issued', 'replay.ready'], description: 'Door system', enabled: true })
  const { key } = await ctx.app.webhookEndpoints()
  t.equal(endpoint.secret, secretText(key, endpoint.id, 1), 'the CLI and the server derive the same secret')
  t.notOk('secret' in (await club('show', endpoint.id)).json())
  t.equal((await club('list')).json()._total, 1)
  for (const paging of ['--ipp=0', '--ipp=-1', '--ipp=1000', '--page=0']) {
    const refused = await club('list', paging)
    t.equal(refused.code, 1, `list ${paging}`)
    t.match(refused.err, /flags\.(ipp|page)/, `list ${paging} names the flag`)
  }
  t.match((await club('update', endpoint.id, '--enabled', 'false')).json(), { enabled: false })
  t.equal((await club('rotate-secret', endpoint.id)).json().secret, secretText(key, endpoint.id, 2))
  t.same((await club('deliveries', endpoint.id)).json().items, [])
  const bad = await club('create', '--url', 'http://10.0.0.1/', '--type', 'package.issued')
  t.equal(bad.code, 1)
  t.match(bad.err, /body\.url host 10\.0\.0\.1/)
  const unknown = await club('create', '--url', GOOD.url, '--type', 'package.stolen')
  t.equal(unknown.code, 1)
  t.match(unknown.err, /eventTypes/)
  t.equal((await club('retry', endpoint.id, 'nope')).code, 1)
  t.match((await club('delete', endpoint.id)).json(), { id: endpoint.id, deleted: true })
  t.equal((await club('show', endpoint.id)).code, 1)
})
