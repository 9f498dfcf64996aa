// `pnpm bench`: seeds a temporary database with realistic volumes, starts the real server and a
// bare Fastify baseline on loopback with the same process settings, drives both with autocannon,
// prints a table and writes JSON under bench/results/. Never fails on a number.
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { migrateToLatest, openDatabase } from '@club/server/db/database.js'
import { load, machine, repoRoot, startNode, table, writeResults, type LoadResult, type Started } from './harness.js'
import { BENCH_PASSWORD, seedUsers, type SeededUsers } from './seed.js'
import { scenarios as extraScenarios, seedExtra, growthCheck, type Seeded } from './scenarios.js'

const DURATION = Number(process.env.BENCH_DURATION ?? 10)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10)
/** 1 = the volumes the issue names; a smaller factor gives a quick run. */
const SCALE = Number(process.env.BENCH_SCALE ?? 1)
const PASSWORD_HASH_COST = 65536

export interface Scenario {
  name: string
  /** The share of the baseline's requests per second this route is held to, if any. */
  target?: number
  run(server: Started, seeded: Seeded & { users: SeededUsers }): Promise<LoadResult>
}

const pick = <T>(list: T[], i: number): T => list[i % list.length]!

const foundation: Scenario[] = [
  {
    name: 'GET /apis/v2/users/current (x-api-key)',
    target: 0.5,
    run: (server, seeded) =>
      load({
        name: 'users/current',
        url: server.url,
        paths: ['/apis/v2/users/current'],
        headers: (i) => ({ 'x-api-key': pick(seeded.users.apiKeys, i) }),
        durationSeconds: DURATION,
        connections: CONNECTIONS
      })
  },
  {
    name: 'POST /apis/v2/oauth2/token (password grant)',
    run: (server, seeded) =>
      load({
        name: 'token',
        url: server.url,
        method: 'POST',
        paths: ['/apis/v2/oauth2/token'],
        body: new URLSearchParams({ grant_type: 'password', username: seeded.users.emails[1]!, password: BENCH_PASSWORD }).toString(),
        durationSeconds: DURATION,
        connections: 4
      })
  }
]


async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'club-bench-'))
  const database = join(dir, 'club.db')
  const started: Started[] = []
  try {
    process.stdout.write(`seeding ${database} (scale ${SCALE})…\n`)
    const db = openDatabase(database)
    await migrateToLatest(db)
    const users = await seedUsers(db, Math.max(10, Math.round(1000 * SCALE)), PASSWORD_HASH_COST)
    const extra = await seedExtra(db, SCALE, users)
    await db.destroy()
    const seeded = { ...extra, users }

    const env = { LOG_LEVEL: 'info', API_KEY_RATE_LIMIT_MAX: '1000000000', PASSWORD_HASH_COST: String(PASSWORD_HASH_COST) }
    const baseline = await startNode(join(repoRoot, 'bench', 'dist', 'baseline.js'), env)
    started.push(baseline)
    const server = await startNode(join(repoRoot, 'server', 'dist', 'main.js'), { ...env, DATABASE_URL: database })
    started.push(server)

    process.stdout.write(`measuring ${DURATION}s per route with ${CONNECTIONS} connections…\n`)
    const base = await load({ name: 'baseline', url: baseline.url, paths: ['/baseline'], durationSeconds: DURATION, connections: CONNECTIONS })
    const rows: Array<LoadResult & { route: string; ratio: number; target: string }> = [
      { ...base, route: 'bare Fastify baseline', ratio: 1, target: '' }
    ]
    for (const scenario of [...extraScenarios(DURATION, CONNECTIONS), ...foundation]) {
      const result = await scenario.run(server, seeded)
      const ratio = result.requestsPerSecond / base.requestsPerSecond
      const target = scenario.target === undefined ? '' : `${ratio >= scenario.target ? 'met' : 'MISSED'} (>= ${scenario.target * 100}%)`
      rows.push({ ...result, route: scenario.name, ratio: Math.round(ratio * 1000) / 1000, target })
    }
    const login = rows.find((r) => r.route.startsWith('POST /apis/v2/oauth2/token'))
    const loginsPerCore = login ? Math.round((login.requestsPerSecond / cpus().length) * 10) / 10 : undefined

    process.stdout.write(
      `\n${table(
        rows.map((r) => ({
          route: r.route,
          'req/s': r.requestsPerSecond,
          'p50 ms': r.latencyP50Ms,
          'p99 ms': r.latencyP99Ms,
          'vs baseline': `${Math.round(r.ratio * 100)}%`,
          target: r.target,
          'non-2xx': r.non2xx,
          errors: r.errors
        }))
      )}\n`
    )
    if (loginsPerCore !== undefined) process.stdout.write(`password logins: ${loginsPerCore} per second per core (scrypt N=${PASSWORD_HASH_COST})\n`)

    for (const s of started.splice(0)) await s.stop()
    const growth = await growthCheck(DURATION, CONNECTIONS, SCALE)

    const file = writeResults('server', { machine: machine(), durationSeconds: DURATION, connections: CONNECTIONS, scale: SCALE, routes: rows, loginsPerSecondPerCore: loginsPerCore, growth })
    process.stdout.write(`\nresults written to ${file}\n`)
  } finally {
    for (const s of started) await s.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
