// The root logger, and the one line each request is logged with. Secrets never reach the log: the
// request line is built from the method, the URL with its secret parts blanked, the status and the
// time (never headers or bodies), and the few known places a credential could appear in a logged
// object are redacted by exact path. Wildcard paths cost a walk over every line written, so only the
// four commonest names are redacted one level down too ({ user: { password } }).
import type { IncomingMessage } from 'node:http'
import { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import pino, { type DestinationStream, type Logger } from 'pino'

/** Top-level fields of a logged object that would hold a secret, should anyone log one. */
const SECRET_FIELDS = [
  'password', 'newPassword', 'client_secret', 'clientSecret', 'secret', 'token', 'accessToken', 'access_token',
  'refresh_token', 'refreshToken', 'apiKey', 'code', 'verificationCode', 'serverId', 'sso', 'sig', 'code_verifier'
]

/** Fields redacted inside any top-level field as well. */
const NESTED_SECRET_FIELDS = ['password', 'token', 'secret', 'code']

export const redactPaths = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  ...SECRET_FIELDS,
  ...NESTED_SECRET_FIELDS.map((f) => `*.${f}`)
]

const SECRET_QUERY = /token|code|secret|password|sig|sso|key|verifier/i
const DEVICE_PATH = /(\/replay-servers\/device\/)[^/?]+/

/** The request URL as it may be logged: the device's serverId and secret query values blanked. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?')
  const path = q === -1 ? url : url.slice(0, q)
  // Whatever follows it: a probing or buggy box must not write its only secret to the log.
  const safePath = path.includes('/replay-servers/device/') ? path.replace(DEVICE_PATH, '$1[redacted]') : path
  if (q === -1) return safePath
  // Every key is part of the query text as it is when nothing is percent-encoded: then, when no
  // secret name appears anywhere in it, no key can be one, and the query is kept as sent without
  // parsing it (most requests with a query). An encoded key (%74oken) takes the parse below.
  const query = url.slice(q + 1)
  if (!query.includes('%') && !SECRET_QUERY.test(query)) return `${safePath}?${query}`
  const params = new URLSearchParams(query)
  for (const key of [...params.keys()]) if (SECRET_QUERY.test(key)) params.set(key, '[redacted]')
  return `${safePath}?${params.toString()}`
}

/** How long a line may wait in the buffer of the default destination before it is written. */
const FLUSH_INTERVAL_MS = 200

/**
 * Standard output as pino's default destination, except that lines are written 4 KB at a time (or
 * after FLUSH_INTERVAL_MS, whichever comes first) rather than one write per line: under load the
 * write calls cost more than the lines. Whatever is buffered is written when the process exits.
 */
function bufferedStdout(): DestinationStream {
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096 })
  const timer = setInterval(() => {
    // flush() throws while the file descriptor is not open yet (the first tick after start).
    try {
      destination.flush()
    } catch {
      // the next tick writes it
    }
  }, FLUSH_INTERVAL_MS)
  timer.unref()
  destination.on('close', () => clearInterval(timer))
  return destination
}

export function createLogger(level: string, stream: DestinationStream = bufferedStdout()): Logger {
  return pino(
    {
      level,
      redact: { paths: redactPaths, censor: '[redacted]' },
      serializers: {
        req: (req: IncomingMessage & { ip?: string; hostname?: string }) => ({
          method: req.method,
          url: redactUrl(req.url ?? ''),
          host: req.headers?.host,
          remoteAddress: req.ip ?? req.socket?.remoteAddress
        }),
        err: pino.stdSerializers.err
      }
    },
    stream
  )
}

/**
 * Where the server's log goes: readable lines (pino-pretty) for an operator at a terminal, JSON lines
 * for anything else (a service manager's journal, a log shipper), which is what machines parse.
 * Redaction happens in pino before either, so both are free of secrets.
 */
export async function consoleStream(isTty: boolean, destination: NodeJS.WritableStream = process.stdout): Promise<DestinationStream | undefined> {
  if (!isTty) return undefined
  // Loaded only for a terminal: no CLI command, test or service-managed server needs it.
  const { default: pretty } = await import('pino-pretty')
  return pretty({ destination, sync: true, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A route machines call every few seconds (status polls, health checks, metrics scrapes): its
     * request line is at debug, unless it failed or changed something (`request.changedSomething`).
     */
    quietLog?: boolean
  }
  interface FastifyRequest {
    /** Set by a quiet route's handler when the request changed something worth an info line. */
    changedSomething: boolean
  }
}

/**
 * One line per request, written once the answer is sent, in place of Fastify's pair (incoming,
 * completed): method, redacted URL, status, time in ms, and the request id (reqId, from the request's
 * logger). Quiet routes' lines are at debug unless they failed or changed something.
 */
export class RequestLog extends LogController {
  constructor() {
    super({ disableRequestLogging: false })
  }

  override incomingRequest(): void {}

  override routeNotFound(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const statusCode = reply.statusCode
    const quiet = request.routeOptions.config.quietLog === true && statusCode < 400 && !request.changedSomething && !error
    // The server's loggers are pino's (createLogger), whose level check spares building a line nobody writes.
    const log = request.log as unknown as Logger
    if (!log.isLevelEnabled(quiet ? 'debug' : 'info')) return
    const line = { method: request.method, url: redactUrl(request.url), statusCode, responseTime: Math.round(reply.elapsedTime * 100) / 100 }
    if (error) log.warn({ ...line, err: error }, 'request')
    else if (quiet) log.debug(line, 'request')
    else log.info(line, 'request')
  }
}

/** What the request line needs on every request: whether a quiet route changed something. */
export const requestLogging = fp(
  async function requestLogging(app: FastifyInstance) {
    app.decorateRequest('changedSomething', false)
  },
  { name: 'request-logging' }
)
