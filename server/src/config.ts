// Environment → typed, validated configuration. The schema is the only definition of the settings:
// the Config type is derived from it, and the README's table lists the same names.
import Type, { type Static } from 'typebox'
import { Value } from 'typebox/value'

const Int = (options: { default?: number; minimum?: number; maximum?: number; description: string }) =>
  Type.Integer({ minimum: 0, ...options })

export const ConfigSchema = Type.Object({
  PORT: Int({ default: 3000, maximum: 65535, description: 'Port to listen on' }),
  HOST: Type.String({ default: '0.0.0.0', minLength: 1, description: 'Address to listen on' }),
  DATABASE_URL: Type.String({ default: 'data/club.db', minLength: 1, description: 'SQLite file path (or :memory:)' }),
  LOG_LEVEL: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { default: 'info' }),
  TRUST_PROXY: Type.String({
    default: 'false',
    description: 'false, true, a hop count, or comma-separated proxy addresses/CIDRs whose X-Forwarded-For is trusted'
  }),
  PUBLIC_BASE_URL: Type.String({ default: 'http://localhost:3000', pattern: '^https?://', description: 'Base of links the API sends out' }),
  ACCESS_TOKEN_TTL_SECONDS: Int({ default: 3600, minimum: 60, description: 'Access token lifetime' }),
  REFRESH_TOKEN_TTL_SECONDS: Int({ default: 30 * 24 * 3600, minimum: 60, description: 'Refresh token lifetime' }),
  PASSWORD_GRANT_ENABLED: Type.Boolean({ default: true, description: 'Allow the password grant (first-party apps)' }),
  PASSWORD_HASH_COST: Int({
    default: 65536,
    minimum: 1024,
    description: 'scrypt N (a power of two). Lower it only for tests'
  }),
  API_KEY_RATE_LIMIT_MAX: Int({ default: 300, minimum: 1, description: 'Requests per window per client IP with an API key' }),
  API_KEY_RATE_LIMIT_WINDOW_SECONDS: Int({ default: 60, minimum: 1, description: 'Window of the API key rate limit' }),
  BODY_LIMIT_BYTES: Int({ default: 1048576, minimum: 1024, description: 'Largest request body accepted' }),
  SHUTDOWN_TIMEOUT_SECONDS: Int({ default: 10, minimum: 1, description: 'How long in-flight requests may take on shutdown' }),
  REPLAY_POLL_INTERVAL_SECONDS: Int({ default: 30, minimum: 1, maximum: 3600, description: 'Status polling interval recommended to recording boxes' }),
  REPLAY_REGISTRATION_RATE_LIMIT_MAX: Int({ default: 30, minimum: 1, description: 'Recording box registrations per minute per client IP' }),
  DEVICE_TOKEN_SECRET: Type.String({
    default: '',
    pattern: '^$|^.{32,}$',
    description:
      'Key (32+ characters) from which device access tokens are derived. Empty: one is generated and kept in the database'
  })
})
export type Config = Static<typeof ConfigSchema>

export class ConfigError extends Error {
  override name = 'ConfigError'
}

const keys = Object.keys(ConfigSchema.properties) as Array<keyof Config>

/**
 * Reads the settings from an environment (process.env by default), converts and checks them.
 * Throws a ConfigError whose message is one line naming the variable at fault.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const raw: Record<string, unknown> = {}
  for (const key of keys) {
    const value = env[key]
    if (value !== undefined && value !== '') raw[key] = value
  }
  const converted = Value.Convert(ConfigSchema, Value.Default(ConfigSchema, raw)) as Record<string, unknown>
  const candidate = { ...converted, ...overrides }
  for (const key of keys) {
    const schema = ConfigSchema.properties[key]
    if (!Value.Check(schema, candidate[key])) {
      const shown = env[key] ?? String(candidate[key])
      throw new ConfigError(`${key}=${JSON.stringify(shown)} is not valid: expected ${describe(schema as unknown as Record<string, unknown>)}`)
    }
  }
  const config = candidate as Config
  if (!Number.isInteger(Math.log2(config.PASSWORD_HASH_COST))) {
    throw new ConfigError(`PASSWORD_HASH_COST=${config.PASSWORD_HASH_COST} is not valid: expected a power of two`)
  }
  parseTrustProxy(config.TRUST_PROXY)
  return config
}

function describe(schema: Record<string, unknown>): string {
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.join(', ')}`
  if (schema.type === 'integer') {
    const bounds = [schema.minimum !== undefined ? `>= ${schema.minimum}` : '', schema.maximum !== undefined ? `<= ${schema.maximum}` : '']
    return `a whole number ${bounds.filter(Boolean).join(' and ')}`.trim()
  }
  if (schema.type === 'boolean') return 'true or false'
  if (schema.pattern) return `a value matching ${schema.pattern}`
  return 'a non-empty string'
}

/** TRUST_PROXY as Fastify's `trustProxy` option takes it. */
export function parseTrustProxy(value: string): boolean | number | string[] {
  const v = value.trim()
  if (v === 'true') return true
  if (v === 'false' || v === '') return false
  if (/^\d+$/.test(v)) return Number(v)
  const list = v.split(',').map((s) => s.trim()).filter(Boolean)
  if (list.some((s) => !/^[0-9a-fA-F:.\/]+$/.test(s))) {
    throw new ConfigError(`TRUST_PROXY=${JSON.stringify(value)} is not valid: expected true, false, a hop count or a list of addresses`)
  }
  return list
}
