// `pnpm bench:evening`: a club's busiest evening, everything at once. Seeds the benchmark's volumes
// (bench/src/seed.ts, scenarios.ts, memberships.ts, packages.ts), starts the server as `pnpm start`
// starts it (one process on SQLite; two on one PostgreSQL with BENCH_DATABASE=postgres), and drives
// it open-loop (bench/src/open-loop.ts) with boxes polling as the agent does (each poll signed by the
// box's key with the previous poll's round trip, a health report with the first and every five
// minutes after), members reading, staff editing,
// redemptions and replay requests at fixed rates, with a CHARGE job in the middle. Then the step
// search: the same mix at 2x, 3x, … until a read route's p99 reaches 50 ms. Prints tables and
// writes JSON under bench/results/. Never fails on a number.
import { randomUUID } from 'node:crypto'
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Pool } from 'undici'
import { migrateToLatest, openDatabase, type Db } from '@club/server/db/database'
import { deviceTokenKey } from '@club/server/replay-servers/service'
import { setReplayServerConfig } from '@club/server/replay-servers/decisions'
import { BENCH_SERVER_ENV, cpuTimes, machine, processCpuSeconds, repoRoot, startBenchPostgres, startLoggingTo, table, writeResults, type Started } from './harness.js'
import { seedMemberships } from './memberships.js'
import { pools, runMix, seededRandom, zipf, type MixResult, type Stream } from './open-loop.js'
import { seedPackages } from './packages.js'
import { seedUsers } from './seed.js'
import type { BoxHealthReport } from '@club/contract'
import { cameraNumbers, seedReplayServers, seedVenue, signedPollQuery, statusPath, TemplateSeeder, type KeyedBox } from './scenarios.js'

/** 1 = the benchmark's volumes (1,000 users, 5,000 boxes, 100,000 templates); 0.05 for a quick run. */
const SCALE = Number(process.env.BENCH_SCALE ?? 1)
/**
 * Templates to seed, when not SCALE x 100,000: seeding them through the services takes about 90 s per
 * 100,000 on SQLite but about 17 ms each on this machine's PostgreSQL (48 minutes for 100,000).
 */
const TEMPLATES = Number(process.env.BENCH_EVENING_TEMPLATES ?? Math.round(100_000 * SCALE))
/** Length of the 1x run; every step of the search after it lasts BENCH_EVENING_STEP_SECONDS. */
const SECONDS = Number(process.env.BENCH_EVENING_SECONDS ?? 180)
const STEP_SECONDS = Number(process.env.BENCH_EVENING_STEP_SECONDS ?? 60)
/** The step search stops here even if every step holds (the members' packages hold 10,000 items each). */
const MAX_MULTIPLE = Number(process.env.BENCH_EVENING_MAX_MULTIPLE ?? 8)
/** Seconds of the mix at 1x before the first measured run, not counted (V8 optimises; the caches fill). */
const WARMUP = Number(process.env.BENCH_EVENING_WARMUP ?? 15)
const POSTGRES = process.env.BENCH_DATABASE === 'postgres'
/** Server processes: two on PostgreSQL (the issue's "two server processes"), one on SQLite. */
const PROCESSES = Number(process.env.BENCH_EVENING_PROCESSES ?? (POSTGRES ? 2 : 1))
/** Node arguments for the server processes, e.g. "--trace-gc" (their log is copied out at the end when BENCH_EVENING_KEEP_LOGS names a folder). */
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean)
/** The bound every read route's p99 is held under for a multiple to count as held. */
const READ_P99_MS = 50
const PASSWORD_HASH_COST = 65536
/** BENCH_EVENING_HEALTH=0: the boxes' polls carry no health report (still signed, with their round trip), to compare. */
const HEALTH = process.env.BENCH_EVENING_HEALTH !== '0'
/** Only the streams whose route contains this text (or any of several separated by `|`), e.g. "status" for the polls alone; no CHARGE job then. */
const ONLY = process.env.BENCH_EVENING_ONLY
/** Cameras in each approved box (all RECORDING in its reports). */
const CAMERAS = 4
/**
 * A box that is fine sends its health report at most this long apart (agent/src/health/send.ts,
 * HEALTH_HEARTBEAT_MS), besides its first poll and any change.
 */
