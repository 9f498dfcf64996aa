// Several processes on one database: two servers started as `pnpm start` starts them and the
// `club` command, racing the writes the docs invite (and every "at most once" rule) on one
// database. No answer may be a 5xx, no command may fail, and each rule keeps its single winner.
// One SQLite file, or one PostgreSQL database when the suite runs there (run through scripts/postgres.mjs);
// the servers count their rate limits in one Redis either way, and each sees the other's writes
// at its very next request (read caches, status polls).
import { createHash, createHmac } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { testPostgresDatabase } from './test-support/postgres.js'
import { club as runClub, clubJson as runClubJson, fetchJson, processEnv, startServer as startProcess, type FetchInit, type StartedServer as Server } from './test-support/processes.js'
import { redisServer } from './test-support/redis-server.js'

const ROUNDS = 15
const FORUM_SECRET = 'multi-process forum secret'
const FORUM = 'https://forum.example.org'
const REDIRECT = 'https://partner.example.org/callback'

// Two servers, Redis and the CLI racing on one database: about a minute alone, two on PostgreSQL
// while other suites run beside it (five on a machine at a load of 20, where each CLI run takes
// seconds). Past the suite's two minutes per file, it is slow, not broken.
t.setTimeout(480_000)

const dir = mkdtempSync(join(tmpdir(), 'club-multi-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

const redis = await redisServer(t)

const env = processEnv((await testPostgresDatabase(t)) ?? join(dir, 'club.db'), {
  REDIS_URL: redis.url,
  API_KEY_RATE_LIMIT_MAX: '5',
  TOKEN_RATE_LIMIT_MAX: '100000',
  REPLAY_REGISTRATION_RATE_LIMIT_MAX: '100000',
  PHONE_SENDS_PER_IP_PER_HOUR: '100000',
  // The two servers must check each other's codes: one pepper for both.
  PHONE_CODE_PEPPER: 'one pepper for every process',
  FORUM_CONNECT_SECRET: FORUM_SECRET,
  FORUM_CONNECT_ORIGIN: FORUM,
  // Replays are paid with package items: the race of a cancelled redemption and a delivered replay.
  REPLAYS_REQUIRE_PACKAGE: 'true'
})

const startServer = () => startProcess(t, env)
const club = (...args: string[]) => runClub(env, ...args)
const clubJson = (...args: string[]) => runClubJson(env, ...args)

/** Every answer any server gave, to check at the end that none was a 5xx. */
const answers: Array<{ label: string; status: number; body: string }> = []

async function call(base: string, label: string, path: string, init: FetchInit = {}) {
  const res = await fetchJson(base, path, init)
  answers.push({ label, status: res.status, body: res.text })
  return res
}

const statuses = (results: Array<{ status: number }>) => results.map((r) => r.status).sort((a, b) => a - b)

t.test('two servers and the CLI on one database', async (t) => {
  // Both servers and a CLI command start together on a new file: they race the migrations too.
  const [a, b, admin] = await Promise.all([
    startServer(),
    startServer(),
    clubJson('users', 'create', '--email', 'admin@example.org', '--password', 'correct horse battery', '--role', 'admin')
  ])
  t.ok(admin.id, 'the CLI created the admin while both servers migrated')
  const servers = [a, b]

  const login = async (server: Server) => {
    const res = await call(server.base, 'login', '/apis/v2/oauth2/token', {
      method: 'POST',
      form: { grant_type: 'password', username: 'admin@example.org', password: 'correct horse battery' }
    })
    if (res.status !== 201) throw new Error(`login: ${res.status}`)
    return res.body as { access_token: string; refresh_token: string }
  }
  const bearer = { authorization: `Bearer ${(await login(a)).access_token}` }

  await t.test('one refresh token presented to both servers: one rotation, the other is reuse', async (t) => {
    for (let round = 0; round < ROUNDS; round++) {
      const { refresh_token } = await login(servers[round % 2]!)
      const results = await Promise.all(
        servers.map((s) => call(s.base, 'refresh', '/apis/v2/oauth2/token', { method: 'POST', form: { grant_type: 'refresh_token', refresh_token } }))
      )
      t.same(statuses(results), [201, 400], `round ${round}`)
      t.equal(results.find((r) => r.status === 400)!.body.error, 'invalid_grant')
    }
  })

  await t.test('one template patched through both with the same If-Match: one new version, one 412', async (t) => {
    const created = await call(a.base, 'template create', '/apis/v2/templates', {
      method: 'POST',
      headers: bearer,
      json: { name: 'Open play', type: 'EVENT', data: {} }
    })
    t.equal(created.status, 201)
    const id = created.body.id as string
    for (let round = 0; round < ROUNDS; round++) {
      const version = round + 1
      const results = await Promise.all(
        servers.map((s, i) =>
          call(s.base, 'template patch', `/apis/v2/templates/${id}`, {
            method: 'PATCH',
            headers: { ...bearer, 'if-match': `"${version}"` },
            json: { name: `Open play ${round}-${i}` }
          })
        )
      )
      t.same(statuses(results), [200, 412], `round ${round}`)
    }
    const final = await call(b.base, 'template get', `/apis/v2/templates/${id}`, { headers: bearer })
    t.equal(final.body.version, ROUNDS + 1, 'every round made exactly one version')
    const versions = await call(a.base, 'versions', `/apis/v2/templates/${id}/versions?ipp=100`, { headers: bearer })
    t.equal(versions.body._total, ROUNDS + 1)
  })

  await t.test('twenty redemptions of a 3-item package split over both servers: exactly 3 win; one target through both is one', async (t) => {
    const template = await call(a.base, 'package template', '/apis/v2/templates', {
      method: 'POST',
      headers: bearer,
      json: { name: '3 replays', type: 'PACKAGE', data: { validityDays: 30, items: [{ type: 'REPLAY', displayName: 'Replay', displayNamePlural: 'Replays', totalItems: 3 }] } }
    })
    const issue = () =>
      call(b.base, 'package issue', '/apis/v2/packages', { method: 'POST', headers: bearer, json: { template: { id: template.body.id }, user: { id: admin.id } } })
    const pkg = (await issue()).body
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call(servers[i % 2]!.base, 'redeem', `/apis/v2/packages/${pkg.id}/redemptions`, { method: 'POST', headers: bearer, json: { type: 'REPLAY', target: { replay: { id: `r${i}` } } } })
      )
    )
    t.same(statuses(results), [...Array(3).fill(201), ...Array(17).fill(409)])
    const after = await call(a.base, 'package get', `/apis/v2/packages/${pkg.id}`, { headers: bearer })
    t.equal(after.body.redemptions._total, 3)
    t.equal(after.body.items.items[0].remainingItems, 0)
    for (let round = 0; round < 5; round++) {
      const fresh = (await issue()).body
      const both = await Promise.all(
        servers.map((s) => call(s.base, 'redeem', `/apis/v2/packages/${fresh.id}/redemptions`, { method: 'POST', headers: bearer, json: { type: 'REPLAY', target: { replay: { id: 'same' } } } }))
      )
      t.same(statuses(both), [200, 201], `round ${round}: one redemption, found again by the other`)
      t.equal(both[0]!.body.id, both[1]!.body.id)
      const left = await call(b.base, 'package get', `/apis/v2/packages/${fresh.id}`, { headers: bearer })
      t.equal(left.body.items.items[0].remainingItems, 2, `round ${round}: one item taken`)
    }
  })

  await t.test('40 box registrations split over both servers, and one box registering through both at once', async (t) => {
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call(servers[i % 2]!.base, 'register', '/apis/v2/replay-servers/device', { method: 'POST', json: { deviceId: `box-${i}` } })
      )
    )
    t.same(new Set(statuses(results)), new Set([200]), 'all 40 registered')
    const list = await call(a.base, 'admin list', '/apis/v2/admin/replay-servers?ipp=100', { headers: bearer })
    t.equal(list.body._total, 40)

    for (let round = 0; round < ROUNDS; round++) {
      const deviceId = `reinstalled-${round}`
      const both = await Promise.all(
        servers.map((s) => call(s.base, 'register', '/apis/v2/replay-servers/device', { method: 'POST', json: { deviceId } }))
      )
      t.same(statuses(both), [200, 200], `round ${round}: both registrations answer, as in one process`)
      const polls = await Promise.all(
        both.map((r) => call(a.base, 'status', `/apis/v2/replay-servers/device/${r.body.serverId}/status`))
      )
      // The deviceId is no secret, so the second registration never replaces the first: it is a
      // pending claim beside the box (replay-servers/claims.ts), whichever process took which.
      t.same(statuses(polls), [200, 200], `round ${round}: both serverIds answer`)
      t.same(polls.map((p) => p.body.status), ['PENDING', 'PENDING'])
      const listed = await call(a.base, 'admin list', `/apis/v2/admin/replay-servers?deviceId=${deviceId}`, { headers: bearer })
      t.equal(listed.body._total, 1, `round ${round}: exactly one box record`)
      t.equal(listed.body.items[0].claims.length, 1, `round ${round}: the other registration is a claim beside it`)
    }
    const all = await call(b.base, 'admin list', '/apis/v2/admin/replay-servers?ipp=100', { headers: bearer })
    t.equal(all.body._total, 40 + ROUNDS, 'one record per box')
  })

  await t.test('token rotation by the CLI and both servers at once: every rotation counts, one token wins', async (t) => {
    const region = await clubJson('regions', 'create', '--name', 'North')
    const area = await clubJson('areas', 'create', '--name', 'Main hall', '--region', region.id)
    const registered = await call(a.base, 'register', '/apis/v2/replay-servers/device', { method: 'POST', json: { deviceId: 'rotating-box' } })
    const serverId = registered.body.serverId as string
    const id = (await call(a.base, 'admin list', '/apis/v2/admin/replay-servers?deviceId=rotating-box', { headers: bearer })).body.items[0].id
    t.equal((await call(b.base, 'approve', `/apis/v2/admin/replay-servers/${id}/approve`, { method: 'POST', headers: bearer, json: { areaId: area.id } })).status, 200)
    const tokens = new Set<string>()
    for (let round = 0; round < 5; round++) {
      const before = (await call(a.base, 'status', `/apis/v2/replay-servers/device/${serverId}/status`)).body.accessToken as string
      tokens.add(before)
      const [cli, ...http] = await Promise.all([
        club('devices', 'rotate-token', id),
        ...servers.map((s) => call(s.base, 'rotate', `/apis/v2/admin/replay-servers/${id}/rotate-token`, { method: 'POST', headers: bearer }))
      ])
      t.equal(cli.code, 0, `round ${round}: the CLI rotated (${cli.stderr.trim()})`)
      t.same(statuses(http), [200, 200], `round ${round}: both servers rotated`)
      const after = await Promise.all(servers.map((s) => call(s.base, 'status', `/apis/v2/replay-servers/device/${serverId}/status`)))
      t.equal(after[0]!.body.accessToken, after[1]!.body.accessToken, 'both servers hand the box the same token')
      t.notOk(tokens.has(after[0]!.body.accessToken), 'a token never seen before')
    }
  })

  await t.test('eight `club events create` while both servers create templates', async (t) => {
    const [commands, creations] = await Promise.all([
      Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          club('events', 'create', '--name', `Ladder ${i}`, '--type', 'LEAGUE', '--start', '2026-05-05T18:00:00Z', '--end', '2026-05-05T20:00:00Z')
        )
      ),
      Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          call(servers[i % 2]!.base, 'template create', '/apis/v2/templates', {
            method: 'POST',
            headers: bearer,
            json: { name: `Race ${i}`, type: 'EVENT', data: {} }
          })
        )
      )
    ])
    t.same(
      commands.map((c) => [c.code, c.stderr]),
      commands.map(() => [0, '']),
      'every command succeeded'
    )
    t.same(new Set(statuses(creations)), new Set([201]), 'every template was created')
  })

  await t.test('one authorization code exchanged through both servers: one token pair, one invalid_grant', async (t) => {
    const client = await clubJson('clients', 'create', '--name', 'partner', '--grant', 'authorization_code', '--grant', 'refresh_token', '--redirect-uri', REDIRECT)
    const basic = `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`
    for (let round = 0; round < ROUNDS; round++) {
      const authorization = await call(servers[round % 2]!.base, 'authorize', '/apis/v2/oauth2/authorizations', {
        method: 'POST',
        headers: bearer,
        json: { type: 'OAUTH2_AUTHORIZATION_CODE', clientId: client.clientId, redirectUri: REDIRECT }
      })
      t.equal(authorization.status, 201)
      const results = await Promise.all(
        servers.map((s) =>
          call(s.base, 'exchange', '/apis/v2/oauth2/token', {
            method: 'POST',
            headers: { authorization: basic },
            form: { grant_type: 'authorization_code', code: authorization.body.code, redirect_uri: REDIRECT }
          })
        )
      )
      t.same(statuses(results), [201, 400], `round ${round}`)
      t.equal(results.find((r) => r.status === 400)!.body.error, 'invalid_grant')
    }
  })

  await t.test('one forum nonce presented to both servers: signed in once', async (t) => {
    for (let round = 0; round < ROUNDS; round++) {
      const payload = new URLSearchParams({ nonce: `nonce-${round}`, return_sso_url: `${FORUM}/session/sso_login` }).toString()
      const sso = `${Buffer.from(payload).toString('base64')}\n`
      const sig = createHmac('sha256', FORUM_SECRET).update(sso).digest('hex')
      const results = await Promise.all(
        servers.map((s) =>
          call(s.base, 'forum', '/apis/v2/oauth2/forum-connect/authorizations', { method: 'POST', headers: bearer, json: { type: 'FORUM_CONNECT', sso, sig } })
        )
      )
      t.same(statuses(results), [201, 400], `round ${round}`)
      t.equal(results.find((r) => r.status === 400)!.body.message, 'the sso nonce was already used')
    }
  })

  await t.test('wrong phone codes split over both servers: exactly five attempts are taken', async (t) => {
    for (let round = 0; round < 5; round++) {
      const sent = await call(a.base, 'phone send', '/apis/v2/signup/phone-verifications', {
        method: 'POST',
        json: { phoneNumber: `+1415555${String(2600 + round).padStart(4, '0')}` }
      })
      t.equal(sent.status, 201)
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          call(servers[i % 2]!.base, 'phone check', '/apis/v2/signup/phone-verifications', {
            method: 'POST',
            // A code no session can have: the log provider's codes are six random digits, and one
            // wrong guess per attempt is what is counted.
            json: { sessionId: sent.body.sessionId, verificationCode: wrongCode(a.output(), sent.body.sessionId) }
          })
        )
      )
      t.same(new Set(statuses(results)), new Set([201]), `round ${round}: every check answers`)
      const taken = results.filter((r) => r.body.errors[0]?.code === 'invalid_code')
      t.equal(taken.length, 5, `round ${round}: five attempts taken, no more`)
      const after = await call(b.base, 'phone check', '/apis/v2/signup/phone-verifications', {
        method: 'POST',
        json: { sessionId: sent.body.sessionId, verificationCode: wrongCode(a.output(), sent.body.sessionId) }
      })
      t.equal(after.body.remainingAttempts, 0)
      t.equal(after.body.errors[0]?.code, 'session_max_attempts_reached', 'no attempt was given back')
    }
  })

  await t.test('a token revoked through one server is refused by the other at once', async (t) => {
    for (let round = 0; round < ROUNDS; round++) {
      const { access_token } = await login(servers[round % 2]!)
      const headers = { authorization: `Bearer ${access_token}` }
      // Read through the other server first, so its cache holds the token as valid.
      t.equal((await call(b.base, 'current', '/apis/v2/users/current', { headers })).status, 200)
      t.equal((await call(a.base, 'revoke', '/apis/v2/oauth2/revoke', { method: 'POST', form: { token: access_token } })).status, 200)
      t.equal((await call(b.base, 'current', '/apis/v2/users/current', { headers })).status, 401, `round ${round}`)
    }
  })

  await t.test('a template written through one server is read through the other', async (t) => {
    const created = await call(a.base, 'template create', '/apis/v2/templates', {
      method: 'POST',
      headers: bearer,
      json: { type: 'EVENT', name: 'Read across', data: {} }
    })
    t.equal(created.status, 201, JSON.stringify(created.body))
    const id = created.body.id as string
    t.equal((await call(b.base, 'template get', `/apis/v2/templates/${id}`, { headers: bearer })).body.name, 'Read across')
    for (let round = 0; round < ROUNDS; round++) {
      const current = await call(b.base, 'template get', `/apis/v2/templates/${id}`, { headers: bearer })
      const patched = await call(a.base, 'template patch', `/apis/v2/templates/${id}`, {
        method: 'PATCH',
        headers: { ...bearer, 'if-match': `"${current.body.version}"` },
        json: { name: `Read across ${round}` }
      })
      t.equal(patched.status, 200, JSON.stringify(patched.body))
      const read = await call(b.base, 'template get', `/apis/v2/templates/${id}`, { headers: bearer })
      t.equal(read.body.name, `Read across ${round}`, `round ${round}: the other server reads the new version`)
    }
  })

  await t.test('a rate limit of 5 spread over both servers refuses the sixth', async (t) => {
    const { apiKey } = await clubJson('api-keys', 'create', '--email', 'admin@example.org')
    const headers = { 'x-api-key': apiKey }
    const results = []
    for (let i = 0; i < 6; i++) results.push(await call(servers[i % 2]!.base, 'api key', '/apis/v2/users/current', { headers }))
    t.same(results.map((r) => r.status), [200, 200, 200, 200, 200, 429])
    t.match(results[5]!.body, { statusCode: 429, error: 'Too Many Requests' })
  })

  await t.test('a box approved through one server gets its token polling the other', async (t) => {
    const region = await clubJson('regions', 'create', '--name', 'South')
    const area = await clubJson('areas', 'create', '--name', 'Side hall', '--region', region.id)
    for (let round = 0; round < 5; round++) {
      const deviceId = `approved-across-${round}`
      const registered = await call(b.base, 'register', '/apis/v2/replay-servers/device', { method: 'POST', json: { deviceId } })
      const serverId = registered.body.serverId as string
      const pending = await call(b.base, 'status', `/apis/v2/replay-servers/device/${serverId}/status`)
      t.equal(pending.body.status, 'PENDING')
      const id = (await call(a.base, 'admin list', `/apis/v2/admin/replay-servers?deviceId=${deviceId}`, { headers: bearer })).body.items[0].id
      t.equal((await call(a.base, 'approve', `/apis/v2/admin/replay-servers/${id}/approve`, { method: 'POST', headers: bearer, json: { areaId: area.id } })).status, 200)
      const approved = await call(b.base, 'status', `/apis/v2/replay-servers/device/${serverId}/status`)
      t.equal(approved.body.status, 'APPROVED', `round ${round}`)
      t.type(approved.body.accessToken, 'string', `round ${round}: the token, at the next poll`)
    }
  })

  await t.test('an approval (by the CLI or a server) while the box polls the other with a new version: both land, the token works', async (t) => {
    const region = await clubJson('regions', 'create', '--name', 'Racing south')
    const cliStarted = Date.now()
    const area = await clubJson('areas', 'create', '--name', 'Racing hall', '--region', region.id)
    const cliMs = Date.now() - cliStarted
    const ROUNDS_HERE = 6
    for (let round = 0; round < ROUNDS_HERE; round++) {
      const deviceId = `approve-poll-${round}`
      const registered = await call(b.base, 'register', '/apis/v2/replay-servers/device', { method: 'POST', json: { deviceId, version: '1.0.0' } })
      const serverId = registered.body.serverId as string
      const id = (await call(a.base, 'admin list', `/apis/v2/admin/replay-servers?deviceId=${deviceId}`, { headers: bearer })).body.items[0].id as string
      const version = `1.${round + 1}.0`
      const poller = servers[round % 2]!
      // Even rounds approve through the CLI, the poll sent from at once to past the CLI's start (as
      // in the replay race below); odd rounds through the server the box does not poll, at once.
      const byCli = round % 2 === 0
      const delay = byCli ? Math.round((cliMs * 1.5 * round) / (ROUNDS_HERE - 2)) : 0
      const [approved, polled] = await Promise.all([
        byCli
          ? clubJson('devices', 'approve', id, '--area', area.id).then(() => 200)
          : call(servers[(round + 1) % 2]!.base, 'approve', `/apis/v2/admin/replay-servers/${id}/approve`, { method: 'POST', headers: bearer, json: { areaId: area.id } }).then((r) => r.status),
        new Promise<void>((resolve) => setTimeout(resolve, delay)).then(() => call(poller.base, 'status', `/apis/v2/replay-servers/device/${serverId}/status?version=${version}`))
      ])
      t.equal(approved, 200, `round ${round}: approved`)
      t.equal(polled.status, 200, `round ${round}: the racing poll answered`)
      t.ok(['PENDING', 'APPROVED'].includes(polled.body.status as string), `round ${round}: the racing poll saw one state or the other`)
      // Whichever came first, the next poll of either server has the token, and it works.
      const next = await call(servers[(round + 1) % 2]!.base, 'status', `/apis/v2/replay-servers/device/${serverId}/status?version=${version}`)
      t.equal(next.body.status, 'APPROVED', `round ${round}: approved at the next poll`)
      if (polled.body.status === 'APPROVED') t.equal(polled.body.accessToken, next.body.accessToken, `round ${round}: one token`)
      const asBox = await call(poller.base, 'device replays', '/apis/v2/replay-servers/device/replays', { headers: { authorization: `Bearer ${next.body.accessToken}` } })
      t.equal(asBox.status, 200, `round ${round}: the token authenticates the box`)
      // The approval writes the whole record back: read under its row lock, it keeps the poll's report.
      const record = await call(a.base, 'admin get', `/apis/v2/admin/replay-servers/${id}`, { headers: bearer })
      t.equal(record.body.version, version, `round ${round}: the version the racing poll reported is kept`)
    }
  })

  await t.test("a replay's redemption cancelled by the CLI while the box reports it READY: the item is spent exactly once", async (t) => {
    const RACES = 8
    const region = await clubJson('regions', 'create', '--name', 'Replay region')
    const area = await clubJson('areas', 'create', '--name', 'Replay hall', '--region', region.id)
    const court = await clubJson('courts', 'create', '--name', 'Replay court', '--area', area.id)
    const registered = await call(a.base, 'register', '/apis/v2/replay-servers/device', { method: 'POST', json: { deviceId: 'replay-race-box' } })
    const box = (await call(a.base, 'admin list', '/apis/v2/admin/replay-servers?deviceId=replay-race-box', { headers: bearer })).body.items[0]
    await call(a.base, 'approve', `/apis/v2/admin/replay-servers/${box.id}/approve`, { method: 'POST', headers: bearer, json: { areaId: area.id } })
    const bucketDir = join(dir, 'bucket')
    mkdirSync(join(bucketDir, 'cam-1'), { recursive: true })
    const config = await call(a.base, 'config', `/apis/v2/admin/replay-servers/${box.id}/config`, {
      method: 'PUT',
      headers: bearer,
      json: { cloudStorageBucket: pathToFileURL(bucketDir).href, cameras: [{ id: 'cam-1', name: 'North', feed: 'rtsp://10.0.0.20:554/stream1', isEnabled: true, courtIds: [court.id] }] }
    })
    t.equal(config.status, 200, JSON.stringify(config.body))
    const token = (await call(b.base, 'status', `/apis/v2/replay-servers/device/${registered.body.serverId}/status`)).body.accessToken as string
    const device = { authorization: `Bearer ${token}` }
    const template = await call(a.base, 'package template', '/apis/v2/templates', {
      method: 'POST',
      headers: bearer,
      json: { name: 'Race replays', type: 'PACKAGE', data: { validityDays: 30, items: [{ type: 'REPLAY', displayName: 'Replay', displayNamePlural: 'Replays', totalItems: RACES }] } }
    })
    // A member of their own, holding this one package: their replays are paid from it alone.
    const cliStarted = Date.now()
    const member = await clubJson('users', 'create', '--email', 'replays@example.org', '--password', 'correct horse battery', '--role', 'member')
    const cliMs = Date.now() - cliStarted
    const signedIn = await call(b.base, 'login', '/apis/v2/oauth2/token', {
      method: 'POST',
      form: { grant_type: 'password', username: 'replays@example.org', password: 'correct horse battery' }
    })
    const asMember = { authorization: `Bearer ${signedIn.body.access_token}` }
    const pkg = (await call(b.base, 'package issue', '/apis/v2/packages', { method: 'POST', headers: bearer, json: { template: { id: template.body.id }, user: { id: member.id } } })).body
    const remaining = async () => (await call(a.base, 'package get', `/apis/v2/packages/${pkg.id}`, { headers: bearer })).body.items.items[0].remainingItems as number
    let delivered = 0
    for (let round = 0; round < RACES; round++) {
      const requested = await call(a.base, 'replay', '/apis/v2/replays', { method: 'POST', headers: asMember, json: { court: { id: court.id } } })
      t.equal(requested.status, 201, JSON.stringify(requested.body))
      const replay = requested.body
      // The replay's redemption is the package's newest (rounds follow one another).
      const live = (await call(b.base, 'redemptions', `/apis/v2/packages/${pkg.id}/redemptions`, { headers: bearer })).body.items as Array<{ id: string; cancelationDate: string | null }>
      const before = await remaining()
      await call(a.base, 'exporting', `/apis/v2/replay-servers/device/replays/${replay.id}/status`, { method: 'PUT', headers: device, json: { status: 'EXPORTING' } })
      const clip = join(bucketDir, 'cam-1', `${replay.id}.mp4`)
      writeFileSync(clip, 'bytes')
      const ready = { status: 'READY', location: pathToFileURL(clip).href, durationSeconds: 30, sizeBytes: 5, sha256: 'a'.repeat(64) }
      const redemptionId = live[live.length - 1]!.id
      // A CLI command takes a second or more to start (cliMs, as measured here); the box's report is
      // sent later each round, from at once to past the CLI's time, so the two reach the database in
      // either order across the rounds. Either order must hold.
      const [reported, cancelled] = await Promise.all([
        new Promise<void>((resolve) => setTimeout(resolve, Math.round((cliMs * 1.5 * round) / (RACES - 1)))).then(() =>
          call(servers[round % 2]!.base, 'ready', `/apis/v2/replay-servers/device/replays/${replay.id}/status`, { method: 'PUT', headers: device, json: ready })
        ),
        club('packages', 'cancel-redemption', pkg.id, redemptionId)
      ])
      const status = (await call(b.base, 'replay get', `/apis/v2/replays/${replay.id}`, { headers: bearer })).body.status
      const after = await remaining()
      if (status === 'READY') {
        delivered++
        t.equal(reported.status, 200, `round ${round}: delivered`)
        t.not(cancelled.code, 0, `round ${round}: the cancellation refused`)
        t.match(cancelled.stderr, /its item stays spent/)
        t.equal(after, before, `round ${round}: the item stays spent`)
      } else {
        t.equal(status, 'FAILED', `round ${round}: given up`)
        t.equal(cancelled.code, 0, `round ${round}: the cancellation won`)
        t.equal(reported.status, 409, `round ${round}: the late READY refused`)
        t.equal(after, before + 1, `round ${round}: the item back once`)
      }
    }
    t.equal(await remaining(), RACES - delivered, 'every delivered replay took one item; every cancelled one took none')
    t.comment(`${delivered} delivered first, ${RACES - delivered} cancelled first`)
  })

  await t.test('no answer was a 5xx, and neither server logged a locked database', async (t) => {
    const failures = answers.filter((r) => r.status >= 500)
    t.same(failures.map((f) => `${f.label}: ${f.status} ${f.body.slice(0, 200)}`), [])
    for (const server of servers) t.notMatch(server.output(), /database is locked|SQLITE_BUSY/)
    t.equal(await a.stop(), 0)
    t.equal(await b.stop(), 0)
  })
})

/** A six-digit code other than the one the log provider wrote for this session. */
function wrongCode(log: string, sessionId: string): string {
  const line = log.split('\n').find((l) => l.includes(sessionId) && l.includes('smsCode'))
  const code = line ? (JSON.parse(line) as { smsCode: string }).smsCode : '000000'
  const digest = createHash('sha256').update(code).digest()
  const wrong = String(digest.readUInt32BE(0) % 1_000_000).padStart(6, '0')
  return wrong === code ? String((Number(code) + 1) % 1_000_000).padStart(6, '0') : wrong
}
