// Shared pieces of the benchmarks: child processes on loopback, an autocannon run, the machine's
// description, and where results go.
import { spawn, type ChildProcess } from 'node:child_process'
import { execFileSync } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import autocannon from 'autocannon'
import pg from 'pg'

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

export interface Started {
  url: string
  child: ChildProcess
  /** Where the process's stdout goes when started by startLoggingTo. */
  logFile?: string
  stop(): Promise<void>
}

/** The processes this bench started, by the URL they listen on: load() reads their CPU time. */
const pidByUrl = new Map<string, number>()

/**
 * A process's CPU time so far (user and system, all its threads), in seconds, from /proc/<pid>/stat;
 * undefined off Linux. Unlike requests per second, CPU time per request hardly changes with what
 * else the machine runs, so it is the steadier measure on a shared machine.
 */
export function processCpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name (which may hold spaces, hence the last ')'): utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
  } catch {
    return undefined
  }
}

/** USER_HZ: Linux reports /proc times in hundredths of a second on every common architecture. */
const CLOCK_TICKS = 100

/** Asks a child to stop (SIGTERM) and waits for it to exit. */
function stopChild(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once('exit', () => resolve())
    child.kill('SIGTERM')
  })
}

/** Starts a Node script that logs Fastify's "Server listening at" line, and waits for that line. */
export async function startNode(script: string, env: Record<string, string>, args: string[] = []): Promise<Started> {
  const child = spawn(process.execPath, [...args, script], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let seen = ''
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      // Only the start is read; afterwards stdout is drained without keeping it, as a log collector would.
      seen += d.toString()
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(seen)
      if (match) {
        child.stdout!.off('data', onData)
        child.stdout!.resume()
        seen = ''
        pidByUrl.set(match[1]!, child.pid!)
        resolve(match[1]!)
      }
    }
    child.stdout!.on('data', onData)
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before listening: ${stderr}`)))
  })
  return {
    url,
    child,
    stop: () => stopChild(child)
  }
}

/**
 * Starts a Node script with its stdout written to `logFile` (a plain file, not a pipe: what a user's
 * `pnpm start > server.log` pays), and waits for its "Server listening at" line in that file.
 */
export async function startLoggingTo(logFile: string, script: string, env: Record<string, string>, args: string[] = []): Promise<Started> {
  const out = openSync(logFile, 'a')
  const child = spawn(process.execPath, [...args, script], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', out, 'pipe']
  })
  closeSync(out)
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  let exited: string | undefined
  child.once('exit', (code) => (exited = `${script} exited with ${code} before listening: ${stderr}`))
  const deadline = Date.now() + 60_000
  let url: string | undefined
  while (!url) {
    if (exited) throw new Error(exited)
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`${script} did not say "Server listening at" within 60 s: ${stderr}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
    url = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(readFileSync(logFile, 'utf8'))?.[1]
  }
  pidByUrl.set(url, child.pid!)
  return {
    url,
    child,
    logFile,
    stop: () => stopChild(child)
  }
}

/** Bytes in a file now (0 when absent): the log written during a run is the difference. */
export function fileSize(file: string): number {
  try {
    return statSync(file).size
  } catch {
    return 0
  }
}

/**
 * The host's CPU time counters from /proc/stat: `steal` is time a hypervisor gave this virtual
 * machine's CPUs to someone else, which no load average shows. Undefined off Linux.
 */
export function cpuTimes(): { total: number; steal: number } | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
    // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already in user.
    return { total: fields.slice(0, 8).reduce((a, b) => a + b, 0), steal: fields[7] ?? 0 }
  } catch {
    return undefined
  }
}

/** The share of CPU time stolen between two readings of cpuTimes(), in percent. */
export function stealPercent(before: ReturnType<typeof cpuTimes>, after: ReturnType<typeof cpuTimes>): number | undefined {
  if (!before || !after || after.total === before.total) return undefined
  return Math.round(((after.steal - before.steal) / (after.total - before.total)) * 1000) / 10
}

export interface LoadResult {
  name: string
  requestsPerSecond: number
  latencyP50Ms: number
  latencyP99Ms: number
  requests: number
  non2xx: number
  errors: number
  /** CPU time the server process spent per request during the measured run, in µs, when it is ours. */
  cpuMicrosPerRequest?: number
}

export interface LoadOptions {
  name: string
  url: string
  /** Paths to rotate over, one per request in turn. */
  paths: string[]
  /** A path made for each request in turn instead (e.g. a status poll signed afresh), when given. */
  pathOf?: (i: number) => string
  method?: 'GET' | 'POST'
  headers?: (i: number) => Record<string, string>
  body?: string
  /** A JSON body made for each request in turn (e.g. a redemption of a target of its own). */
  jsonBody?: (i: number) => unknown
  durationSeconds: number
  connections: number
  /** Status codes that count as success (besides 2xx), e.g. 304. */
  expectStatus?: number
}

