// What "ready" means: every part a request may need answers in time. Each check is a function of
// the configuration; a part that is not configured is said to be so, not checked.
import { connect } from 'node:net'
import { sql } from 'kysely'
import type { Redis } from 'ioredis'
import type { Config } from '../config.js'
import type { Db } from '../db/database.js'
import { migrations } from '../db/migrations/index.js'

export class CheckTimeoutError extends Error {
  override name = 'CheckTimeoutError'
}

/** A check answers "ok" or "not configured", or throws with what failed. */
export type ReadinessCheck = () => Promise<string>

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CheckTimeoutError(`${what} did not answer within ${ms} ms`)), ms)
  })
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer))
}

/** The migrations this code knows against those the database has applied. */
export async function migrationState(db: Db): Promise<string> {
  const applied = (await sql<{ name: string }>`select name from kysely_migration`.execute(db)).rows.map((r) => r.name)
  const known = Object.keys(migrations)
  const pending = known.filter((name) => !applied.includes(name))
  const unknown = applied.filter((name) => !known.includes(name))
  if (unknown.length > 0) throw new Error(`the database has migrations this code does not know (${unknown.join(', ')}): newer code ran on it`)
  if (pending.length > 0) throw new Error(`pending: ${pending.join(', ')}`)
  return 'ok'
}

/** Opens a TCP connection to the mail relay and closes it: enough to know it is there. */
export function tcpReachable(host: string, port: number, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port })
    socket.setTimeout(timeoutMs)
    socket.once('connect', () => {
      socket.destroy()
      resolve('ok')
    })
    socket.once('timeout', () => {
      socket.destroy()
      reject(new CheckTimeoutError(`no connection within ${timeoutMs} ms`))
    })
    socket.once('error', (err: NodeJS.ErrnoException) => reject(new Error(err.code ?? 'connection failed')))
  })
}

export function smtpAddress(url: string): { host: string; port: number } {
  const parsed = new URL(url)
  return { host: parsed.hostname, port: Number(parsed.port) || (parsed.protocol === 'smtps:' ? 465 : 25) }
}

export function readinessChecks(db: Db, config: Config, redis: Redis | null = null): Record<string, ReadinessCheck> {
  const timeoutMs = config.READINESS_TIMEOUT_MS
  const checks: Record<string, ReadinessCheck> = {
    database: () => withTimeout(sql`select 1`.execute(db).then(() => 'ok'), timeoutMs, 'the database'),
    migrations: () => withTimeout(migrationState(db), timeoutMs, 'the database'),
    smtp: async () => {
      if (!config.SMTP_URL) return 'not configured'
      const { host, port } = smtpAddress(config.SMTP_URL)
      return tcpReachable(host, port, timeoutMs)
    },
    // Reported, never failing: without Redis the rate limits let requests through, and a 503 here
    // would take every server process out of the load balancer at once.
    redis: async () => {
      if (!redis) return 'not configured'
      return withTimeout(redis.ping(), timeoutMs, 'Redis').then(
        () => 'ok',
        (err: Error) => `unreachable (${err.message}): the rate limits let requests through uncounted`
      )
    }
  }
  return checks
}

/** Runs every check at once; `failed` names each part that did not answer "ok" or "not configured". */
export async function checkReadiness(checks: Record<string, ReadinessCheck>): Promise<{ checks: Record<string, string>; failed: string[] }> {
  const names = Object.keys(checks)
  const outcomes = await Promise.allSettled(names.map((name) => checks[name]!()))
  const result: Record<string, string> = {}
  const failed: string[] = []
  outcomes.forEach((outcome, i) => {
    const name = names[i]!
    if (outcome.status === 'fulfilled') {
      result[name] = outcome.value
    } else {
      const reason = outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason)
      result[name] = reason
      failed.push(`${name}: ${reason}`)
    }
  })
  return { checks: result, failed }
}