const HEALTH_HEARTBEAT_SECONDS = 300
/** Seconds of the server idle (nothing sent) before the warm-up, to take from its CPU in a run of some streams only (BENCH_EVENING_ONLY). */
const IDLE_SECONDS = 10

/**
 * The mix at 1x, in requests per second. The issue fixes the writes (patches 1/s, redemptions 20/s,
 * replays 2/s) and the polls (every box at its advised interval); the member and staff reads are
 * this bench's choice: about ten reads for each write, most of them the app's opening screens.
 */
const RATES = {
  usersCurrent: 40,
  subscriptions: 15,
  packages: 15,
  templateRead: 20,
  areaList: 10,
  searchList: 5,
  templatePatch: 1,
  redemption: 20,
  replay: 2
}

/** Zipf exponent of the keys (users, templates, areas, search terms, courts) and of the pages asked for. */
const KEY_SKEW = 1
const PAGE_SKEW = 2

const SPORTS = ['padel', 'tennis', 'squash', 'badminton', 'pickleball', 'table tennis', 'volleyball', 'basketball', 'futsal', 'netball']
const GROUPS = ['junior', 'senior', 'ladies', 'mens', 'mixed', 'beginners', 'improvers', 'advanced', 'veterans', 'family']
const KINDS = ['clinic', 'league', 'social', 'lesson', 'tournament', 'camp']

/**
 * What staff type into the search box: whole words and word beginnings (a sport, a group, a kind,
 * "sport group", "group kind", the first four letters of a sport), which every search index finds.
 */
const SEARCH_TERMS = [
  ...SPORTS,
  ...GROUPS,
  ...KINDS,
  ...SPORTS.map((s) => s.slice(0, 4)),
  ...SPORTS.flatMap((s) => GROUPS.map((g) => `${s} ${g}`)),
  ...GROUPS.flatMap((g) => KINDS.map((k) => `${g} ${k}`))
]

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits

interface BenchDatabase {
  url: string
  /** CPU seconds of the database's own processes so far (PostgreSQL's postmaster and backends), if any. */
  cpuSeconds(): number | undefined
  stop(): void
}

/** SQLite in the temporary folder, or a throwaway PostgreSQL cluster (scripts/postgres.mjs). */
async function benchDatabase(dir: string): Promise<BenchDatabase> {
  if (!POSTGRES) return { url: join(dir, 'club.db'), cpuSeconds: () => undefined, stop: () => {} }
  const cluster = await startBenchPostgres()
  const postmaster = Number(readFileSync(join(cluster.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0])
  return { url: cluster.url, cpuSeconds: () => clusterCpuSeconds(postmaster), stop: () => cluster.stop() }
}

/** The postmaster's CPU, its ended children's, and its live children's (the backends) from /proc. */
function clusterCpuSeconds(postmaster: number): number | undefined {
  const fields = (pid: number | string) => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  }
  try {
    const own = fields(postmaster)
    // utime, stime, cutime, cstime are fields 14-17 of stat: 11-14 after the state.
    let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14])
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
      try {
        const f = fields(pid)
        if (Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12])
      } catch {
        // ended while read
      }
    }
    return ticks / 100
  } catch {
    return undefined
  }
}

/** Four courts per area, filmed by the area's first box (one per camera): what replay requests ask for. */
async function seedCourts(db: Db, areaIds: string[]): Promise<string[]> {
  const clock = { now: () => new Date() }
  const deps = { clock, tokenKey: await deviceTokenKey(db, { DEVICE_TOKEN_SECRET: '' }, clock), pollIntervalSeconds: 30 }
  const now = new Date().toISOString()
  const courtIds: string[] = []
  for (const [a, areaId] of areaIds.entries()) {
    const box = await db.selectFrom('replay_servers').select('id').where('area_id', '=', areaId).where('status', '=', 'APPROVED').orderBy('created_at').executeTakeFirst()
    if (!box) continue
    const courts = [0, 1, 2, 3].map((c) => ({ id: randomUUID(), area_id: areaId, pod_id: null, name: `Court ${c + 1}`, slug: `court-${a}-${c}`, created_at: now, updated_at: now }))
    await db.insertInto('courts').values(courts).execute()
    courtIds.push(...courts.map((c) => c.id))
    const cameras = cameraNumbers(CAMERAS).map((n) => ({ id: `cam-${n}`, name: `Court ${n}`, feed: `rtsp://10.1.${a}.${n}:554/stream`, courtIds: [courts[(n - 1) % courts.length]!.id] }))
    await setReplayServerConfig(db, box.id, { cleanupEnabled: true, cameras }, deps)
  }
  return courtIds
}

