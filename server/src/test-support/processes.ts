// The built server and `club` CLI as separate processes (`dist/main.js`, `dist/cli.js`, as `pnpm start`
// and the bin run them), for the tests that race them on one database or check how they start and stop.
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))
const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url))

export interface ServerProcess {
  child: ChildProcess
  /** The base URL once the server logs 'Server listening at'; rejects if it exits first. */
  listening: Promise<string>
  exited: Promise<number | null>
  /** stdout and stderr as they came, interleaved. */
  output(): string
  stdout(): string
  stderr(): string
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>
}

export interface StartedServer extends ServerProcess {
  base: string
}

/**
 * How long a write of a test's process waits for another's lock unless the test sets it: ten writers
 * racing on a machine at a load of 30 hold each other for seconds, and the production default (5 s)
 * then answers 503 where a quiet machine never does. What the races check (at most once, no 5xx) must
 * not depend on the machine's speed; busy.test.ts, which checks the 503 itself, sets its own.
 */
export const TEST_BUSY_TIMEOUT_MS = '120000'

/**
 * A server or `club` process's whole environment on a test's database: loopback on a random port,
 * the cheapest password hashing, and no built-in scheduler (its catch-up would run the jobs at the
 * real time, years past a test's clock; jobs/scheduler-processes.test.ts races it on its own).
 * `settings` are the test's own and win.
 */
export function processEnv(databaseUrl: string, settings: Record<string, string> = {}): Record<string, string> {
  return {
    ...(process.env as Record<string, string>),
    DATABASE_URL: databaseUrl,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    PASSWORD_HASH_COST: '1024',
    SCHEDULER: 'external',
    ...settings
  }
}

function withTestBusyTimeout(env: Record<string, string | undefined>): Record<string, string | undefined> {
  return { DATABASE_BUSY_TIMEOUT_MS: TEST_BUSY_TIMEOUT_MS, ...env }
}

/** Spawns a server with `env` (the whole environment: callers spread process.env into it); killed at teardown. */
export function spawnServer(t: { teardown(fn: () => unknown): void }, env: Record<string, string | undefined>): ServerProcess {
  const child = spawn(process.execPath, [MAIN], { env: withTestBusyTimeout(env), stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => ((stdout += d), (out += d)))
  child.stderr.on('data', (d) => ((stderr += d), (out += d)))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => void child.kill('SIGKILL'))
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)
      if (match) resolve(match[1]!)
    })
    void exited.then((code) => reject(new Error(`server exited (${code}) before listening: ${out}`)))
  })
  listening.catch(() => {}) // a test that expects an early exit never awaits it
  const stop = () => {
    child.kill('SIGTERM')
    return exited
  }
  return { child, listening, exited, output: () => out, stdout: () => stdout, stderr: () => stderr, stop }
}

/** A server with `env`, once it listens. */
export async function startServer(t: { teardown(fn: () => unknown): void }, env: Record<string, string | undefined>): Promise<StartedServer> {
  const server = spawnServer(t, env)
  return { ...server, base: await server.listening }
}

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/** One `club` command with `env`, to its exit. */
export function club(env: Record<string, string | undefined>, ...args: string[]): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], { env: withTestBusyTimeout(env), stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => (stdout += d))
  child.stderr.on('data', (d) => (stderr += d))
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })))
}

/** One `club` command's JSON answer; throws with its stderr if it failed. */
export async function clubJson(env: Record<string, string | undefined>, ...args: string[]): Promise<any> {
  const result = await club(env, ...args)
  if (result.code !== 0) throw new Error(`club ${args.join(' ')} failed: ${result.stderr}`)
  return JSON.parse(result.stdout)
}

export interface FetchInit extends RequestInit {
  /** Sent as a JSON body. */
  json?: unknown
  /** Sent as an application/x-www-form-urlencoded body. */
  form?: Record<string, string>
  /** Sent as `authorization: Bearer …`. */
  bearer?: string
}

/** A request to a started server, its answer parsed as JSON (null when empty); `text` is the raw body. */
export async function fetchJson(base: string, path: string, init: FetchInit = {}): Promise<{ status: number; headers: Headers; body: any; text: string }> {
  const { json, form, bearer, ...request } = init
  const headers = new Headers(request.headers)
  let body = request.body
  if (bearer) headers.set('authorization', `Bearer ${bearer}`)
  if (json !== undefined) {
    headers.set('content-type', 'application/json')
    body = JSON.stringify(json)
  } else if (form) {
    headers.set('content-type', 'application/x-www-form-urlencoded')
    body = new URLSearchParams(form).toString()
  }
  const res = await fetch(`${base}${path}`, { ...request, headers, body })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null, text }
}
