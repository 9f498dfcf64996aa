// Command-line parsing for club-agent.
import { parseArgs } from 'node:util'
import { DEFAULT_CONFIG_PATH, envName, AgentConfigSchema } from './config.js'

export type CliCommand =
  | { kind: 'run'; configPath?: string }
  | { kind: 'local-password'; configPath?: string }
  | { kind: 'help' }
  | { kind: 'version' }

export function parseCli(argv: string[]): CliCommand {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' } },
    allowPositionals: true,
    strict: true
  })
  if (values.help) return { kind: 'help' }
  if (values.version) return { kind: 'version' }
  const configPath = values.config ? { configPath: values.config } : {}
  if (positionals.length === 0) return { kind: 'run', ...configPath }
  if (positionals.length === 1 && positionals[0] === 'local-password') return { kind: 'local-password', ...configPath }
  throw new Error(`unknown command ${positionals.join(' ')} (try --help)`)
}

export function usage(): string {
  const settings = Object.entries(AgentConfigSchema.properties).map(
    ([key, schema]) => `  ${key.padEnd(22)} ${envName(key).padEnd(36)} ${(schema as { description?: string }).description ?? ''}`
  )
  return [
    'Usage: club-agent [--config FILE]                  run the agent',
    '       club-agent local-password [--config FILE]   print a new one-time password for the local API',
    '                                                   (ends every session signed in with the previous one)',
    '',
    `Records every camera of a venue and cuts replay clips. Reads FILE (default ${DEFAULT_CONFIG_PATH}),`,
    'a JSON object of the settings below; each can be overridden by its environment variable.',
    '',
    ...settings
  ].join('\n')
}