/** Polls every box once as it would after starting (signed, with its health report): its ETag and the interval the server advises. */
async function firstPolls(url: string, boxes: Box[]): Promise<{ etags: Array<string | undefined>; pollInterval: number }> {
  const etags: Array<string | undefined> = []
  let pollInterval = 30
  for (let i = 0; i < boxes.length; i += 50) {
    const chunk = await Promise.all(
      boxes.slice(i, i + 50).map(async (box, k) => {
        const sent = performance.now()
        const res = await fetch(`${url}${pollPath(box, i + k, HEALTH)}`)
        if (res.status !== 200) throw new Error(`the first status poll of a seeded box answered ${res.status}: ${await res.text()}`)
        box.roundTripMs = Math.round(performance.now() - sent)
        const answer = (await res.json()) as { pollInterval?: number }
        if (answer.pollInterval) pollInterval = answer.pollInterval
        return res.headers.get('etag') ?? undefined
      })
    )
    etags.push(...chunk)
  }
  return { etags, pollInterval }
}

/** Polls sent with a health report so far (the measured runs report their share). */
let healthPollsSent = 0

/** A polling box as the agent is: its key, its polls so far, when the last was sent and how long its last answer took. */
interface Box {
  key: KeyedBox
  polls: number
  sentAt: number
  roundTripMs: number | undefined
}

/**
 * What a box that is fine reports (contract BoxHealthReport): every camera RECORDING with a segment
 * finished in the last few seconds, a disk of 1 TB about half full of recordings, the agent's memory
 * and uptime. Figures differ a little from box to box, as they would.
 */
function healthReport(b: number, now: number): BoxHealthReport {
  const freeBytes = 300_000_000_000 + (b % 200) * 1_000_000_000
  return {
    cameras: cameraNumbers(CAMERAS).map((n) => ({ id: `cam-${n}`, state: 'RECORDING' as const, lastSegmentAt: new Date(now - ((b + n) % 10) * 1000).toISOString(), restarts: 0, problem: null })),
    disk: { freeBytes, totalBytes: 1_000_000_000_000, recordingsBytes: 1_000_000_000_000 - freeBytes - 40_000_000_000, hoursKept: Math.round((1_000_000_000_000 - 40_000_000_000) / 2_000_000_000) / 10 },
    temperatureCelsius: 44 + (b % 12),
    memoryBytes: 80_000_000 + (b % 50) * 100_000,
    uptimeSeconds: 86_400 + Math.round(now / 1000) % 86_400
  }
}

/**
 * Box b's poll as the agent sends it: signed afresh, with the previous poll's round trip (none on the
 * first), and its health report when `withHealth`.
 */
function pollPath(box: Box, b: number, withHealth: boolean): string {
  const health = withHealth ? JSON.stringify(healthReport(b, Date.now())) : undefined
  const roundTrip = box.roundTripMs === undefined ? '' : `&roundTripMs=${box.roundTripMs}`
  return `${statusPath(box.key.serverId)}?version=1.0.0&${signedPollQuery(box.key, health)}${roundTrip}`
}

