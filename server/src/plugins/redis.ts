// The Redis connection the rate limits count in when REDIS_URL is set (docs/running-a-server.md,
// "Rate limits across processes (Redis)"). Redis being away never refuses or holds up a request: commands fail at once
// or after a short timeout, and the outage is logged once when it starts and once when it ends.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'

declare module 'fastify' {
  interface FastifyInstance {
    /** The Redis client when REDIS_URL is set; null counts everything in this process. */
    redis: Redis | null
  }
}

/** How long connecting, or one command, may take before it counts as failed. */
const REDIS_TIMEOUT_MS = 500

/** Where REDIS_URL points, for the log: host, port and database or the socket path, never the password. */
function redisTarget(url: string): string {
  if (url.startsWith('/')) return url.replace(/\?.*$/, '')
  const parsed = new URL(url)
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`
}

/**
 * Whether Redis answers, as the log tells it: one warn when it becomes unreachable, one info when
 * it is back, however many requests pass (uncounted) in between.
 */
class RedisReachability {
  #state: 'connecting' | 'up' | 'down' | 'closing' = 'connecting'

  constructor(private readonly deps: { log: FastifyBaseLogger; target: string }) {}

  reached(): void {
    const { log, target } = this.deps
    if (this.#state === 'down') log.info({ redis: target }, 'Redis is reachable again: the rate limits count in it')
    else if (this.#state === 'connecting') log.info({ redis: target }, 'the rate limits count in Redis')
    if (this.#state !== 'closing') this.#state = 'up'
  }

  lost(err?: Error): void {
    if (this.#state === 'down' || this.#state === 'closing') return
    this.#state = 'down'
    this.deps.log.warn(
      { err, redis: this.deps.target },
      'Redis is unreachable: the rate limits let every request through until it is back (reconnecting in the background)'
    )
  }

  /** The app closes the connection itself: that is no outage. */
  closing(): void {
    this.#state = 'closing'
  }
}

/** A client that fails fast instead of queueing while Redis is away, and keeps reconnecting. */
async function openRedis(url: string, log: FastifyBaseLogger): Promise<{ client: Redis; reachability: RedisReachability }> {
  // Loaded only when REDIS_URL is set: most servers, every CLI command and test app count in-process.
  const { Redis } = await import('ioredis')
  const client = new Redis(url, {
    // A command while disconnected fails at once instead of waiting for the connection.
    enableOfflineQueue: false,
    connectTimeout: REDIS_TIMEOUT_MS,
    // A Redis that accepts the connection but stops answering costs a request this much, no more.
    commandTimeout: REDIS_TIMEOUT_MS,
    maxRetriesPerRequest: 1
    // retryStrategy stays ioredis's: reconnect with a growing delay (at most 2 s), forever.
  })
  const reachability = new RedisReachability({ log, target: redisTarget(url) })
  client.on('ready', () => reachability.reached())
  // Without an 'error' listener ioredis prints every failed reconnection to the console.
  client.on('error', (err: Error) => reachability.lost(err))
  client.on('close', () => reachability.lost())
  return { client, reachability }
}

export default fp(
  async function redis(app: FastifyInstance) {
    const url = app.config.REDIS_URL
    if (!url) {
      app.decorate('redis', null)
      return
    }
    const { client, reachability } = await openRedis(url, app.log)
    app.decorate('redis', client)
    app.addHook('onClose', async () => {
      reachability.closing()
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect())
      else client.disconnect()
    })
    // Wait for the first attempt, which connectTimeout bounds, so the first requests already count
    // in Redis; a Redis that is down at start is logged and does not stop the server.
    await new Promise<void>((resolve) => {
      const settled = () => {
        client.off('ready', settled)
        client.off('close', settled)
        resolve()
      }
      client.on('ready', settled)
      client.on('close', settled)
    })
  },
  { name: 'redis', dependencies: ['services'] }
)
