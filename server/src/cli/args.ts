// What every area's commands (`<area>/cli.ts`) share: parsing their flags, the usage error, their
// context. Apart from cli.ts, which imports every area's commands, so that no area imports it back.
import { parseArgs, type ParseArgsConfig } from 'node:util'
import type { Config } from '../config.js'
import type { Db } from '../db/database.js'

export class UsageError extends Error {
  override name = 'UsageError'
}

export interface CommandContext {
  db: Db
  config: Config
  args: string[]
  /** Migrations the run applied before the command (every command migrates first). */
  applied: string[]
}

type Options = NonNullable<ParseArgsConfig['options']>

/**
 * Thrown by flags() when asked for --help: carries the command's own flag declarations, so the help
 * is derived from what the command really parses and cannot drift from it.
 */
export class HelpRequested extends Error {
  override name = 'HelpRequested'
  constructor(
    readonly options: Options,
    readonly required: string[],
    readonly positionals: string
  ) {
    super('help requested')
  }
}

/**
 * Parses a command's flags; `required` flags must be present. Unknown flags are an error.
 * `positionals` names the words the command takes besides flags (e.g. "FILE"), for its help.
 */
export function flags<const O extends Options>(
  args: string[],
  options: O,
  required: Array<keyof O & string> = [],
  positionals = ''
): { values: { [K in keyof O]?: O[K] extends { multiple: true } ? string[] : string }; positionals: string[] } {
  if (args.includes('--help') || args.includes('-h')) throw new HelpRequested(options, required, positionals)
  let parsed
  try {
    parsed = parseArgs({ args, options: options as Options, allowPositionals: true, strict: true })
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err))
  }
  for (const name of required) {
    if (parsed.values[name] === undefined) throw new UsageError(`missing required flag --${name}`)
  }
  return parsed as never
}

export function integer(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined
  if (!/^-?\d+$/.test(value)) throw new UsageError(`--${name} must be a whole number, got ${JSON.stringify(value)}`)
  return Number(value)
}

export type Command = (ctx: CommandContext) => Promise<unknown>

/** A command that must not open the database first (every other command opens and migrates it). */
export type StandaloneCommand = (ctx: { config: Config; args: string[] }) => Promise<unknown>
