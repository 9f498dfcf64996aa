// `pnpm bench`: seeds a temporary database with realistic volumes, starts the real server as
// `pnpm start` does (server/dist/main.js, LOG_LEVEL=info, stdout to a file) and two bare Fastify
// baselines (no logger; Fastify's default pino logger at info), drives them with autocannon, prints
// a table and writes JSON under bench/results/. Never fails on a number.
//
// The machine may be shared, so every route run follows runs of both baselines of its own, BENCH_REPEAT
// times (default 3), and each share is the median over those pairs; the load average and the
// host's steal time are printed beside each pair.
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { migrateToLatest, openDatabase } from '@club/server/db/database'
import { BENCH_SERVER_ENV, cpuTimes, fileSize, load, machine, startBenchPostgres, startLoggingTo, repoRoot, stealPercent, table, writeResults, type LoadResult, type Started } from './harness.js'
import { membershipScenario, seedMemberships, timeChargeJob } from './memberships.js'
import { offeringListScenario, redemptionRetryScenario, redemptionScenario, seedPackages } from './packages.js'
import { BENCH_PASSWORD, seedUsers } from './seed.js'
import { timeWebhookDelivery, type WebhookLatency } from './webhooks.js'
import {
  collectEtags,
  scenarios as extraScenarios,
  seedKeyedReplayServers,
  seedWaitingReplays,
  SEARCH_TERM,
  seedReplayServers,
  seedVenue,
  TemplateSeeder,
  type Scenario,
  type Seeded
} from './scenarios.js'

const DURATION = Number(process.env.BENCH_DURATION ?? 10)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10)
/** 1 = the volumes the issue names; a smaller factor gives a quick run. */
const SCALE = Number(process.env.BENCH_SCALE ?? 1)
const REPEAT = Math.max(1, Number(process.env.BENCH_REPEAT ?? 3))
/**
 * Runs only the scenarios whose name contains this text, or one of several separated by `|` (and
 * skips the growth check), for profiling one route.
 */
const ONLY = process.env.BENCH_ONLY
/** BENCH_GROWTH=0 skips the growth check's smaller sizes (the 100,000 figures still come from the main run). */
const GROWTH = process.env.BENCH_GROWTH !== '0'
const only = (name: string) => !ONLY || ONLY.split('|').some((part) => name.includes(part))
/** Node arguments for the server process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof". */
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean)
const PASSWORD_HASH_COST = 65536

export type { Scenario }

const pick = <T>(list: T[], i: number): T => list[i % list.length]!

/** The server's read caches turned off, for the growth check and the uncached rows. */
const CACHES_OFF = { READ_CACHE_ENTRIES: '0' }
const UNCACHED = ', caches off'

const foundation: Scenario[] = [
  {
    name: 'GET users/current (x-api-key)',
    cached: true,
    target: 0.45,
    pinoTarget: 0.6,
    run: (server, seeded, durationSeconds, connections) =>
      load({
        name: 'users/current',
        url: server.url,
        paths: ['/apis/v2/users/current'],
        headers: (i) => ({ 'x-api-key': pick(seeded.users.apiKeys, i) }),
        durationSeconds,
        connections
      })
  },
  {
    name: 'POST oauth2/token (password grant)',
    run: (server, seeded, durationSeconds) =>
      load({
        name: 'token',
        url: server.url,
        method: 'POST',
        paths: ['/apis/v2/oauth2/token'],
        body: new URLSearchParams({ grant_type: 'password', username: seeded.users.emails[1]!, password: BENCH_PASSWORD }).toString(),
        durationSeconds,
        connections: 4
      })
  }
]

interface Pair {
  bareRequestsPerSecond: number
  pinoRequestsPerSecond: number
  requestsPerSecond: number
  /** The 1-minute load average when the pair started, and the host's steal time during it (/proc/stat). */
  loadAverage: number
  stealPercent: number | undefined
  /** CPU time per request of each process during its run (µs; /proc/<pid>/stat). */
  cpuMicrosPerRequest: { bare?: number; pino?: number; route?: number }
}

