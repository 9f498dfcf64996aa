// The root logger. Secrets never reach the log: credential headers and secret-named fields are
// redacted, and URLs lose the path segments and query values that carry secrets.
import type { IncomingMessage } from 'node:http'
import pino, { type DestinationStream, type Logger } from 'pino'
import pretty from 'pino-pretty'

const SECRET_FIELDS = [
  'password', 'newPassword', 'client_secret', 'clientSecret', 'secret', 'token', 'accessToken', 'access_token',
  'refresh_token', 'refreshToken', 'apiKey', 'code', 'verificationCode', 'serverId', 'sso', 'sig', 'code_verifier'
]

export const redactPaths = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  ...SECRET_FIELDS.flatMap((f) => [f, `*.${f}`])
]

const SECRET_QUERY = /token|code|secret|password|sig|sso|key|verifier/i

/** The request URL as it may be logged: the device's serverId and secret query values blanked. */
export function redactUrl(url: string): string {
  const [path, query] = url.split('?', 2) as [string, string | undefined]
  // Whatever follows it: a probing or buggy box must not write its only secret to the log.
  const safePath = path.replace(/(\/replay-servers\/device\/)[^/]+/, '$1[redacted]')
  if (!query) return safePath
  const params = new URLSearchParams(query)
  for (const key of [...params.keys()]) if (SECRET_QUERY.test(key)) params.set(key, '[redacted]')
  return `${safePath}?${params.toString()}`
}

export function createLogger(level: string, stream?: DestinationStream): Logger {
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
export function consoleStream(isTty: boolean, destination: NodeJS.WritableStream = process.stdout): DestinationStream | undefined {
  if (!isTty) return undefined
  return pretty({ destination, sync: true, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
}
