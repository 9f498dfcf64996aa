// Open-loop load at fixed rates, for the evening scenario: every stream of requests is scheduled at
// its own rate whatever the server answers, and each latency runs from the request's scheduled
// time, not from when it was sent. A closed loop (autocannon's N connections, each waiting for its
// answer) sends less when the server slows down, so a stall delays the requests that would have
// measured it ("coordinated omission"); here a stall shows up in the latencies of every request
// scheduled during it.
import { performance } from 'node:perf_hooks'
import { Pool } from 'undici'

export interface PlannedRequest {
  method: 'GET' | 'POST' | 'PATCH'
  path: string
  headers?: Record<string, string>
  /** JSON, sent with content-type application/json. */
  body?: unknown
}

export interface Stream {
  /** The row of the table: method and route pattern, as the spec names it. */
  route: string
  /** Reads are held to the p99 bound of the step search; writes are reported only. */
  read: boolean
  /** Requests per second at 1x; the step search multiplies it. */
  rate: number
  /** Request number i of this stream. */
  request(i: number): PlannedRequest
  /** Statuses that answer the request as intended (anything else counts as an error). */
  ok(status: number): boolean
  /** Sees each answer's status and headers (a box keeps the ETag it was given). */
  answered?(i: number, status: number, headers: Record<string, string | string[] | undefined>): void
}

export interface RouteFigures {
  route: string
  read: boolean
  requests: number
  /** Answers per second over the run. */
  throughput: number
  p50Ms: number
  p99Ms: number
  p999Ms: number
  maxMs: number
  statuses: Record<string, number>
  errors: number
  /** The first few errors, as read (status and message, or the client's error). */
  errorSamples: string[]
}

export interface MixResult {
  multiple: number
  seconds: number
  routes: RouteFigures[]
  /** How late the generator sent its requests after their scheduled time (its own lag, in ms). */
  sendLagMs: { p50: number; p99: number; max: number }
  /** Requests still unanswered when the drain deadline passed (counted as errors of their routes). */
  unanswered: number
}

/** One keep-alive pool per server process; requests go round-robin over them. */
export function pools(urls: string[], connectionsEach: number): Pool[] {
  return urls.map((url) => new Pool(url, { connections: connectionsEach, pipelining: 1, headersTimeout: 30_000, bodyTimeout: 30_000, keepAliveTimeout: 60_000 }))
}

/** A seeded pseudo-random generator (mulberry32): the same key mix on every run. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * Draws indexes 0..n-1 with Zipf's law (rank k with weight 1/k^s), over a shuffled order so that the
 * popular keys are spread over the seeding rather than its first rows.
 */
export function zipf(n: number, s: number, random: () => number): () => number {
  const cdf = new Float64Array(n)
  let sum = 0
  for (let k = 0; k < n; k++) cdf[k] = sum += 1 / (k + 1) ** s
  const order = Array.from({ length: n }, (_, i) => i)
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[order[i], order[j]] = [order[j]!, order[i]!]
  }
  return () => {
    const u = random() * sum
    let lo = 0
    let hi = n - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cdf[mid]! < u) lo = mid + 1
      else hi = mid
    }
    return order[lo]!
  }
}

/** The q-quantile of sorted values (nearest rank). */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

const ms = (n: number) => Math.round(n * 100) / 100

/** Bound on the wait for answers still in flight once the run's time is up. */
const DRAIN_MS = 30_000

/**
 * Runs every stream at `multiple` times its rate for `seconds`, spreading requests evenly (request i
 * of a stream at start + i / rate), and `events` at their offsets in seconds (the CHARGE job).
 */
export async function runMix(
  targets: Pool[],
  streams: Stream[],
  multiple: number,
  seconds: number,
  events: Array<{ atSeconds: number; run(): Promise<void> }> = []
): Promise<MixResult> {
  const latencies = streams.map(() => [] as number[])
  const statuses = streams.map(() => ({}) as Record<string, number>)
  const errors = streams.map(() => ({ count: 0, samples: [] as string[] }))
  const lags: number[] = []
  let inFlight = 0
  let next = 0
  const start = performance.now() + 50
  const end = start + seconds * 1000
  const period = streams.map((s) => 1000 / (s.rate * multiple))
  const sent = streams.map(() => 0)
  const failed = (n: number, why: string) => {
    errors[n]!.count++
    if (errors[n]!.samples.length < 5) errors[n]!.samples.push(why.slice(0, 200))
  }

  const fire = async (n: number, i: number, scheduled: number) => {
    const stream = streams[n]!
    const planned = stream.request(i)
    const pool = targets[next++ % targets.length]!
    inFlight++
    lags.push(performance.now() - scheduled)
    try {
      const headers = { ...planned.headers, ...(planned.body !== undefined ? { 'content-type': 'application/json' } : {}) }
      const res = await pool.request({ method: planned.method, path: planned.path, headers, body: planned.body === undefined ? undefined : JSON.stringify(planned.body) })
      const text = stream.ok(res.statusCode) ? (await res.body.dump(), '') : await res.body.text()
      latencies[n]!.push(performance.now() - scheduled)
      statuses[n]![res.statusCode] = (statuses[n]![res.statusCode] ?? 0) + 1
      if (!stream.ok(res.statusCode)) failed(n, `${res.statusCode} ${text}`)
      stream.answered?.(i, res.statusCode, res.headers)
    } catch (err) {
      latencies[n]!.push(performance.now() - scheduled)
      failed(n, (err as Error).message)
    } finally {
      inFlight--
    }
  }

  const pending = events.map((e) => ({ at: start + e.atSeconds * 1000, run: e.run, started: undefined as Promise<void> | undefined }))
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now()
      for (let n = 0; n < streams.length; n++) {
        let due = start + sent[n]! * period[n]!
        while (due <= now && due < end) {
          void fire(n, sent[n]!, due)
          sent[n]!++
          due = start + sent[n]! * period[n]!
        }
      }
      for (const e of pending) if (!e.started && e.at <= now) e.started = e.run()
      if (now < end) setTimeout(tick, 1)
      else resolve()
    }
    setTimeout(tick, Math.max(0, start - performance.now()))
  })
  const drainDeadline = performance.now() + DRAIN_MS
  while (inFlight > 0 && performance.now() < drainDeadline) await new Promise((resolve) => setTimeout(resolve, 20))
  const unanswered = inFlight
  await Promise.all(pending.map((e) => e.started))

  const routes = streams.map((stream, n): RouteFigures => {
    const sorted = Float64Array.from(latencies[n]!).sort()
    return {
      route: stream.route,
      read: stream.read,
      requests: sent[n]!,
      throughput: Math.round((sorted.length / seconds) * 10) / 10,
      p50Ms: ms(quantile(sorted, 0.5)),
      p99Ms: ms(quantile(sorted, 0.99)),
      p999Ms: ms(quantile(sorted, 0.999)),
      maxMs: ms(sorted.at(-1) ?? 0),
      // A copy: answers still arriving after the drain deadline must not change the figures afterwards.
      statuses: { ...statuses[n]! },
      errors: errors[n]!.count + (sent[n]! - sorted.length),
      errorSamples: errors[n]!.samples
    }
  })
  const sortedLags = Float64Array.from(lags).sort()
  return {
    multiple,
    seconds,
    routes,
    sendLagMs: { p50: ms(quantile(sortedLags, 0.5)), p99: ms(quantile(sortedLags, 0.99)), max: ms(sortedLags.at(-1) ?? 0) },
    unanswered
  }
}