/**
 * Seconds of load before each measured run, not counted: V8 optimises, and the server's caches make
 * their first pass over the rotated keys (10,000 templates take a few seconds).
 */
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP ?? 3)

/** One autocannon run rotating over `paths`, after a warm-up run of its own. */
export async function load(options: LoadOptions): Promise<LoadResult> {
  const run = (duration: number) => {
    let i = 0
    return autocannon({
      url: options.url,
      connections: options.connections,
      duration,
      method: options.method ?? 'GET',
      requests: [
        {
          setupRequest: (req: any) => {
            const n = i++
            req.path = options.pathOf ? options.pathOf(n) : options.paths[n % options.paths.length]
            req.method = options.method ?? 'GET'
            if (options.headers) req.headers = { ...(req.headers ?? {}), ...options.headers(n) }
            if (options.body !== undefined) {
              req.body = options.body
              req.headers = { ...(req.headers ?? {}), 'content-type': 'application/x-www-form-urlencoded' }
            }
            if (options.jsonBody) {
              req.body = JSON.stringify(options.jsonBody(n))
              req.headers = { ...(req.headers ?? {}), 'content-type': 'application/json' }
            }
            return req
          }
        }
      ]
    } as autocannon.Options)
  }
  if (WARMUP_SECONDS > 0) await run(WARMUP_SECONDS)
  const pid = pidByUrl.get(options.url)
  const cpuBefore = processCpuSeconds(pid)
  const result = await run(options.durationSeconds)
  const cpuAfter = processCpuSeconds(pid)
  const statusCounts = (result as unknown as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {}
  const expected = options.expectStatus ? statusCounts[String(options.expectStatus)]?.count ?? 0 : 0
  return {
    name: options.name,
    requestsPerSecond: Math.round(result.requests.average),
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx - expected,
    errors: result.errors + result.timeouts,
    ...(cpuBefore !== undefined && cpuAfter !== undefined && result.requests.total > 0
      ? { cpuMicrosPerRequest: Math.round(((cpuAfter - cpuBefore) * 1e6) / result.requests.total) }
      : {})
  }
}

export function machine() {
  let commit = 'unknown'
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot }).toString().trim()
  } catch {
    // not a git checkout
  }
  return { cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, node: process.version, commit, date: new Date().toISOString() }
}

/**
 * A throwaway PostgreSQL cluster on this machine (scripts/postgres.mjs: fsync on, synchronous_commit
 * off) with an empty database `club_bench`: its URL, the cluster's folder, and how to stop it.
 */
/**
 * What every benchmarked server is started with besides the database; every other setting is the
 * default a user gets. The per-IP limits are raised because the benchmark is one client IP making
 * every request (at the defaults nearly every answer is a 429), and replays stay REQUESTED for the
 * whole run, since no box answers them (failing them mid-run would give their items back).
 */
export const BENCH_SERVER_ENV = {
  LOG_LEVEL: 'info',
  API_KEY_RATE_LIMIT_MAX: '1000000000',
  TOKEN_RATE_LIMIT_MAX: '1000000000',
  REPLAY_REQUEST_TIMEOUT_SECONDS: '604800'
} as const

export async function startBenchPostgres(): Promise<{ url: string; dir: string; stop(): void }> {
  const { startPostgres, databaseUrl } = (await import(pathToFileURL(join(repoRoot, 'scripts', 'postgres.mjs')).href)) as {
    startPostgres(options: { durable: boolean }): { url: string; dir: string; stop(): void }
    databaseUrl(url: string, name: string): string
  }
  const cluster = startPostgres({ durable: true })
  const admin = new pg.Client({ connectionString: cluster.url })
  await admin.connect()
  await admin.query('create database club_bench')
  await admin.end()
  return { url: databaseUrl(cluster.url, 'club_bench'), dir: cluster.dir, stop: () => cluster.stop() }
}

export function writeResults(name: string, data: unknown): string {
  const dir = join(repoRoot, 'bench', 'results')
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`)
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`)
  writeFileSync(join(dir, `${name}-latest.json`), `${JSON.stringify(data, null, 2)}\n`)
  return file
}

export function table(rows: Array<Record<string, string | number>>): string {
  const columns = Object.keys(rows[0] ?? {})
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)))
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ')
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...rows.map((r) => line(columns.map((c) => String(r[c]))))].join('\n')
}
