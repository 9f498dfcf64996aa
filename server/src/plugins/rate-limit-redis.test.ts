// The rate limits counted in a real Redis (REDIS_URL): shared by several server processes (the
// members' replay limit among them), failing open while Redis is away. Without REDIS_URL the
// in-process limits are covered by auth.test.ts, password-reset.test.ts and the other route tests,
// unchanged.
import t from 'tap'
import { errorOf, testApp, userWithApiKey, type TestApp } from '../test-support/app.js'
import { redisServer } from '../test-support/redis-server.js'
import { REPLAYS, filmedVenue } from '../replays/test-helpers.js'

/** Waits for a condition the test can observe, checking every 20 ms, for at most 10 s. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (condition()) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`still waiting for ${what}`)
}

/** The app's log lines of a level (40 warn, 30 info) whose message matches. */
const logLines = (ctx: TestApp, level: number, msg: RegExp) =>
  ctx
    .logs()
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((line) => line.level === level && msg.test(line.msg))

const unreachable = /Redis is unreachable/
const back = /Redis is reachable again/

t.test('two server processes with one REDIS_URL share the API-key limit', async (t) => {
  const redis = await redisServer(t)
  const env = { REDIS_URL: redis.url, API_KEY_RATE_LIMIT_MAX: '5' }
  const a = await testApp(t, env)
  const b = await testApp(t, env)
  const keys = new Map([
    [a, (await userWithApiKey(a)).apiKey],
    [b, (await userWithApiKey(b)).apiKey]
  ])
  const call = (ctx: TestApp, remoteAddress = '10.0.0.1') =>
    ctx.app.inject({ url: '/apis/v2/users/current', remoteAddress, headers: { 'x-api-key': keys.get(ctx)! } })

  const answers = []
  for (const ctx of [a, b, a, b, a]) answers.push(await call(ctx))
  t.same(answers.map((r) => r.statusCode), [200, 200, 200, 200, 200])
  t.same(answers.map((r) => r.headers['x-ratelimit-remaining']), ['4', '3', '2', '1', '0'], 'one count across both')
  const sixth = await call(b)
  t.equal(sixth.statusCode, 429, 'the sixth request is refused, whichever process it reaches')
  t.match(errorOf(sixth), { statusCode: 429, error: 'Too Many Requests', message: /at most 5 requests with an API key/ })
  t.ok(Number(sixth.headers['retry-after']) > 0)
  t.equal((await call(a)).statusCode, 429)
  t.equal((await call(a, '10.0.0.2')).statusCode, 200, 'another client IP has its own count')
  t.ok(a.logs().includes('the rate limits count in Redis'), 'the app says where it counts')
})

t.test("a route's own limit and a keyed limit are shared too (password reset per IP and per address)", async (t) => {
  const redis = await redisServer(t)
  const env = { REDIS_URL: redis.url, PASSWORD_RESET_RATE_LIMIT_MAX: '7' }
  const [a, b] = [await testApp(t, env), await testApp(t, env)]
  const requestReset = (ctx: TestApp, email: string) =>
    ctx.app.inject({ method: 'PATCH', url: '/apis/v2/oauth2/users/credentials', remoteAddress: '10.0.0.1', payload: { email } })

  for (const ctx of [a, b, a, b, a]) t.equal((await requestReset(ctx, 'someone@example.org')).statusCode, 200)
  const perAddress = await requestReset(b, 'Someone@example.org')
  t.equal(perAddress.statusCode, 429)
  t.match(errorOf(perAddress).message, /password reset requests for this address/)
  t.equal((await requestReset(b, 'other@example.org')).statusCode, 200, 'another address is not affected')
  const perIp = await requestReset(a, 'third@example.org')
  t.equal(perIp.statusCode, 429, 'the eighth request from one IP, over both processes')
  t.match(errorOf(perIp).message, /Too many password reset requests: at most 7 per 1 hour/)
})

t.test("a member's replay limit is one count for every server process on the database", async (t) => {
  const redis = await redisServer(t)
  const env = { REDIS_URL: redis.url, REPLAY_MEMBER_RATE_LIMIT_MAX: '2' }
  const a = await filmedVenue(t, env)
  // The second process in a subtest, so that it closes before the first one's database is dropped.
  await t.test('a second process', async (t) => {
    const b = await testApp(t, { ...env, DATABASE_URL: a.ctx.config.DATABASE_URL })
    const ask = (ctx: TestApp) =>
      ctx.app.inject({ method: 'POST', url: REPLAYS, headers: { authorization: a.member.authorization }, payload: { court: { id: a.venue.court1.id }, seconds: 10 } })
    const answers = [await ask(a.ctx), await ask(b), await ask(a.ctx)]
    t.same(answers.map((r) => r.statusCode), [201, 201, 429], 'the third in an hour, whichever process it reaches')
    t.match(errorOf(answers[2]!).message, /replays asked for by this member: at most 2 per 1 hour/)
    t.ok(Number(answers[2]!.headers['retry-after']) > 0)
  })
})