interface Population {
  boxes: Box[]
  etags: Array<string | undefined>
  pollInterval: number
  members: Array<{ token: string; packageId: string }>
  staffTokens: string[]
  templateIds: string[]
  areaIds: string[]
  areaPages: number
  courtIds: string[]
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const ok = (...codes: number[]) => (status: number) => codes.includes(status)

/** The evening's streams at 1x: who asks for what, with which key. */
function streams(p: Population): Stream[] {
  const random = seededRandom(20261126)
  const member = zipf(p.members.length, KEY_SKEW, random)
  const staff = zipf(p.staffTokens.length, KEY_SKEW, random)
  const template = zipf(p.templateIds.length, KEY_SKEW, random)
  const area = zipf(p.areaIds.length, KEY_SKEW, random)
  const term = zipf(SEARCH_TERMS.length, KEY_SKEW, random)
  const court = zipf(p.courtIds.length, KEY_SKEW, random)
  // Pages in order of how often they are asked for: page 1 most (not shuffled).
  const page = (pages: number) => {
    const weights = Array.from({ length: pages }, (_, k) => 1 / (k + 1) ** PAGE_SKEW)
    const total = weights.reduce((a, b) => a + b, 0)
    return () => {
      let u = random() * total
      for (let k = 0; k < pages; k++) if ((u -= weights[k]!) <= 0) return k + 1
      return pages
    }
  }
  const areaPage = page(p.areaPages)
  const searchPage = page(10)
  const run = randomUUID().slice(0, 8)
  const heartbeatPolls = Math.max(1, Math.round(HEALTH_HEARTBEAT_SECONDS / p.pollInterval))
  const all: Stream[] = [
    {
      route: 'GET replay-servers/device/{serverId}/status',
      read: true,
      rate: p.boxes.length / p.pollInterval,
      request: (i) => {
        const b = i % p.boxes.length
        const box = p.boxes[b]!
        const etag = p.etags[b]
        // After the first poll (before the warm-up), every heartbeat-th poll of a box carries its
        // report, each box at its own phase so that the reports are spread evenly.
        box.polls++
        const withHealth = HEALTH && (box.polls + b) % heartbeatPolls === 0
        if (withHealth) healthPollsSent++
        box.sentAt = performance.now()
        return { method: 'GET', path: pollPath(box, b, withHealth), ...(etag ? { headers: { 'if-none-match': etag } } : {}) }
      },
      ok: ok(200, 304),
      answered: (i, status, headers) => {
        const box = p.boxes[i % p.boxes.length]!
        box.roundTripMs = Math.round(performance.now() - box.sentAt)
        if (status === 200 && typeof headers.etag === 'string') p.etags[i % p.boxes.length] = headers.etag
      }
    },
    { route: 'GET users/current', read: true, rate: RATES.usersCurrent, request: () => ({ method: 'GET', path: '/apis/v2/users/current', headers: bearer(p.members[member()]!.token) }), ok: ok(200) },
    {
      route: 'GET membership-subscriptions',
      read: true,
      rate: RATES.subscriptions,
      request: () => ({ method: 'GET', path: '/apis/v2/membership-subscriptions', headers: bearer(p.members[member()]!.token) }),
      ok: ok(200)
    },
    { route: 'GET packages', read: true, rate: RATES.packages, request: () => ({ method: 'GET', path: '/apis/v2/packages', headers: bearer(p.members[member()]!.token) }), ok: ok(200) },
    {
      route: 'GET templates/{id}',
      read: true,
      rate: RATES.templateRead,
      request: () => ({ method: 'GET', path: `/apis/v2/templates/${p.templateIds[template()]}`, headers: bearer(p.staffTokens[staff()]!) }),
      ok: ok(200)
    },
    {
      route: 'GET templates?areaId=',
      read: true,
      rate: RATES.areaList,
      request: () => ({ method: 'GET', path: `/apis/v2/templates?ipp=20&areaId=${p.areaIds[area()]}&page=${areaPage()}`, headers: bearer(p.staffTokens[staff()]!) }),
      ok: ok(200)
    },
    {
      route: 'GET templates?search=',
      read: true,
      rate: RATES.searchList,
      request: () => ({
        method: 'GET',
        path: `/apis/v2/templates?ipp=20&search=${encodeURIComponent(SEARCH_TERMS[term()]!)}&page=${searchPage()}`,
        headers: bearer(p.staffTokens[staff()]!)
      }),
      ok: ok(200)
    },
    {
      route: 'PATCH templates/{id}',
      read: false,
      rate: RATES.templatePatch,
      request: (i) => ({
        method: 'PATCH',
        path: `/apis/v2/templates/${p.templateIds[Math.floor(random() * p.templateIds.length)]}`,
        headers: bearer(p.staffTokens[staff()]!),
        body: { description: `Edited on the evening, ${run} ${i}.` }
      }),
      ok: ok(200)
    },
    {
      route: 'POST packages/{id}/redemptions',
      read: false,
      rate: RATES.redemption,
      request: (i) => {
        const m = p.members[member()]!
        return {
          method: 'POST',
          path: `/apis/v2/packages/${m.packageId}/redemptions`,
          headers: bearer(m.token),
          body: { type: 'REPLAY', target: { replay: { id: `evening-${run}-${i}` } } }
        }
      },
      ok: ok(200, 201)
    },
    {
      route: 'POST replays',
      read: false,
      rate: RATES.replay,
      request: () => ({ method: 'POST', path: '/apis/v2/replays', headers: bearer(p.members[member()]!.token), body: { court: { id: p.courtIds[court()] } } }),
      ok: ok(201)
    }
  ]
  const only = ONLY?.split('|')
  return only ? all.filter((s) => only.some((o) => s.route.includes(o))) : all
}

/** Prometheus counters of every server: read cache look-ups by cache and result, status polls by answer. */
async function scrape(urls: string[]): Promise<Map<string, number>> {
  const totals = new Map<string, number>()
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text()
    for (const line of text.split('\n')) {
      const match = /^(club_read_cache_lookups_total|club_replay_status_polls_total)\{([^}]*)\} (\d+(?:\.\d+)?)$/.exec(line)
      if (match) totals.set(`${match[1]}{${match[2]}}`, (totals.get(`${match[1]}{${match[2]}}`) ?? 0) + Number(match[3]))
    }
  }
  return totals
}

