// The agent's settings: a JSON file whose every key can be overridden by an environment variable
// (CLUB_AGENT_ plus the key in upper snake case). The schema is the only definition of them.
import { readFileSync } from 'node:fs'
import cron from 'node-cron'
import Type, { type Static } from 'typebox'
import { Value } from 'typebox/value'

export const DEFAULT_CONFIG_PATH = '/etc/club-agent/agent.json'

const Int = (options: { default?: number; minimum?: number; maximum?: number; description: string }) =>
  Type.Integer({ minimum: 0, ...options })
const Url = (description: string) => Type.String({ pattern: '^https?://[^\\s]+$', description })
const Dir = (fallback: string, description: string) => Type.String({ minLength: 1, default: fallback, description })

export const AgentConfigSchema = Type.Object(
  {
    serverUrl: Url('Base URL of the club platform API, e.g. https://api.example.org'),
    stateDir: Dir('/var/lib/club-agent', 'Where the identity, token and last approved configuration are kept'),
    recordingsDir: Dir('/var/lib/club-agent/recordings', 'Continuous recordings, one folder per camera'),
    clipsDir: Dir('/var/lib/club-agent/clips', 'Exported replay clips'),
    displayName: Type.Optional(Type.String({ maxLength: 200, description: 'Name shown to the admin' })),
    publicUrl: Type.Optional(Url("The box's own externally reachable URL (its local API), reported to the server")),
    deviceId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[\\x20-\\x7E]+$', description: 'Overrides the hardware-derived device id' })),
    httpHost: Type.Optional(Type.String({ minLength: 1, description: 'Address of the local API (default: the address of the interface that reaches serverUrl, else 127.0.0.1)' })),
    httpPort: Int({ default: 8090, maximum: 65535, description: 'Port of the local API (0 picks a free one)' }),
    segmentSeconds: Int({ default: 10, minimum: 1, maximum: 600, description: 'Length of a recorded segment' }),
    retentionHours: Type.Number({ default: 72, exclusiveMinimum: 0, description: 'How long segments and clips are kept' }),
    minFreeDiskMb: Int({ default: 2048, description: 'Below this much free disk the oldest files are deleted' }),
    cleanupSchedule: Type.String({ default: '*/5 * * * *', minLength: 1, description: 'node-cron expression of the cleanup job' }),
    maxClipSeconds: Int({ default: 300, minimum: 1, description: 'Longest clip the local API cuts' }),
    maxDecoders: Int({ default: 2, minimum: 1, maximum: 64, description: 'Snapshot and export ffmpeg processes at once, besides the recordings' }),
    maxExports: Int({ default: 1, minimum: 1, maximum: 64, description: 'Clip exports at once; the others wait in order' }),
    maxQueuedExports: Int({ default: 10, minimum: 1, maximum: 1000, description: 'Clip exports allowed to wait; one more answers 429' }),
    sessionHours: Type.Number({ default: 12, exclusiveMinimum: 0, maximum: 720, description: 'Lifetime of a local sign-in (session cookie)' }),
    updateCommand: Type.String({
      default: 'systemctl start --no-block club-agent-update@"$1".service',
      minLength: 1,
      description: 'Starts the privileged installer for a checked package, the version as "$1" (appended when the command does not name it)'
    }),
    releaseKeyPath: Type.String({
      default: '/etc/club-agent/release-key.pem',
      minLength: 1,
      description: "The club's release key (public half, written by setup): packages not signed with it are refused"
    }),
    logLevel: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { default: 'info' }),
    ffmpegPath: Type.String({ default: 'ffmpeg', minLength: 1, description: 'The ffmpeg binary' }),
    ffprobePath: Type.String({ default: 'ffprobe', minLength: 1, description: 'The ffprobe binary' }),
    requestTimeoutSeconds: Int({ default: 15, minimum: 1, description: 'Timeout of one call to the server' }),
    replayFlushSeconds: Type.Number({
      default: 2.5,
      minimum: 0,
      maximum: 60,
      description: "Seconds after a replay's end before it is cut: the recording writes footage at each keyframe, so more than the cameras' keyframe interval"
    }),
    uploadAttempts: Int({ default: 8, minimum: 1, maximum: 100, description: 'Tries to upload a replay clip (backoff from 1 s doubling to 30 s) before it fails with upload_failed' })
  },
  { additionalProperties: false }
)
export type AgentConfig = Static<typeof AgentConfigSchema>

export class ConfigError extends Error {
  override name = 'ConfigError'
}

const keys = Object.keys(AgentConfigSchema.properties) as Array<keyof AgentConfig>

/** `segmentSeconds` → `CLUB_AGENT_SEGMENT_SECONDS`. */
export function envName(key: string): string {
  return `CLUB_AGENT_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`
}

/**
 * Reads the file (which may be absent only when it is the default path), applies the environment
 * over it and checks the result. Throws a ConfigError with one line naming the setting at fault.
 */
export function loadAgentConfig(path: string | undefined, env: Record<string, string | undefined> = process.env): AgentConfig {
  const file = readConfigFile(path ?? DEFAULT_CONFIG_PATH, path === undefined)
  const unknown = Object.keys(file).filter((k) => !(keys as string[]).includes(k))
  if (unknown.length > 0) throw new ConfigError(`${unknown[0]} in the configuration file is not a setting (known: ${keys.join(', ')})`)
  const raw: Record<string, unknown> = { ...file }
  for (const key of keys) {
    const value = env[envName(key)]
    if (value !== undefined && value !== '') raw[key] = value
  }
  const candidate = Value.Convert(AgentConfigSchema, Value.Default(AgentConfigSchema, raw)) as Record<string, unknown>
  for (const key of keys) {
    const schema = AgentConfigSchema.properties[key] as unknown as Record<string, unknown>
    const value = candidate[key]
    if (value === undefined) {
      if (!((AgentConfigSchema.required ?? []) as string[]).includes(key)) continue
      throw new ConfigError(`${key} is required (in the configuration file or ${envName(key)})`)
    }
    if (!Value.Check(AgentConfigSchema.properties[key], value)) {
      throw new ConfigError(`${key}=${JSON.stringify(value)} is not valid: ${String(schema.description ?? '')} (${describe(schema)})`)
    }
  }
  if (!cron.validate(candidate.cleanupSchedule as string)) {
    throw new ConfigError(`cleanupSchedule=${JSON.stringify(candidate.cleanupSchedule)} is not valid: expected a cron expression such as "*/5 * * * *"`)
  }
  return candidate as AgentConfig
}

function readConfigFile(path: string, optional: boolean): Record<string, unknown> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    if (optional && (err as NodeJS.ErrnoException).code === 'ENOENT') return {}
    throw new ConfigError(`cannot read the configuration file ${path}: ${(err as Error).message}`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw new ConfigError(`the configuration file ${path} is not JSON: ${(err as Error).message}`)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`the configuration file ${path} must hold a JSON object`)
  }
  return parsed as Record<string, unknown>
}

function describe(schema: Record<string, unknown>): string {
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.join(', ')}`
  if (schema.type === 'integer') {
    const bounds = [schema.minimum !== undefined ? `>= ${schema.minimum}` : '', schema.maximum !== undefined ? `<= ${schema.maximum}` : '']
    return `a whole number ${bounds.filter(Boolean).join(' and ')}`.trim()
  }
  if (schema.type === 'number') return 'a number above 0'
  if (schema.pattern) return `a value matching ${schema.pattern}`
  return 'a non-empty string'
}
