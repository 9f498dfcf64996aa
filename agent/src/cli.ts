// Command-line parsing for club-agent.
import { parseArgs } from 'node:util'
import { DEFAULT_CONFIG_PATH, envName, AgentConfigSchema } from './config.js'

export type CliCommand =
  | { kind: 'run'; configPath?: string }
  | { kind: 'local-password'; configPath?: string }
  | { kind: 'setup'; configPath?: string; server: string; name?: string; releaseKey?: string; fingerprints?: string[]; start: boolean }
  | { kind: 'install-update'; configPath?: string; version: string }
  | { kind: 'help' }
  | { kind: 'version' }

export function parseCli(argv: string[]): CliCommand {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', short: 'c' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
      server: { type: 'string' },
      name: { type: 'string' },
      'release-key': { type: 'string' },
      fingerprint: { type: 'string', multiple: true },
      'no-start': { type: 'boolean' }
    },
    allowPositionals: true,
    strict: true
  })
  if (values.help) return { kind: 'help' }
  if (values.version) return { kind: 'version' }
  const configPath = values.config ? { configPath: values.config } : {}
  if (positionals.length === 0) return { kind: 'run', ...configPath }
  if (positionals.length === 1 && positionals[0] === 'local-password') return { kind: 'local-password', ...configPath }
  if (positionals.length === 1 && positionals[0] === 'setup') {
    if (!values.server) throw new Error('setup needs --server URL (the club platform API)')
    return {
      kind: 'setup',
      ...configPath,
      server: values.server,
      ...(values.name ? { name: values.name } : {}),
      ...(values['release-key'] ? { releaseKey: values['release-key'] } : {}),
      ...(values.fingerprint?.length ? { fingerprints: values.fingerprint } : {}),
      start: !values['no-start']
    }
  }
  if (positionals.length === 2 && positionals[0] === 'install-update') return { kind: 'install-update', ...configPath, version: positionals[1]! }
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
    '       club-agent setup --server URL [--name NAME] [--release-key FILE] [--fingerprint F]... [--no-start]',
    '                                                   first-time setup: writes the configuration and the release key,',
    '                                                   (--fingerprint, recommended: refuses any release key not listed)',
    '                                                   checks the server and ffmpeg, starts the service, prints the deviceId',
    '       club-agent install-update VERSION           (root, from club-agent-update@.service) installs a checked package,',
    '                                                   puts the previous one back if the new one does not reach the server',
    '',
    `Records every camera of a venue and cuts replay clips. Reads FILE (default ${DEFAULT_CONFIG_PATH}),`,
    'a JSON object of the settings below; each can be overridden by its environment variable.',
    '',
    ...settings
  ].join('\n')
}
