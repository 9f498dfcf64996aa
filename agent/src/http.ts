// The box's local API on the venue network: a liveness probe for anyone, and behind a credential
// (the device's access token, or an installer's session cookie) its state, cameras, snapshots and
// clip exports. Bounded everywhere a client could make it hold memory or a connection.
import { createHash, timingSafeEqual } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify'
import {
  agentLocalApi,
  type AgentHealth,
  type AgentLiveness,
  type Clip,
  type ClipExportJob,
  type ClipRequest,
  type LocalSignIn
} from '@club/contract'
import { loadPage, sendPage } from '@club/web/pages'
import type { LocalPassword } from './access/local-password.js'
import { SESSION_COOKIE, clearedSessionCookie, cookieValue, sessionCookie, type SessionStore, type SignInAttempts } from './access/sessions.js'
import { DecodersBusyError } from './decoders.js'
import type { Logger } from './log.js'

/** What the local API needs from the running agent. */
export interface LocalApiHandlers {
  live(): AgentLiveness
  health(): Promise<AgentHealth>
  /** The device's access token, when it has one. */
  accessToken(): string | undefined
  snapshot(cameraId: string): Promise<Buffer>
  /** Checks and queues an export: its job at once, and the clip when its turn has come and gone. */
  exportClip(request: ClipRequest): { job: ClipExportJob; finished: Promise<Clip> }
  exportJob(id: string): ClipExportJob | undefined
  exportJobs(): ClipExportJob[]
  /** The server says replays wait for this box: fetch them (not awaited). */
  replayRequests(): void
}

/** The installer's way in: the local password, the sessions it opens, the count of attempts. */
export interface LocalAccess {
  password: LocalPassword
  sessions: SessionStore
  attempts: SignInAttempts
}

/** Bounds on what one client may send; the defaults suit the box, tests shorten the timeouts. */
export interface LocalApiLimits {
  bodyLimit: number
  maxParamLength: number
  maxHeaderSize: number
  /** The whole request head must arrive within this. */
  headersTimeoutMs: number
  /** The whole request (head and body) must arrive within this. */
  requestTimeoutMs: number
  keepAliveTimeoutMs: number
  /** How often Node looks for requests past those timeouts. */
  connectionsCheckingIntervalMs: number
  maxConnections: number
}

export const DEFAULT_LIMITS: LocalApiLimits = {
  // The largest body the API takes is a clip request or a password: well under a kilobyte.
  bodyLimit: 16 * 1024,
  maxParamLength: 200,
  maxHeaderSize: 8 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  connectionsCheckingIntervalMs: 5_000,
  maxConnections: 128
}

/** Password checks at once, box-wide. */
const MAX_CONCURRENT_SIGN_INS = 2

export class HttpError extends Error {
  override name = 'HttpError'
  constructor(readonly statusCode: number, message: string, readonly headers: Record<string, string> = {}) {
    super(message)
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route answers without a credential. */
    public?: boolean
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest()
}

/** Compares digests, so the comparison takes the same time whatever the length of the guess. */
export function bearerMatches(header: string | undefined, token: string | undefined): boolean {
  if (!token || !header?.startsWith('Bearer ')) return false
  return timingSafeEqual(digest(header.slice('Bearer '.length).trim()), digest(token))
}

/** RFC 7240: the caller would rather have 202 and a job than wait for the clip. */
export function prefersAsync(header: string | undefined): boolean {
  return header !== undefined && /(^|,)\s*respond-async\s*(;|,|$)/i.test(header)
}

export function errorBody(statusCode: number, message: string) {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message }
}