/** Hit rate per read cache between two scrapes, and the share of polls answered 304. */
function hitRates(before: Map<string, number>, after: Map<string, number>) {
  const delta = (key: string) => (after.get(key) ?? 0) - (before.get(key) ?? 0)
  const caches = new Set([...after.keys()].map((k) => /cache="([^"]+)"/.exec(k)?.[1]).filter((c): c is string => c !== undefined))
  const rates: Record<string, { hits: number; misses: number; hitRate: number | null }> = {}
  for (const cache of caches) {
    const hits = delta(`club_read_cache_lookups_total{cache="${cache}",result="hit"}`)
    const misses = delta(`club_read_cache_lookups_total{cache="${cache}",result="miss"}`)
    rates[cache] = { hits, misses, hitRate: hits + misses > 0 ? round(hits / (hits + misses), 3) : null }
  }
  const p304 = delta('club_replay_status_polls_total{answer="304"}')
  const p200 = delta('club_replay_status_polls_total{answer="200"}')
  return { caches: rates, statusPolls: { answered304: p304, answered200: p200, share304: p304 + p200 > 0 ? round(p304 / (p304 + p200), 3) : null } }
}

interface RunReport extends MixResult {
  held: boolean
  loadAverage: { before: number; after: number }
  /** Percent of one core over the run. */
  cpu: { servers: Array<number | undefined>; database?: number; generator: number; machineBusy?: number }
  cachesAndPolls: ReturnType<typeof hitRates>
  /** The servers' CPU over the run divided by the requests answered (every route together). */
  serverCpuMicrosPerRequest?: number
  /**
   * How often migration 0008's status change counter moved: each move drops every box's kept poll
   * answer (replay-servers/status-polls.ts), so the next poll of each box reads its record afresh.
   */
  statusChanges: { moves: number; perSecond: number }
  /** Polls sent with a health report during the run. */
  healthPolls: number
  chargeJob?: { seconds: number; status: number; counts?: Record<string, number>; error?: string }
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'club-evening-'))
  const database = await benchDatabase(dir)
  const started: Started[] = []
  let clients: Pool[] = []
  const env = {
    ...BENCH_SERVER_ENV,
    // The seeded members and courts are fewer than an evening of 2 replays per second would spread over.
    REPLAY_MEMBER_RATE_LIMIT_MAX: '1000000000',
    REPLAY_COURT_RATE_LIMIT_MAX: '1000000000'
  }
  const load1 = loadavg()[0]!
  try {
    process.stdout.write(`seeding ${POSTGRES ? 'PostgreSQL' : 'SQLite'} (scale ${SCALE})…\n`)
    const seedStarted = performance.now()
    const db = openDatabase(database.url)
    await migrateToLatest(db)
    const users = await seedUsers(db, Math.max(10, Math.round(1000 * SCALE)), PASSWORD_HASH_COST)
    const roles = await db.selectFrom('users').select(['id', 'email', 'role']).execute()
    const byEmail = new Map(roles.map((u) => [u.email, u]))
    const staffIds = roles.filter((u) => u.role !== 'member').map((u) => u.id)
    const staffTokens = users.accessTokens.filter((_, i) => i % 10 === 0)
    const readers = users.emails.map((email, i) => ({ user: byEmail.get(email)!, token: users.accessTokens[i]! })).filter((r) => r.user.role === 'member').map((r) => ({ userId: r.user.id, token: r.token }))
    const venue = await seedVenue(db)
    const pending: string[] = []
    // Registered with a key each, as the agent registers now: their polls must be signed.
    const keys = new Map<string, KeyedBox>()
    const approved = await seedReplayServers(db, Math.round(5000 * SCALE), venue, pending, { audience: 'http://127.0.0.1', cameras: CAMERAS, keys })
    // One subscription per member, all due on one date: the CHARGE job in the middle renews them.
    await seedMemberships(db, readers.length, readers)
    const packages = await seedPackages(db, readers)
    const courtIds = await seedCourts(db, venue.areaIds)
    const templates = new TemplateSeeder(db, venue, staffIds)
    await templates.seedTo(Math.max(10, TEMPLATES))
    const seedSeconds = round((performance.now() - seedStarted) / 1000)
    process.stdout.write(
      `  ${users.emails.length} users, ${approved.length + pending.length} boxes (${pending.length} pending), ${readers.length} subscriptions and packages, ` +
        `${courtIds.length} courts, ${templates.ids.length} templates in ${seedSeconds}s\n`
    )

    for (let n = 0; n < PROCESSES; n++) {
      const server = await startLoggingTo(join(dir, `server-${n}.log`), join(repoRoot, 'server', 'dist', 'main.js'), { ...env, DATABASE_URL: database.url }, SERVER_NODE_ARGS)
      started.push(server)
    }
    const urls = started.map((s) => s.url)
    const boxes: Box[] = [...approved, ...pending].map((id) => ({ key: keys.get(id)!, polls: 0, sentAt: 0, roundTripMs: undefined }))
    const { etags, pollInterval } = await firstPolls(urls[0]!, boxes)
    const population: Population = {
      boxes,
      etags,
      pollInterval,
      members: packages.redeemable.map((p) => ({ token: p.token, packageId: p.id })),
      staffTokens,
      templateIds: templates.ids,
      areaIds: venue.areaIds,
      areaPages: Math.max(1, Math.floor(templates.perArea() / 20)),
      courtIds
    }
    await db.destroy()
    const mix = streams(population)
    clients = pools(urls, 128)

    /** The CHARGE job by the admin route, as of the earliest renewal date (the next cycle on each later run). */
    const chargeJob = async (report: RunReport, date: string) => {
      const t = performance.now()
      try {
        const res = await fetch(`${urls[0]}/apis/v2/admin/membership-jobs`, {
          method: 'POST',
          headers: { ...bearer(users.adminToken), 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'CHARGE', date })
        })
        const answer = (await res.json()) as { job?: { counts?: Record<string, number> }; message?: string }
        report.chargeJob = { seconds: round((performance.now() - t) / 1000, 2), status: res.status, counts: answer.job?.counts, ...(answer.message ? { error: answer.message } : {}) }
      } catch (err) {
        report.chargeJob = { seconds: round((performance.now() - t) / 1000, 2), status: 0, error: (err as Error).message }
      }
    }

    const measure = async (multiple: number, seconds: number): Promise<RunReport> => {
      // Read before the run, on a connection of its own that is closed again: the bench's own
      // connection stays out of the measured minutes (on SQLite any other connection's commit moves
      // every cache's stamp, so it must not even look like one).
      const reader = openDatabase(database.url)
      const due = await reader.selectFrom('membership_subscriptions').select((eb) => eb.fn.min('next_charge_date').as('date')).executeTakeFirst()
      const changesBefore = await statusChangeCount(reader)
      await reader.destroy()
      const before = await scrape(urls)
      const load = loadavg()[0]!
      const servers = started.map((s) => processCpuSeconds(s.child.pid))
      const dbCpu = database.cpuSeconds()
      const own = process.cpuUsage()
      const host = cpuTimes()
      const idle = machineIdle()
      const t = performance.now()
      const healthBefore = healthPollsSent
      const partial: Partial<RunReport> = {}
      const charge = ONLY ? [] : [{ atSeconds: seconds / 2, run: () => chargeJob(partial as RunReport, String(due?.date ?? new Date().toISOString())) }]
      const result = await runMix(clients, mix, multiple, seconds, charge)
      const wall = (performance.now() - t) / 1000
      const after = openDatabase(database.url)
      const changesAfter = await statusChangeCount(after)
      await after.destroy()
      const serverSeconds = started.map((s, n) => {
        const a = servers[n]
        const b = processCpuSeconds(s.child.pid)
        return a === undefined || b === undefined ? undefined : b - a
      })
      const answered = result.routes.reduce((n, r) => n + r.requests - r.errors, 0)
      const share = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : round(((b - a) / wall) * 100))
      const hostAfter = cpuTimes()
      const idleAfter = machineIdle()
      const ownAfter = process.cpuUsage(own)
      const report: RunReport = {
        ...result,
        // A read answered fast with an error is no read held.
        held: result.routes.filter((r) => r.read).every((r) => r.p99Ms < READ_P99_MS && r.errors === 0),
        loadAverage: { before: load, after: loadavg()[0]! },
        cpu: {
          servers: started.map((s, n) => share(servers[n], processCpuSeconds(s.child.pid))),
          ...(dbCpu !== undefined ? { database: share(dbCpu, database.cpuSeconds()) } : {}),
          generator: round(((ownAfter.user + ownAfter.system) / 1e6 / wall) * 100),
          ...(host && hostAfter && idle !== undefined && idleAfter !== undefined
            ? { machineBusy: round((1 - (idleAfter - idle) / (hostAfter.total - host.total)) * 100) }
            : {})
        },
        cachesAndPolls: hitRates(before, await scrape(urls)),
        serverCpuMicrosPerRequest: serverSeconds.every((x) => x !== undefined) && answered > 0 ? Math.round((serverSeconds.reduce((a, b) => a! + b!, 0)! / answered) * 1e6) : undefined,
        healthPolls: healthPollsSent - healthBefore,
        statusChanges: { moves: changesAfter - changesBefore, perSecond: round((changesAfter - changesBefore) / wall, 2) },
        ...partial
      }
      print(report)
      return report
    }

    // With some streams only, what the server spends doing nothing (its timers, the sightings flush)
    // is measured first, to be taken from the run's CPU.
    let idleServerCpu: Array<number | undefined> | undefined
    if (ONLY) {
      const before = started.map((s) => processCpuSeconds(s.child.pid))
      await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000))
      idleServerCpu = started.map((s, n) => {
        const a = before[n]
        const b = processCpuSeconds(s.child.pid)
        return a === undefined || b === undefined ? undefined : round(((b - a) / IDLE_SECONDS) * 100, 2)
      })
      process.stdout.write(`only ${mix.map((m) => m.route).join(', ')}; the server idle for ${IDLE_SECONDS}s: ${idleServerCpu.join(' + ')}% of a core\n`)
    }
    if (WARMUP > 0) {
      process.stdout.write(`warm-up: ${WARMUP}s of the mix at 1x (not counted)…\n`)
      await runMix(clients, mix, 1, WARMUP)
    }
    process.stdout.write(`the evening at 1x for ${SECONDS}s, ${PROCESSES} server process(es), boxes polling every ${pollInterval}s…\n`)
    const runs: RunReport[] = [await measure(1, SECONDS)]
    // The step search: each multiple for STEP_SECONDS until a read route's p99 reaches the bound.
    let held = runs[0]!.held ? 1 : 0
    for (let multiple = 2; held === multiple - 1 && multiple <= MAX_MULTIPLE; multiple++) {
      process.stdout.write(`\nstep: the mix at ${multiple}x for ${STEP_SECONDS}s…\n`)
      const step = await measure(multiple, STEP_SECONDS)
      runs.push(step)
      if (step.held) held = multiple
    }
    const load2 = loadavg()[0]!
    process.stdout.write(
      `\nheld: ${held > 0 ? `${held}x` : 'not even 1x'} (every read route's p99 under ${READ_P99_MS} ms${held === MAX_MULTIPLE ? `; the search stops at ${MAX_MULTIPLE}x` : ''}). ` +
        `Load average (1 min) before ${load1.toFixed(2)}, after ${load2.toFixed(2)} on ${cpus().length} cores\n`
    )
    const file = writeResults(POSTGRES ? 'evening-postgres' : 'evening', {
      database: POSTGRES ? `PostgreSQL (a throwaway cluster on this machine), ${PROCESSES} server processes` : `SQLite, ${PROCESSES} server process`,
      machine: machine(),
      scale: SCALE,
      templates: templates.ids.length,
      seedSeconds,
      pollIntervalSeconds: pollInterval,
      polls: { signed: true, healthReports: HEALTH, cameras: CAMERAS, healthHeartbeatSeconds: HEALTH_HEARTBEAT_SECONDS },
      ...(ONLY ? { only: ONLY, idleServerCpu } : {}),
      ratesAt1x: Object.fromEntries(mix.map((s) => [s.route, round(s.rate, 2)])),
      readP99BoundMs: READ_P99_MS,
      heldMultiple: held,
      loadAverage: { before: load1, after: load2 },
      runs
    })
    process.stdout.write(`results written to ${file}\n`)
  } finally {
    // destroy, not close: close waits for every queued request, and an overloaded run leaves thousands.
    await Promise.all(clients.map((c) => c.destroy()))
    for (const s of started) await s.stop()
    database.stop()
    const keep = process.env.BENCH_EVENING_KEEP_LOGS
    if (keep) for (const log of readdirSync(dir).filter((f) => f.startsWith('server-'))) cpSync(join(dir, log), join(keep, log))
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Migration 0008's status change counter, read on `db`. */
async function statusChangeCount(db: Db): Promise<number> {
  const row = await db.selectFrom('replay_server_status_changes').select('counter').where('id', '=', 1).executeTakeFirstOrThrow()
  return Number(row.counter)
}

/** The machine's idle time (idle + iowait) from /proc/stat, in the same ticks as cpuTimes().total. */
function machineIdle(): number | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
    return fields[3]! + fields[4]!
  } catch {
    return undefined
  }
}

