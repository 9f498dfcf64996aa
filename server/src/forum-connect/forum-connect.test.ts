import t from 'tap'
import { createUser } from '../users/service.js'
import { hmacSha256Hex } from '../crypto.js'
import { issueTokenPair } from '../oauth2/tokens.js'
import { errorOf, testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { decodePayload, verifySignature } from './service.js'

const SECRET = 'd836444a9e4084d5b224a60c208dce14'
const FORUM = 'https://forum.example.org'
const env = { FORUM_CONNECT_SECRET: SECRET, FORUM_CONNECT_ORIGIN: FORUM }

/** What the forum sends: base64 of a query with nonce and return_sso_url, and its signature. */
function forumRequest(params: Record<string, string>, secret = SECRET) {
  const sso = `${Buffer.from(new URLSearchParams(params).toString()).toString('base64')}\n`
  return { type: 'FORUM_CONNECT', sso, sig: hmacSha256Hex(secret, sso) }
}

function connect(ctx: TestApp, authorization: string | undefined, body: Record<string, unknown>) {
  return ctx.app.inject({
    method: 'POST',
    url: '/apis/v2/oauth2/forum-connect/authorizations',
    headers: authorization ? { authorization } : {},
    payload: body
  })
}

t.test('the DiscourseConnect test vector verifies and decodes', async (t) => {
  const sso = 'bm9uY2U9Y2I2ODI1MWVlZmI1MjExZTU4YzAwZmYxMzk1ZjBjMGI=\n'
  t.ok(verifySignature(SECRET, sso, '2828aa29899722b35a2f191d34ef9b3ce695e0e6eeec47deb46d588d70c7cb56'))
  t.notOk(verifySignature(SECRET, sso.trimEnd(), '2828aa29899722b35a2f191d34ef9b3ce695e0e6eeec47deb46d588d70c7cb56'), 'the newline is signed too')
  t.equal(decodePayload(sso).get('nonce'), 'cb68251eefb5211e58c00ff1395f0c0b')
})

t.test("the signed-in user's identity goes back to the forum, signed", async (t) => {
  const ctx = await testApp(t, env)
  const row = await createUser(
    ctx.app.db,
    { email: 'Ann+club@example.org', password: 'a fine password', firstName: 'Ann', lastName: 'Lee' },
    { clock: ctx.clock, passwordHashCost: ctx.config.PASSWORD_HASH_COST }
  )
  const tokens = await issueTokenPair(ctx.app.db, { userId: row.id, clientId: null, scope: 'api' }, { clock: ctx.clock, accessTokenTtlSeconds: 3600, refreshTokenTtlSeconds: 3600 })
  const returnUrl = `${FORUM}/session/sso_login?lang=en`
  const res = await connect(ctx, `Bearer ${tokens.access_token}`, forumRequest({ nonce: 'n1', return_sso_url: returnUrl }))
  t.equal(res.statusCode, 201)
  const body = res.json()
  t.equal(body.type, 'FORUM_CONNECT')
  t.equal(body.sig, hmacSha256Hex(SECRET, body.sso), 'the answer is signed with the forum secret')
  const payload = decodePayload(body.sso)
  t.same(Object.fromEntries(payload), {
    nonce: 'n1',
    email: 'ann+club@example.org',
    external_id: row.id,
    username: 'ann_club',
    name: 'Ann Lee',
    require_activation: 'false'
  })
  t.match(Buffer.from(body.sso, 'base64').toString(), /email=ann%2Bclub%40example.org/, 'a + in the e-mail reaches the forum as %2B')
  t.equal(body.callbackUrl, `${returnUrl}&sso=${encodeURIComponent(body.sso)}&sig=${body.sig}`)
  const callback = new URL(body.callbackUrl)
  t.equal(callback.searchParams.get('sso'), body.sso)
  t.equal(callback.searchParams.get('lang'), 'en')
  t.notOk(ctx.logs().includes(SECRET), 'the secret is never logged')
})

t.test('refusals: bad signature, foreign return URL, missing nonce, replayed nonce, malformed input', async (t) => {
  const ctx = await testApp(t, env)
  const user = await userWithToken(ctx)
  const good = { nonce: 'n2', return_sso_url: `${FORUM}/session/sso_login` }

  const badSig = await connect(ctx, user.authorization, forumRequest(good, 'another secret of the forum'))
  t.equal(badSig.statusCode, 403)
  t.equal(errorOf(badSig).message, 'sig does not match sso: the payload was not signed by the forum')
  t.notOk(badSig.body.includes(SECRET))
  const tampered = forumRequest(good)
  const altered = await connect(ctx, user.authorization, { ...tampered, sso: forumRequest({ ...good, nonce: 'other' }).sso })
  t.equal(altered.statusCode, 403, 'a payload changed after signing is refused')

  for (const url of ['https://evil.example.com/session/sso_login', 'https://forum.example.org.evil.com/x', 'http://forum.example.org/x', 'not a url']) {
    const res = await connect(ctx, user.authorization, forumRequest({ nonce: `n-${url}`, return_sso_url: url }))
    t.ok([400, 403].includes(res.statusCode), url)
    t.match(errorOf(res).message, /return_sso_url/, url)
  }
  const noNonce = await connect(ctx, user.authorization, forumRequest({ return_sso_url: good.return_sso_url }))
  t.equal(noNonce.statusCode, 400)
  t.equal(errorOf(noNonce).message, 'the sso payload has no nonce')
  const noReturn = await connect(ctx, user.authorization, forumRequest({ nonce: 'n3' }))
  t.equal(errorOf(noReturn).message, 'the sso payload has no return_sso_url')

  t.equal((await connect(ctx, user.authorization, forumRequest(good))).statusCode, 201)
  const replay = await connect(ctx, user.authorization, forumRequest(good))
  t.equal(replay.statusCode, 400)
  t.equal(errorOf(replay).message, 'the sso nonce was already used')

  const junk = await connect(ctx, user.authorization, { type: 'FORUM_CONNECT', sso: 'a&b', sig: 'ab' })
  t.equal(junk.statusCode, 400)
  const shortSig = await connect(ctx, user.authorization, { ...forumRequest(good), sig: 'abc' })
  t.equal(errorOf(shortSig).message, 'sig must be 64 hexadecimal characters')
  t.equal((await connect(ctx, undefined, forumRequest(good))).statusCode, 401)
})

t.test('without a configured forum the route answers 503 in the error shape', async (t) => {
  const ctx = await testApp(t)
  const user = await userWithToken(ctx)
  const res = await connect(ctx, user.authorization, forumRequest({ nonce: 'n', return_sso_url: `${FORUM}/x` }))
  t.equal(res.statusCode, 503)
  t.equal(errorOf(res).message, 'forum single sign-on is not configured on this server')
})
