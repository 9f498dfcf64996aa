// The server's metrics, in one prom-client registry per app (no module-level state: tests build
// many apps in one process). prom-client is the library the Prometheus project lists for Node, kept
// by the community for a decade; it brings the process metrics (event-loop lag, memory, handles).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { Mailer } from '../password-reset/mailer.js'
import type { PhoneVerificationProvider } from '../signup/providers/provider.js'

export interface MetricsSources {
  /** Each read cache's hits and misses so far. */
  readCaches: () => Array<{ name: string; hits: number; misses: number }>
  /** Recording boxes by status and whether they polled lately; a cheap grouped count, read at scrape time. */
  boxes: () => Promise<Array<{ status: string; online: boolean; count: number }>>
}

type Labels<T extends string> = Record<T, string>

export class Metrics {
  readonly registry = new Registry()
  /** Its _count is the request count: one series per route and status, not two. */
  readonly requestDuration: Histogram<'method' | 'route' | 'status_code'>
  readonly queryDuration: Histogram<'kind'>
  readonly statusPolls: Counter<'answer'>
  /** Each scheduled job run, by outcome (jobs/runner.ts). */
  readonly jobRuns: Counter<'job' | 'outcome'>
  readonly phoneSends: Counter<'outcome'>
  readonly mailSends: Counter<'outcome'>
  /** Histogram children by "method route status": labels() hashes its arguments on every call. */
  readonly #requestChildren = new Map<string, { observe(value: number): void }>()
  readonly #reads: { observe(value: number): void }
  readonly #writes: { observe(value: number): void }

  constructor(sources: MetricsSources) {
    const registers = [this.registry]
    collectDefaultMetrics({ register: this.registry })
    this.requestDuration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time from request to answer, by method, route pattern and status code',
      labelNames: ['method', 'route', 'status_code'],
      // Few buckets: each one is a series per route and status.
      buckets: [0.005, 0.025, 0.1, 0.5, 2.5],
      registers
    })
    this.queryDuration = new Histogram({
      name: 'club_db_query_duration_seconds',
      help: 'Time each database statement took, reads (select) and writes',
      labelNames: ['kind'],
      buckets: [0.0005, 0.002, 0.01, 0.05, 0.25],
      registers
    })
    this.#reads = this.queryDuration.labels({ kind: 'read' })
    this.#writes = this.queryDuration.labels({ kind: 'write' })
    this.statusPolls = new Counter({
      name: 'club_replay_status_polls_total',
      help: "Recording boxes' status polls by answer: 200 (changed) or 304 (unchanged)",
      labelNames: ['answer'],
      registers
    })
    this.jobRuns = new Counter({ name: 'club_job_runs_total', help: 'Scheduled job runs by job and outcome', labelNames: ['job', 'outcome'], registers })
    this.phoneSends = new Counter({ name: 'club_phone_sends_total', help: 'Phone verification codes sent, by outcome', labelNames: ['outcome'], registers })
    this.mailSends = new Counter({ name: 'club_mail_sends_total', help: 'Mail sent, by outcome', labelNames: ['outcome'], registers })
    new Counter({
      name: 'club_read_cache_lookups_total',
      help: 'Read cache look-ups by cache and result (hit or miss)',
      labelNames: ['cache', 'result'],
      registers,
      // Counted as plain integers by the caches themselves and copied here only when scraped.
      collect() {
        this.reset()
        for (const { name, hits, misses } of sources.readCaches()) {
          this.inc({ cache: name, result: 'hit' }, hits)
          this.inc({ cache: name, result: 'miss' }, misses)
        }
      }
    })
    new Gauge({
      name: 'club_replay_servers',
      help: 'Recording boxes by status and whether they polled within three poll intervals',
      labelNames: ['status', 'online'],
      registers,
      async collect() {
        this.reset()
        for (const { status, online, count } of await sources.boxes()) this.set({ status, online: String(online) }, count)
      }
    })
  }

  observeRequest(method: string, route: string, statusCode: number, seconds: number): void {
    const key = `${method} ${route} ${statusCode}`
    let child = this.#requestChildren.get(key)
    if (!child) {
      child = this.requestDuration.labels({ method, route, status_code: String(statusCode) } as Labels<'method' | 'route' | 'status_code'>)
      this.#requestChildren.set(key, child)
    }
    child.observe(seconds)
  }

  observeQuery(durationMs: number, sql: string): void {
    ;(sql.startsWith('select') ? this.#reads : this.#writes).observe(durationMs / 1000)
  }

  async text(): Promise<string> {
    return this.registry.metrics()
  }

  get contentType(): string {
    return this.registry.contentType
  }
}

/** A mailer whose sends are counted as sent or failed. */
export function countedMailer(mailer: Mailer, metrics: Metrics): Mailer {
  return {
    async send(message) {
      try {
        await mailer.send(message)
        metrics.mailSends.inc({ outcome: 'sent' })
      } catch (err) {
        metrics.mailSends.inc({ outcome: 'failed' })
        throw err
      }
    },
    close: () => mailer.close()
  }
}

/** A phone verification provider whose sends are counted as sent or failed. */
export function countedPhoneProvider(provider: PhoneVerificationProvider, metrics: Metrics): PhoneVerificationProvider {
  return {
    name: provider.name,
    ownsCode: provider.ownsCode,
    requiresRecaptcha: provider.requiresRecaptcha,
    async send(request) {
      try {
        const result = await provider.send(request)
        metrics.phoneSends.inc({ outcome: 'sent' })
        return result
      } catch (err) {
        metrics.phoneSends.inc({ outcome: 'failed' })
        throw err
      }
    },
    check: (request) => provider.check(request)
  }
}
