// A box's READY report racing a takedown, each through its own server process on one database (one
// SQLite file, or one PostgreSQL database through scripts/postgres.mjs): whichever lands first, the
// replay ends TAKEN_DOWN and its clip is gone from the bucket, and no answer is a 5xx.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { testPostgresDatabase } from '../test-support/postgres.js'
import { clubJson as runClubJson, fetchJson, processEnv, startServer, type FetchInit } from '../test-support/processes.js'

const RACES = 8

// Two servers and a few CLI commands: well under a minute alone, longer beside other suites.
t.setTimeout(300_000)

const dir = mkdtempSync(join(tmpdir(), 'club-takedown-race-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

const env = processEnv((await testPostgresDatabase(t)) ?? join(dir, 'club.db'), {
  // Each round's replay is of its own earlier minutes, so no takedown covers another round's.
  REPLAY_MAX_AGE_SECONDS: '3600',
  REPLAY_MEMBER_RATE_LIMIT_MAX: '1000',
  REPLAY_COURT_RATE_LIMIT_MAX: '1000',
  TOKEN_RATE_LIMIT_MAX: '100000'
})
const clubJson = (...args: string[]) => runClubJson(env, ...args)

t.test("a box's READY and a takedown through two servers: the replay ends TAKEN_DOWN, its clip deleted, whatever the order", async (t) => {
  const [a, b] = await Promise.all([startServer(t, env), startServer(t, env)])
  const answers: Array<{ label: string; status: number; body: string }> = []
  const call = async (base: string, label: string, path: string, init: FetchInit = {}) => {
    const res = await fetchJson(base, path, init)
    answers.push({ label, status: res.status, body: res.text })
    return res
  }
  await clubJson('users', 'create', '--email', 'staff@example.org', '--password', 'correct horse battery', '--role', 'staff')
  await clubJson('users', 'create', '--email', 'player@example.org', '--password', 'correct horse battery', '--role', 'member')
  const region = await clubJson('regions', 'create', '--name', 'Race region')
  const area = await clubJson('areas', 'create', '--name', 'Race hall', '--region', region.id)
  const court = await clubJson('courts', 'create', '--name', 'Race court', '--area', area.id)
  const admin = await clubJson('users', 'create', '--email', 'admin@example.org', '--password', 'correct horse battery', '--role', 'admin')
  t.ok(admin.id)
  const login = async (username: string) => {
    const res = await call(a.base, 'login', '/apis/v2/oauth2/token', { method: 'POST', form: { grant_type: 'password', username, password: 'correct horse battery' } })
    if (res.status !== 201) throw new Error(`login: ${res.status} ${res.text}`)
    return { authorization: `Bearer ${res.body.access_token}` }
  }
  const asAdmin = await login('admin@example.org')
  const asStaff = await login('staff@example.org')
  const asPlayer = await login('player@example.org')

  const registered = await call(a.base, 'register', '/apis/v2/replay-servers/device', { method: 'POST', json: { deviceId: 'takedown-race-box' } })
  const box = (await call(a.base, 'admin list', '/apis/v2/admin/replay-servers?deviceId=takedown-race-box', { headers: asAdmin })).body.items[0]
  await call(a.base, 'approve', `/apis/v2/admin/replay-servers/${box.id}/approve`, { method: 'POST', headers: asAdmin, json: { areaId: area.id } })
  const bucketDir = join(dir, 'bucket')
  mkdirSync(join(bucketDir, 'cam-1'), { recursive: true })
  const config = await call(a.base, 'config', `/apis/v2/admin/replay-servers/${box.id}/config`, {
    method: 'PUT',
    headers: asAdmin,
    json: { cloudStorageBucket: pathToFileURL(bucketDir).href, cameras: [{ id: 'cam-1', name: 'North', feed: 'rtsp://10.0.0.20:554/stream1', isEnabled: true, courtIds: [court.id] }] }
  })
  t.equal(config.status, 200, config.text)
  const token = (await call(b.base, 'status', `/apis/v2/replay-servers/device/${registered.body.serverId}/status`)).body.accessToken as string
  const device = { authorization: `Bearer ${token}` }

  const base = Date.now() - 1000
  let readyFirst = 0
  for (let round = 0; round < RACES; round++) {
    // Ten seconds each, a minute apart: no round's takedown covers another's replay.
    const end = new Date(base - round * 60_000).toISOString()
    const asked = await call(a.base, 'replay', '/apis/v2/replays', { method: 'POST', headers: asPlayer, json: { court: { id: court.id }, seconds: 10, end } })
    t.equal(asked.status, 201, asked.text)
    const id = asked.body.id as string
    await call(b.base, 'exporting', `/apis/v2/replay-servers/device/replays/${id}/status`, { method: 'PUT', headers: device, json: { status: 'EXPORTING' } })
    const clip = join(bucketDir, 'cam-1', `${id}.mp4`)
    writeFileSync(clip, 'clip bytes')
    const ready = { status: 'READY', location: pathToFileURL(clip).href, durationSeconds: 10, sizeBytes: 10, sha256: 'a'.repeat(64) }
    // Either one is held back a few milliseconds more each round, so both orders and the moments in
    // between are tried; every order must end the same.
    const lag = (round % 4) * 5
    const [reported, takenDown] = await Promise.all([
      new Promise((resolve) => setTimeout(resolve, round % 2 === 0 ? lag : 0)).then(() =>
        call(a.base, 'ready', `/apis/v2/replay-servers/device/replays/${id}/status`, { method: 'PUT', headers: device, json: ready })
      ),
      new Promise((resolve) => setTimeout(resolve, round % 2 === 0 ? 0 : lag)).then(() =>
        call(b.base, 'takedown', `/apis/v2/admin/replays/${id}/takedown`, { method: 'POST', headers: asStaff, json: { reason: `race ${round}` } })
      )
    ])
    t.equal(takenDown.status, 200, `round ${round}: the takedown stands (${takenDown.text})`)
    t.ok([200, 409].includes(reported.status), `round ${round}: READY is accepted or refused as final (${reported.status})`)
    if (reported.status === 200) readyFirst++
    const after = await call(a.base, 'replay get', `/apis/v2/replays/${id}`, { headers: asPlayer })
    t.equal(after.body.status, 'TAKEN_DOWN', `round ${round}: TAKEN_DOWN`)
    t.notOk('downloadUrl' in after.body, `round ${round}: no link`)
    t.notOk(existsSync(clip), `round ${round}: the clip is gone from the bucket`)
  }
  t.comment(`${readyFirst} READY first, ${RACES - readyFirst} takedown first`)
  t.same(answers.filter((r) => r.status >= 500).map((r) => `${r.label}: ${r.status} ${r.body.slice(0, 200)}`), [], 'no answer was a 5xx')
  for (const server of [a, b]) t.notMatch(server.output(), /database is locked|SQLITE_BUSY/)
  t.equal(await a.stop(), 0)
  t.equal(await b.stop(), 0)
})