export async function buildLocalApi(
  handlers: LocalApiHandlers,
  access: LocalAccess,
  log: Logger,
  limits: LocalApiLimits = DEFAULT_LIMITS
): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: log.child({ component: 'http' }) as unknown as FastifyBaseLogger,
    forceCloseConnections: true,
    bodyLimit: limits.bodyLimit,
    routerOptions: { maxParamLength: limits.maxParamLength },
    // Fastify's default drops unknown fields silently; the contract says they are an error.
    ajv: { customOptions: { removeAdditional: false } },
    // Errors the router raises before any route (a parameter too long, a malformed URL): same shape.
    frameworkErrors: (err, _request, reply: FastifyReply) => {
      const statusCode = (err as { statusCode?: number }).statusCode ?? 400
      void reply.code(statusCode).send(errorBody(statusCode, statusCode === 414 ? 'the URL is too long' : 'the request line is not valid'))
    },
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // No idle timeout on the socket: a synchronous export keeps its connection silent for minutes, and
    // slow senders are already cut by the header and request timeouts.
    connectionTimeout: 0,
    http: {
      maxHeaderSize: limits.maxHeaderSize,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: limits.connectionsCheckingIntervalMs
    }
  })
  app.server.maxConnections = limits.maxConnections

  app.setErrorHandler((err: Error & { statusCode?: number; validation?: unknown }, request, reply) => {
    if (err instanceof DecodersBusyError) {
      void reply.header('retry-after', String(err.retryAfterSeconds))
    }
    if (err instanceof HttpError) void reply.headers(err.headers)
    // A 502 or 503 is said on purpose (an export's bucket refused the clip, its footage is still being
    // written), its message naming only the bucket or the interval.
    const upstream = err instanceof HttpError && (err.statusCode === 502 || err.statusCode === 503)
    const statusCode = err.statusCode && ((err.statusCode >= 400 && err.statusCode < 500) || upstream) ? err.statusCode : 500
    if (statusCode === 500) request.log.error({ err }, 'request failed')
    const message = statusCode === 500 ? 'the agent could not complete the request' : err.message
    void reply.code(statusCode).send(errorBody(statusCode, message))
  })
  app.setNotFoundHandler((request, reply) => reply.code(404).send(errorBody(404, `Route ${request.method} ${request.url.split('?')[0]} not found`)))

  // Every route but the liveness probe and the sign-in, unknown routes included: a visitor on the
  // venue's Wi-Fi learns nothing, not even which routes exist.
  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config.public) return
    if (bearerMatches(request.headers.authorization, handlers.accessToken())) return
    const session = cookieValue(request.headers.cookie, SESSION_COOKIE)
    if (session && access.sessions.check(session, access.password.current()?.generation)) return
    void reply.header('www-authenticate', 'Bearer')
    throw new HttpError(401, "a credential is required: the device's access token as Bearer, or the session cookie of POST /session")
  })

  app.route({ ...agentLocalApi.live, config: { public: true }, logLevel: 'warn', handler: async () => handlers.live() })
  // Monitoring polls these every few seconds: keep them out of the journal unless they fail.
  app.route({ ...agentLocalApi.health, logLevel: 'warn', handler: () => handlers.health() })
  app.route({ ...agentLocalApi.cameras, logLevel: 'warn', handler: async () => (await handlers.health()).cameras })
  app.route({
    ...agentLocalApi.snapshot,
    handler: async (request, reply) => {
      const { id } = request.params as { id: string }
      const picture = await handlers.snapshot(id)
      return reply.type('image/jpeg').header('cache-control', 'no-store').send(picture)
    }
  })
  app.route({
    ...agentLocalApi.exportClip,
    handler: async (request, reply) => {
      const { job, finished } = handlers.exportClip(request.body as ClipRequest)
      if (prefersAsync(request.headers.prefer as string | undefined)) {
        return reply.code(202).header('location', `/clips/jobs/${job.id}`).header('preference-applied', 'respond-async').send(job)
      }
      return finished
    }
  })
  app.route({ ...agentLocalApi.exportJobs, handler: async () => handlers.exportJobs() })
  app.route({
    ...agentLocalApi.replayRequests,
    handler: async (_request, reply) => {
      handlers.replayRequests()
      return reply.code(202).send(null)
    }
  })
  app.route({
    ...agentLocalApi.exportJob,
    handler: async (request) => {
      const { id } = request.params as { id: string }
      const job = handlers.exportJob(id)
      if (!job) throw new HttpError(404, `no export ${id} (finished ones are kept only for a while)`)
      return job
    }
  })
  // The box's own page for the installer (read-only). The page and its scripts hold no data, so they
  // answer without a credential; everything they show comes from the routes above, behind one.
  const page = loadPage('box', '/')
  app.get('/', { config: { public: true }, logLevel: 'warn' }, async (request, reply) => sendPage(reply, page.html, request.headers['if-none-match']))
  app.get(`/${page.assetsPath}/*`, { config: { public: true }, logLevel: 'warn' }, async (request, reply) => {
    const file = page.asset((request.params as { '*': string })['*'])
    if (!file) throw new HttpError(404, 'no such file of the box page')
    return sendPage(reply, file, request.headers['if-none-match'])
  })

  let verifying = 0
  app.route({
    ...agentLocalApi.signIn,
    config: { public: true },
    handler: async (request, reply) => {
      // Each check costs scrypt's 16 MB and tens of milliseconds: a few at once, whatever
      // the addresses. Refused before counting, so a busy moment costs the installer no attempt.
      if (verifying >= MAX_CONCURRENT_SIGN_INS) {
        throw new HttpError(429, 'other sign-ins are being checked: try again in a second', { 'retry-after': '1' })
      }
      const attempt = access.attempts.take(request.ip)
      if (!attempt.allowed) {
        throw new HttpError(429, 'too many sign-in attempts from this address: wait and try again', { 'retry-after': String(attempt.retryAfterSeconds) })
      }
      verifying++
      const result = await access.password.verify((request.body as LocalSignIn).password).finally(() => verifying--)
      if (!result.ok) {
        request.log.warn({ address: request.ip }, 'local sign-in refused')
        throw new HttpError(401, 'wrong password (a new one is made on the box with: club-agent local-password)')
      }
      access.attempts.reset(request.ip)
      const { token, maxAgeSeconds } = access.sessions.create(result.generation)
      request.log.info({ address: request.ip }, 'local sign-in')
      return reply.code(204).header('set-cookie', sessionCookie(token, maxAgeSeconds)).header('cache-control', 'no-store').send()
    }
  })
  app.route({
    ...agentLocalApi.signOut,
    handler: async (request, reply) => {
      const session = cookieValue(request.headers.cookie, SESSION_COOKIE)
      if (session) access.sessions.end(session)
      return reply.code(204).header('set-cookie', clearedSessionCookie()).send()
    }
  })
  return app
}