t.test('clubs sharing one Redis count apart under their REDIS_KEY_PREFIX', async (t) => {
  const redis = await redisServer(t)
  const north = await testApp(t, { REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'north:', API_KEY_RATE_LIMIT_MAX: '1' })
  const south = await testApp(t, { REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'south:', API_KEY_RATE_LIMIT_MAX: '1' })
  for (const ctx of [north, south]) {
    const user = await userWithApiKey(ctx)
    const res = await ctx.app.inject({ url: '/apis/v2/users/current', remoteAddress: '10.0.0.1', headers: { 'x-api-key': user.apiKey } })
    t.equal(res.statusCode, 200, `${ctx.config.REDIS_KEY_PREFIX} has its own count`)
  }
  t.same(await north.app.redis!.keys('north:*'), ['north:rate-limit:10.0.0.1'])
  t.same(await north.app.redis!.keys('south:*'), ['south:rate-limit:10.0.0.1'])
})

t.test('Redis going away: requests are answered uncounted, one warn; back: one info and counting resumes', async (t) => {
  const redis = await redisServer(t)
  const ctx = await testApp(t, { REDIS_URL: redis.url, API_KEY_RATE_LIMIT_MAX: '2' })
  const user = await userWithApiKey(ctx)
  const call = () => ctx.app.inject({ url: '/apis/v2/users/current', remoteAddress: '10.0.0.1', headers: { 'x-api-key': user.apiKey } })
  let failedConnections = 0
  ctx.app.redis!.on('error', () => failedConnections++)

  t.same([(await call()).statusCode, (await call()).statusCode, (await call()).statusCode], [200, 200, 429], 'counted in Redis')
  t.equal((await ctx.app.inject({ url: '/health/ready' })).json().checks.redis, 'ok')

  await redis.kill()
  const whileDown = []
  for (let i = 0; i < 5; i++) whileDown.push((await call()).statusCode)
  t.same(whileDown, [200, 200, 200, 200, 200], 'neither refused nor failed: the limit fails open')
  // Several reconnections fail, each an 'error' from the client, yet the log tells the outage once.
  await until(() => failedConnections >= 3, 'three failed reconnections')
  t.equal((await call()).statusCode, 200)
  t.equal(logLines(ctx, 40, unreachable).length, 1, 'one warn for the whole outage')
  t.equal(logLines(ctx, 30, back).length, 0)
  const ready = await ctx.app.inject({ url: '/health/ready' })
  t.equal(ready.statusCode, 200, 'still ready: a 503 would take every process out of the load balancer')
  t.match(ready.json().checks.redis, /^unreachable \(.+\): the rate limits let requests through uncounted$/)

  await redis.start()
  await until(() => logLines(ctx, 30, back).length > 0, 'the info that Redis is back')
  t.same([(await call()).statusCode, (await call()).statusCode, (await call()).statusCode], [200, 200, 429], 'counting resumed')
  t.equal(logLines(ctx, 30, back).length, 1, 'one info when it is back')
  t.equal(logLines(ctx, 40, unreachable).length, 1, 'still one warn')
})

t.test('a Redis that is down at start does not stop the server; it counts once Redis is up', async (t) => {
  const redis = await redisServer(t)
  await redis.kill()
  const ctx = await testApp(t, { REDIS_URL: redis.url, API_KEY_RATE_LIMIT_MAX: '1' })
  t.equal(logLines(ctx, 40, unreachable).length, 1, 'the start says Redis is unreachable')
  const user = await userWithApiKey(ctx)
  const call = () => ctx.app.inject({ url: '/apis/v2/users/current', remoteAddress: '10.0.0.1', headers: { 'x-api-key': user.apiKey } })
  t.same([(await call()).statusCode, (await call()).statusCode], [200, 200], 'uncounted while Redis is away')

  await redis.start()
  await until(() => logLines(ctx, 30, back).length > 0, 'the info that Redis is back')
  t.same([(await call()).statusCode, (await call()).statusCode], [200, 429])
})

t.test('a Redis that stops answering holds no request: the count times out and the request goes through', async (t) => {
  const redis = await redisServer(t)
  const ctx = await testApp(t, { REDIS_URL: redis.url, API_KEY_RATE_LIMIT_MAX: '1' })
  const user = await userWithApiKey(ctx)
  const call = () => ctx.app.inject({ url: '/apis/v2/users/current', remoteAddress: '10.0.0.1', headers: { 'x-api-key': user.apiKey } })
  t.same([(await call()).statusCode, (await call()).statusCode], [200, 429])

  redis.pause()
  t.teardown(() => redis.resume())
  t.equal((await call()).statusCode, 200, 'answered (uncounted) although Redis holds the connection open and says nothing')
  redis.resume()
  t.equal((await call()).statusCode, 429, 'the count is read again once Redis answers')
})