interface Row extends LoadResult {
  route: string
  /** The bare (no logger) baseline of the kept pair. */
  baselineRequestsPerSecond: number
  pinoBaselineRequestsPerSecond: number
  /** Median over the pairs of the route's share of each baseline. */
  ratio: number
  ratioPino: number
  /**
   * Median over the pairs of the bare (pino) baseline's CPU time per request over the route's: what
   * share of the baseline's throughput the route would reach with a core to itself.
   */
  cpuRatio?: number
  cpuRatioPino?: number
  target: string
  pairs: Pair[]
  /** Bytes the server wrote to its log per request served, over the measured runs. */
  logBytesPerRequest: number
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits
const percent = (n: number) => `${Math.round(n * 100)}%`

interface Baselines {
  bare: Started
  pino: Started
}

function verdict(scenario: Scenario, ratio: number, ratioPino: number, p99Ms: number): string {
  const parts: string[] = []
  const held = (what: string, ok: boolean) => parts.push(`${what}: ${ok ? 'met' : 'MISSED'}`)
  if (scenario.target !== undefined) held(`>= ${percent(scenario.target)} bare`, ratio >= scenario.target)
  if (scenario.pinoTarget !== undefined) held(`>= ${percent(scenario.pinoTarget)} pino`, ratioPino >= scenario.pinoTarget)
  if (scenario.p99Ms !== undefined) held(`p99 < ${scenario.p99Ms} ms`, p99Ms < scenario.p99Ms)
  return parts.join(', ')
}

/**
 * REPEAT pairs of the two baselines then the route, one after the other, so that each route run is
 * next to baseline runs of its own minute; each share is the median over the pairs. The run kept for
 * its latencies is the one with the median share of the bare baseline.
 */
async function measure(scenario: Scenario, baselines: Baselines, server: Started, seeded: Seeded): Promise<Row> {
  const pairs: Pair[] = []
  const runs: LoadResult[] = []
  let logBytes = 0
  let requests = 0
  for (let r = 0; r < REPEAT; r++) {
    const loadAverage = round(loadavg()[0]!, 2)
    const cpu = cpuTimes()
    const bare = await load({ name: 'bare', url: baselines.bare.url, paths: ['/baseline'], durationSeconds: DURATION, connections: CONNECTIONS })
    const pino = await load({ name: 'pino', url: baselines.pino.url, paths: ['/baseline'], durationSeconds: DURATION, connections: CONNECTIONS })
    const logBefore = fileSize(server.logFile!)
    const result = await scenario.run(server, seeded, DURATION, CONNECTIONS)
    logBytes += fileSize(server.logFile!) - logBefore
    requests += result.requests
    const pair: Pair = {
      bareRequestsPerSecond: bare.requestsPerSecond,
      pinoRequestsPerSecond: pino.requestsPerSecond,
      requestsPerSecond: result.requestsPerSecond,
      loadAverage,
      stealPercent: stealPercent(cpu, cpuTimes()),
      cpuMicrosPerRequest: { bare: bare.cpuMicrosPerRequest, pino: pino.cpuMicrosPerRequest, route: result.cpuMicrosPerRequest }
    }
    pairs.push(pair)
    runs.push(result)
    process.stdout.write(
      `  ${scenario.name} pair ${r + 1}/${REPEAT}: bare ${bare.requestsPerSecond}, pino ${pino.requestsPerSecond}, route ${result.requestsPerSecond} req/s ` +
        `(${percent(result.requestsPerSecond / bare.requestsPerSecond)} / ${percent(result.requestsPerSecond / pino.requestsPerSecond)}); ` +
        `load ${loadAverage}, steal ${pair.stealPercent ?? '?'}%; CPU µs per request ${pair.cpuMicrosPerRequest.bare}/${pair.cpuMicrosPerRequest.pino}/${pair.cpuMicrosPerRequest.route}\n`
    )
  }
  const shares = pairs.map((p) => p.requestsPerSecond / p.bareRequestsPerSecond)
  const ratio = median(shares)
  const ratioPino = median(pairs.map((p) => p.requestsPerSecond / p.pinoRequestsPerSecond))
  const kept = shares.indexOf(ratio)
  const cpuShares = (baseline: 'bare' | 'pino') => {
    const all = pairs.map((p) => (p.cpuMicrosPerRequest[baseline] ?? 0) / (p.cpuMicrosPerRequest.route ?? 0)).filter((x) => Number.isFinite(x) && x > 0)
    return all.length === pairs.length ? round(median(all)) : undefined
  }
  const p99 = median(runs.map((r) => r.latencyP99Ms))
  return {
    ...runs[kept]!,
    latencyP99Ms: p99,
    route: scenario.name,
    baselineRequestsPerSecond: pairs[kept]!.bareRequestsPerSecond,
    pinoBaselineRequestsPerSecond: pairs[kept]!.pinoRequestsPerSecond,
    ratio: round(ratio),
    ratioPino: round(ratioPino),
    cpuRatio: cpuShares('bare'),
    cpuRatioPino: cpuShares('pino'),
    target: verdict(scenario, ratio, ratioPino, p99),
    pairs,
    logBytesPerRequest: requests > 0 ? Math.round(logBytes / requests) : 0
  }
}

function print(rows: Row[]) {
  process.stdout.write(
    `\n${table(
      rows.map((r) => ({
        route: r.route,
        'req/s': r.requestsPerSecond,
        'bare req/s': r.baselineRequestsPerSecond,
        'pino req/s': r.pinoBaselineRequestsPerSecond,
        'vs bare': percent(r.ratio),
        'vs pino': percent(r.ratioPino),
        'pairs vs bare': r.pairs.map((p) => percent(p.requestsPerSecond / p.bareRequestsPerSecond)).join(' '),
        'CPU share bare/pino': r.cpuRatio === undefined ? '?' : `${percent(r.cpuRatio)}/${percent(r.cpuRatioPino ?? 0)}`,
        'route CPU µs/req': median(r.pairs.map((p) => p.cpuMicrosPerRequest.route ?? 0)),
        'load / steal': r.pairs.map((p) => `${p.loadAverage}/${p.stealPercent ?? '?'}%`).join(' '),
        target: r.target,
        'p50 ms': r.latencyP50Ms,
        'p99 ms': r.latencyP99Ms,
        'log B/req': r.logBytesPerRequest,
        'non-2xx': r.non2xx,
        errors: r.errors
      }))
    )}\n`
  )
}

/** BENCH_DATABASE=postgres: the same run against a throwaway PostgreSQL on this machine (scripts/postgres.mjs). */
async function benchDatabase(dir: string): Promise<{ url: string; stop(): void }> {
  if (process.env.BENCH_DATABASE !== 'postgres') return { url: join(dir, 'club.db'), stop: () => {} }
  return startBenchPostgres()
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'club-bench-'))
  const bench = await benchDatabase(dir)
  const database = bench.url
  const started: Started[] = []
  const startServer = async (extraEnv: Record<string, string> = {}) => {
    // As `pnpm start > server.log` starts it: the same entry, the user's defaults, stdout to a file.
    const log = join(dir, `server-${started.length}.log`)
    const server = await startLoggingTo(log, join(repoRoot, 'server', 'dist', 'main.js'), { ...env, DATABASE_URL: database, ...extraEnv }, SERVER_NODE_ARGS)
    started.push(server)
    return server
  }
  const stop = async (s: Started) => {
    started.splice(started.indexOf(s), 1)
    await s.stop()
  }
  const env = BENCH_SERVER_ENV
  const load1 = loadavg()[0]!
  try {
    process.stdout.write(`seeding ${database} (scale ${SCALE})…\n`)
    const db = openDatabase(database)
    await migrateToLatest(db)
    let t = performance.now()
    const users = await seedUsers(db, Math.max(10, Math.round(1000 * SCALE)), PASSWORD_HASH_COST)
    const staffTokens = users.accessTokens.filter((_, i) => i % 10 === 0)
    const staffIds = (await db.selectFrom('users').select('id').where('role', 'in', ['staff', 'admin']).execute()).map((u) => u.id)
    const venue = await seedVenue(db)
    const allServerIds = await seedReplayServers(db, Math.round(5000 * SCALE), venue)
    // A tenth of the approved boxes have a replay waiting: polled apart, so the plain poll's row stays comparable.
    const waitingServerIds = allServerIds.filter((_, i) => i % 10 === 0)
    const serverIds = allServerIds.filter((_, i) => i % 10 !== 0)
    await seedWaitingReplays(db, waitingServerIds, staffIds[0]!)
    // Boxes with a key, for the signed poll rows (with and without health): a tenth of the fleet.
    const keyedBoxes = only('GET replay-servers/device/{serverId}/status (signed)') || only('GET replay-servers/device/{serverId}/status (signed, with health)') ? await seedKeyedReplayServers(db, Math.max(10, Math.round(500 * SCALE)), venue, 'http://localhost:3000') : []
    const seeding: Record<string, number> = { usersAndReplayServersSeconds: round((performance.now() - t) / 1000, 1) }
    process.stdout.write(`  ${users.emails.length} users, ${serverIds.length} approved replay servers in ${seeding.usersAndReplayServersSeconds}s\n`)
    // Every member of the seeded users reads their own subscription; the rest are members of their own.
    t = performance.now()
    const byEmail = new Map((await db.selectFrom('users').select(['id', 'email', 'role']).execute()).map((u) => [u.email, u]))
    const readers = users.emails
      .map((email, i) => ({ user: byEmail.get(email)!, token: users.accessTokens[i]! }))
      .filter((r) => r.user.role === 'member')
      .map((r) => ({ userId: r.user.id, token: r.token }))
    const memberships = await seedMemberships(db, Math.max(readers.length, Math.round(10_000 * SCALE)), readers)
    seeding.membershipSubscriptions = memberships.count
    seeding.membershipsSeconds = round((performance.now() - t) / 1000, 1)
    process.stdout.write(`  ${memberships.count} membership subscriptions in ${seeding.membershipsSeconds}s\n`)
    t = performance.now()
    const packages = await seedPackages(db, readers)
    seeding.packages = packages.redeemable.length
    seeding.packagesSeconds = round((performance.now() - t) / 1000, 1)
    process.stdout.write(`  ${packages.redeemable.length} packages (one per member) in ${seeding.packagesSeconds}s\n`)

    const templates = new TemplateSeeder(db, venue, staffIds)
    const seeded = (): Seeded => ({
      users,
      staffTokens,
      templateIds: templates.ids,
      areaIds: venue.areaIds,
      perArea: templates.perArea(),
      searchTerm: SEARCH_TERM,
      searchMatches: Math.floor(templates.ids.length / 100),
      serverIds,
      waitingServerIds,
      keyedBoxes,
      etags: [],
      memberships,
      packages
    })

    const baselineScript = join(repoRoot, 'bench', 'dist', 'baseline.js')
    const baseline: Baselines = {
      bare: await startLoggingTo(join(dir, 'bare.log'), baselineScript, { ...env, BASELINE_LOGGER: 'none' }),
      pino: await startLoggingTo(join(dir, 'pino.log'), baselineScript, { ...env, BASELINE_LOGGER: 'pino' })
    }
    started.push(baseline.bare, baseline.pino)

    // The growth check: the template read and list at 1% and 10% of the full volume, then (below)
    // at the full volume, with one seeding that grows between the measurements.
    const sizes = [1000, 10_000, 100_000].map((n) => Math.max(10, Math.round(n * SCALE)))
    const growthScenarios = extraScenarios.filter((s) => s.growth)
    const growth: Array<{ templates: number; seedSeconds: number; rows: Row[] }> = []
    for (const size of ONLY || !GROWTH ? [] : sizes.slice(0, -1)) {
      const seedMs = await templates.seedTo(size)
      process.stdout.write(`  ${size} templates (+${round(seedMs / 1000, 1)}s); measuring the growth scenarios…\n`)
      const server = await startServer(CACHES_OFF)
      const rows: Row[] = []
      for (const scenario of growthScenarios) rows.push(await measure(scenario, baseline, server, seeded()))
      await stop(server)
      growth.push({ templates: size, seedSeconds: round(seedMs / 1000, 1), rows })
    }
    t = performance.now()
    const seedMs = await templates.seedTo(sizes.at(-1)!)
    const versions = await db.selectFrom('template_versions').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
    seeding.templatesTotalSeconds = round((growth.reduce((s, g) => s + g.seedSeconds * 1000, 0) + seedMs) / 1000, 1)
    seeding.templates = templates.ids.length
    seeding.templateVersions = Number(versions.n)
    process.stdout.write(`  ${templates.ids.length} templates with ${versions.n} versions, seeded through the services in ${seeding.templatesTotalSeconds}s\n`)
    await db.destroy()

    const server = await startServer()
    const uncached = await startServer(CACHES_OFF)
    const full = { ...seeded(), etags: await collectEtags(server, serverIds) }
    process.stdout.write(`measuring ${DURATION}s per route after as much of each baseline (bare, pino), ${CONNECTIONS} connections, ${REPEAT} pairs…\n`)
    const rows: Row[] = []
    for (const scenario of [...extraScenarios, ...foundation, membershipScenario, redemptionScenario, redemptionRetryScenario, offeringListScenario]) {
      const uncachedScenario = { ...scenario, name: `${scenario.name}${UNCACHED}`, target: scenario.uncached?.target, pinoTarget: undefined, p99Ms: scenario.uncached?.p99Ms }
      if (only(scenario.name)) rows.push(await measure(scenario, baseline, server, full))
      // What a request that misses the caches costs (after a write, or a key not asked lately).
      if (scenario.cached && only(uncachedScenario.name)) rows.push(await measure(uncachedScenario, baseline, uncached, full))
    }
    const atFullSize = rows.filter((r) => growthScenarios.some((s) => `${s.name}${UNCACHED}` === r.route))
    growth.push({ templates: templates.ids.length, seedSeconds: round(seedMs / 1000, 1), rows: atFullSize.map((r) => ({ ...r, route: r.route.slice(0, -UNCACHED.length) })) })
    for (const s of started.splice(0)) await s.stop()

    // Webhooks: commit to the receiver's 2xx at 200 events per second, on a server of its own.
    let webhooks: WebhookLatency | undefined
    if (!ONLY || /webhook/i.test(ONLY)) {
      const hookServer = await startServer({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' })
      webhooks = await timeWebhookDelivery(hookServer, `Bearer ${users.accessTokens[0]}`, { eventsPerSecond: 200, seconds: DURATION })
      await stop(hookServer)
    }

    // The CHARGE job last: it renews every seeded subscription, which the reads above must not see.
    let chargeJob: Awaited<ReturnType<typeof timeChargeJob>> | undefined
    if (!ONLY || /membership|CHARGE/i.test(ONLY)) {
      const jobDb = openDatabase(database)
      chargeJob = await timeChargeJob(jobDb, memberships)
      await jobDb.destroy()
    }

    print(rows)
    if (chargeJob) {
      const met = chargeJob.renewalsPerSecond >= 500 ? 'met' : 'MISSED'
      process.stdout.write(
        `CHARGE job: ${chargeJob.renewed} of ${chargeJob.due} due subscriptions renewed in ${chargeJob.seconds}s, ` +
          `${chargeJob.renewalsPerSecond} renewals per second (test provider; target >= 500: ${met})\n`
      )
    }
    if (webhooks) {
      const met = webhooks.p99Ms < 1000 && webhooks.delivered === webhooks.sent ? 'met' : 'MISSED'
      process.stdout.write(
        `webhooks: ${webhooks.delivered} of ${webhooks.sent} template.created events delivered once each (${webhooks.duplicates} again) at ${webhooks.eventsPerSecond} per second; ` +
          `commit to the receiver's 2xx p50 ${webhooks.p50Ms} ms, p99 ${webhooks.p99Ms} ms, max ${webhooks.maxMs} ms (target p99 < 1000 ms: ${met})\n`
      )
    }
    const login = rows.find((r) => r.route.startsWith('POST oauth2/token'))
    const loginsPerCore = login ? round(login.requestsPerSecond / cpus().length, 1) : undefined
    if (loginsPerCore !== undefined) process.stdout.write(`password logins: ${loginsPerCore} per second per core (scrypt N=${PASSWORD_HASH_COST})\n`)

    const growthTable = growthScenarios.map((s) => {
      const cells: Record<string, string> = { route: s.name }
      const first = growth[0]?.rows.find((r) => r.route === s.name)
      for (const g of growth) {
        const row = g.rows.find((r) => r.route === s.name)
        if (!row) continue
        const change = first ? ` (${row.ratio >= first.ratio ? '+' : ''}${Math.round((row.ratio / first.ratio - 1) * 100)}%)` : ''
        cells[`${g.templates} templates`] = `${row.requestsPerSecond} req/s, ${Math.round(row.ratio * 100)}%${change}`
      }
      return cells
    })
    if (growth.length > 1) {
      process.stdout.write(`\ngrowth check, read caches off (req/s, share of baseline, change of that share from the smallest size):\n${table(growthTable)}\n`)
    }
    const load2 = loadavg()[0]!
    process.stdout.write(`load average (1 min) before ${load1.toFixed(2)}, after ${load2.toFixed(2)} on ${cpus().length} cores\n`)

    const file = writeResults(process.env.BENCH_DATABASE === 'postgres' ? 'server-postgres' : 'server', {
      database: process.env.BENCH_DATABASE === 'postgres' ? 'PostgreSQL (a throwaway cluster on this machine: fsync on, synchronous_commit off like SQLite WAL with synchronous=NORMAL)' : 'SQLite',
      machine: machine(),
      loadAverage: { before: load1, after: load2 },
      durationSeconds: DURATION,
      connections: CONNECTIONS,
      repeat: REPEAT,
      scale: SCALE,
      seeding,
      routes: rows,
      chargeJob,
      webhooks,
      loginsPerSecondPerCore: loginsPerCore,
      growth
    })
    process.stdout.write(`\nresults written to ${file}\n`)
  } finally {
    for (const s of started) await s.stop()
    bench.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
