// `pnpm bench:pg-writes`: redemptions per second on one PostgreSQL with one server process, then with
// two (issue 37: writes that scale with processes). A throwaway cluster on this machine
// (scripts/postgres.mjs, fsync on, synchronous_commit off), one package per member, each request a
// target of its own (the write path: the decrement, the order line, the redemption and its event).
// With two processes the same connections are split between them, so the client's load is the same.
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import pg from 'pg'
import { migrateToLatest, openDatabase } from '@club/server/db/database'
import { BENCH_SERVER_ENV, load, machine, repoRoot, startLoggingTo, table, writeResults, type LoadResult, type Started } from './harness.js'
import { issueReplayPackages } from './packages.js'
import { seedUsers } from './seed.js'

const DURATION = Number(process.env.BENCH_DURATION ?? 10)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20)
const REPEAT = Number(process.env.BENCH_REPEAT ?? 3)
const MEMBERS = 500
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean)

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'club-pg-writes-'))
  const { startPostgres, databaseUrl } = (await import(pathToFileURL(join(repoRoot, 'scripts', 'postgres.mjs')).href)) as {
    startPostgres(options: { durable: boolean }): { url: string; stop(): void }
    databaseUrl(url: string, name: string): string
  }
  const cluster = startPostgres({ durable: true })
  const started: Started[] = []
  try {
    const admin = new pg.Client({ connectionString: cluster.url })
    await admin.connect()
    await admin.query('create database club_bench')
    await admin.end()
    const url = databaseUrl(cluster.url, 'club_bench')
    const db = openDatabase(url)
    await migrateToLatest(db)
    const users = await seedUsers(db, MEMBERS, 1024)
    const ids = (await db.selectFrom('users').select(['id', 'email']).execute()).sort((a, b) => Number(a.email.slice(4).split('@')[0]) - Number(b.email.slice(4).split('@')[0]))
    const { packageIds } = await issueReplayPackages(db, ids.map((u) => u.id), new Date())
    await db.destroy()
    process.stdout.write(`${packageIds.length} packages on ${cluster.url}\n`)

    const env = { ...BENCH_SERVER_ENV, DATABASE_URL: url, SCHEDULER: 'external' }
    const servers: Started[] = []
    for (let i = 0; i < 2; i++) {
      const server = await startLoggingTo(join(dir, `server-${i}.log`), join(repoRoot, 'server', 'dist', 'main.js'), env, SERVER_NODE_ARGS)
      servers.push(server)
      started.push(server)
    }
    // Each server redeems from its own half of the packages: the two never wait on one package's row.
    const redeem = (server: Started, half: number, halves: number, connections: number): Promise<LoadResult> => {
      const run = randomUUID().slice(0, 8)
      const mine = packageIds.map((id, i) => ({ id, token: users.accessTokens[i]! })).filter((_, i) => i % halves === half)
      return load({
        name: 'redemption',
        url: server.url,
        method: 'POST',
        paths: mine.map((p) => `/apis/v2/packages/${p.id}/redemptions`),
        headers: (i) => ({ authorization: `Bearer ${mine[i % mine.length]!.token}` }),
        jsonBody: (i) => ({ type: 'REPLAY', target: { replay: { id: `bench-${run}-${i}` } } }),
        durationSeconds: DURATION,
        connections
      })
    }
    const rows: Array<Record<string, string | number>> = []
    const one: number[] = []
    const two: number[] = []
    // How many transactions wait for a lock at a time (sampled every 20 ms while the pair runs): the
    // writes' serialisation itself, which requests per second on a busy machine may hide.
    const sampler = new pg.Client({ connectionString: url })
    await sampler.connect()
    // A waiter for another transaction's row holds a tuple lock on that row's table: those name the
    // tables whose rows the writes queue on.
    const waiting = async (during: Promise<unknown>) => {
      const samples: Array<{ all: number; advisory: number; tables: string | null }> = []
      let done = false
      void during.finally(() => (done = true))
      while (!done) {
        const { rows } = await sampler.query<{ all: number; advisory: number; tables: string | null }>(
          `select count(*) filter (where not granted) as "all", count(*) filter (where not granted and locktype = 'advisory') as advisory,
             string_agg(relation::regclass::text, ' ') filter (where locktype = 'tuple') as tables from pg_locks`
        )
        samples.push(rows[0]!)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      const mean = (key: 'all' | 'advisory') => samples.reduce((sum, x) => sum + Number(x[key]), 0) / Math.max(1, samples.length)
      const tables = new Map<string, number>()
      for (const table of samples.flatMap((x) => x.tables?.split(' ') ?? [])) tables.set(table, (tables.get(table) ?? 0) + 1)
      const rowWaits = [...tables].map(([table, n]) => `${table} ${(n / Math.max(1, samples.length)).toFixed(1)}`).join(', ') || 'none'
      return { all: mean('all'), advisory: mean('advisory'), rowWaits }
    }
    for (let r = 0; r < REPEAT; r++) {
      const single = await redeem(servers[0]!, 0, 1, CONNECTIONS)
      const running = Promise.all(servers.map((s, i) => redeem(s, i, 2, CONNECTIONS / 2)))
      const waits = await waiting(running)
      const pair = await running
      const pairRate = pair.reduce((sum, p) => sum + p.requestsPerSecond, 0)
      one.push(single.requestsPerSecond)
      two.push(pairRate)
      const failed = single.non2xx + single.errors + pair.reduce((sum, p) => sum + p.non2xx + p.errors, 0)
      rows.push({ repeat: r + 1, 'one process req/s': single.requestsPerSecond, 'two processes req/s': pairRate, ratio: (pairRate / single.requestsPerSecond).toFixed(2), 'p99 ms (one / two)': `${single.latencyP99Ms} / ${Math.max(...pair.map((p) => p.latencyP99Ms))}`, 'waiting for a lock (advisory)': `${waits.all.toFixed(1)} (${waits.advisory.toFixed(1)})`, 'row waits by table': waits.rowWaits, 'non-2xx or errors': failed })
    }
    await sampler.end()
    process.stdout.write(`\n${table(rows)}\n\nmedian: one ${median(one)} req/s, two ${median(two)} req/s, ratio ${(median(two) / median(one)).toFixed(2)}\n`)
    const file = writeResults('pg-writes', { machine: machine(), durationSeconds: DURATION, connections: CONNECTIONS, rows, medianOne: median(one), medianTwo: median(two) })
    process.stdout.write(`written to ${file}\n`)
  } finally {
    for (const s of started) await s.stop()
    cluster.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