function print(r: RunReport) {
  process.stdout.write(
    `\n${r.multiple}x for ${r.seconds}s: load ${r.loadAverage.before.toFixed(2)} → ${r.loadAverage.after.toFixed(2)}; CPU (% of a core) servers ${r.cpu.servers.join(' + ')}` +
      `${r.cpu.database !== undefined ? `, PostgreSQL ${r.cpu.database}` : ''}, load generator ${r.cpu.generator}, machine busy ${r.cpu.machineBusy ?? '?'}% of all cores; ` +
      `send lag p99 ${r.sendLagMs.p99} ms; ${r.held ? 'held' : 'NOT held'}\n` +
      `server CPU per request ${r.serverCpuMicrosPerRequest ?? '?'} µs; polls with a health report ${r.healthPolls}; status change counter moved ${r.statusChanges.moves} times (${r.statusChanges.perSecond}/s)\n` +
      `${table(
        r.routes.map((x) => ({
          route: x.route,
          'req/s': x.throughput,
          'p50 ms': x.p50Ms,
          'p99 ms': x.p99Ms,
          'p99.9 ms': x.p999Ms,
          'max ms': x.maxMs,
          statuses: Object.entries(x.statuses).map(([s, n]) => `${s}:${n}`).join(' '),
          errors: x.errors
        }))
      )}\n` +
      `read caches (hit rate): ${Object.entries(r.cachesAndPolls.caches).map(([c, v]) => `${c} ${v.hitRate === null ? '-' : `${Math.round(v.hitRate * 100)}%`} of ${v.hits + v.misses}`).join(', ')}; ` +
      `status polls answered 304: ${r.cachesAndPolls.statusPolls.share304 === null ? '-' : `${Math.round(r.cachesAndPolls.statusPolls.share304 * 100)}%`}\n` +
      (r.chargeJob ? `CHARGE job: ${r.chargeJob.status} in ${r.chargeJob.seconds}s ${JSON.stringify(r.chargeJob.counts ?? {})}${r.chargeJob.error ? ` ${r.chargeJob.error}` : ''}\n` : '') +
      r.routes.filter((x) => x.errorSamples.length > 0).map((x) => `  ${x.route} errors: ${x.errorSamples.slice(0, 2).join(' | ')}\n`).join('')
  )
}

await main()
