// The agent's root logger. The serverId, the access token, the local password and session cookies
// are secrets: any field of that name is censored, and the code never puts them in a message.
import pino, { type DestinationStream, type Logger } from 'pino'

const SECRET_FIELDS = ['serverId', 'accessToken', 'token', 'authorization', 'password', 'cookie', '["set-cookie"]']

export function createLogger(level: string, stream?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { name: 'club-agent' },
      redact: { paths: SECRET_FIELDS.flatMap((f) => (f.startsWith('[') ? [`*${f}`, `*.*${f}`] : [f, `*.${f}`, `*.*.${f}`])), censor: '[redacted]' },
      serializers: { err: pino.stdSerializers.err }
    },
    stream
  )
}

export type { Logger }
