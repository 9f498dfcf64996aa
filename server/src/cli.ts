#!/usr/bin/env node
// The `club` command: administration from a shell. Migrates first, prints JSON on stdout, and on
// any error prints one line on stderr and exits non-zero.
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { systemClock } from './clock.js'
import { loadConfig } from './config.js'
import { DATABASE_BUSY_MESSAGE, isDatabaseBusy, migrateToLatest, openDatabase, type Db } from './db/database.js'
import { createApiKey, revokeApiKey } from './api-keys/service.js'
import { createClient } from './oauth2/clients.js'
import { membershipCommands } from './memberships/cli.js'
import { TEST_CARDS_HELP } from './payments/test-provider.js'
import { deviceCommands } from './replay-servers/cli.js'
import { setDefaultPaymentMethod } from './users/payment-methods.js'
import { createUser, findUserByEmail, toUser, userRecord } from './users/service.js'
import { venueCommands } from './venue/cli.js'
import type { Config } from './config.js'

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

/** Parses a command's flags; `required` flags must be present. Unknown flags are an error. */
export function flags<const O extends Options>(
  args: string[],
  options: O,
  required: Array<keyof O & string> = []
): { values: { [K in keyof O]?: O[K] extends { multiple: true } ? string[] : string }; positionals: string[] } {
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

async function userIdByEmail(db: Db, email: string): Promise<string> {
  const user = await findUserByEmail(db, email)
  if (!user) throw new UsageError(`no user with email ${email}`)
  return user.id
}

export type Command = (ctx: CommandContext) => Promise<unknown>

/**
 * Commands by their words: `users create` → commands['users create']. Each area keeps its commands
 * in its own folder (`<area>/cli.ts`, a Record<string, Command>) and they are spread in here.
 */
export const commands: Record<string, Command> = {
  ...deviceCommands,

  async migrate({ applied }) {
    return { applied }
  },

  async 'users create'({ db, config, args }) {
    const { values } = flags(
      args,
      {
        email: { type: 'string' },
        password: { type: 'string' },
        role: { type: 'string' },
        'first-name': { type: 'string' },
        'last-name': { type: 'string' }
      },
      ['email', 'password']
    )
    const role = values.role ?? 'member'
    if (!['member', 'staff', 'admin'].includes(role)) throw new UsageError('--role must be admin, staff or member')
    const user = await createUser(
      db,
      {
        email: values.email!,
        password: values.password!,
        role: role as 'member' | 'staff' | 'admin',
        firstName: values['first-name'] ?? null,
        lastName: values['last-name'] ?? null
      },
      { clock: systemClock, passwordHashCost: config.PASSWORD_HASH_COST }
    )
    return toUser(userRecord(user), `/apis/v2/users/${user.id}`)
  },

  async 'clients create'({ db, args }) {
    const { values } = flags(
      args,
      {
        name: { type: 'string' },
        'redirect-uri': { type: 'string', multiple: true },
        grant: { type: 'string', multiple: true },
        scope: { type: 'string', multiple: true }
      },
      ['name']
    )
    const { clientId, clientSecret } = await createClient(
      db,
      { name: values.name!, redirectUris: values['redirect-uri'], grants: values.grant, scopes: values.scope },
      systemClock
    )
    return { clientId, clientSecret }
  },

  async 'api-keys create'({ db, args }) {
    const { values } = flags(args, { email: { type: 'string' }, name: { type: 'string' } }, ['email'])
    const userId = await userIdByEmail(db, values.email!)
    const { id, apiKey } = await createApiKey(db, userId, systemClock, values.name ?? null)
    return { id, apiKey }
  },

  async 'api-keys revoke'({ db, args }) {
    const { values } = flags(args, { id: { type: 'string' } }, ['id'])
    await revokeApiKey(db, values.id!, systemClock)
    return { id: values.id, revoked: true }
  },

  async 'payment-methods set'({ db, args }) {
    const { values } = flags(
      args,
      {
        email: { type: 'string' },
        brand: { type: 'string' },
        last4: { type: 'string' },
        'exp-month': { type: 'string' },
        'exp-year': { type: 'string' }
      },
      ['email', 'brand', 'last4', 'exp-month', 'exp-year']
    )
    const userId = await userIdByEmail(db, values.email!)
    return setDefaultPaymentMethod(
      db,
      userId,
      {
        brand: values.brand!,
        last4: values.last4!,
        expMonth: integer(values['exp-month'], 'exp-month')!,
        expYear: integer(values['exp-year'], 'exp-year')!
      },
      systemClock
    )
  },

  ...venueCommands,
  ...membershipCommands
}

/** `club <command> --help`: what a command's flags mean, where the flag names alone do not say it. */
export const commandHelp: Record<string, string> = {
  'payment-methods set': [
    'usage: club payment-methods set --email E --brand B --last4 D --exp-month M --exp-year Y',
    "Sets a user's default payment method (no card number: what a payment provider would keep).",
    TEST_CARDS_HELP
  ].join('\n')
}

export const usage = () =>
  `usage: club <command> [flags]\ncommands:\n${Object.keys(commands)
    .map((c) => `  ${c}`)
    .join('\n')}`

/** Runs one command line; returns the exit code. Output goes to the given writers. */
export async function runCli(
  argv: string[],
  env: Record<string, string | undefined>,
  out: (s: string) => void,
  err: (s: string) => void
): Promise<number> {
  const words = argv.filter((a) => !a.startsWith('-'))
  const name = [words.slice(0, 2).join(' '), words[0]].find((n) => n !== undefined && n in commands)
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help') {
    out(usage())
    return argv.length === 0 ? 1 : 0
  }
  if (!name) {
    err(`club: unknown command "${words.slice(0, 2).join(' ')}"; run "club help" for the list`)
    return 2
  }
  const args = argv.slice(argv.indexOf(name.split(' ').at(-1)!) + 1)
  if (args.includes('--help') && commandHelp[name]) {
    out(commandHelp[name])
    return 0
  }
  let db: Db | undefined
  try {
    const config = loadConfig(env)
    db = openDatabase(config.DATABASE_URL, { busyTimeoutMs: config.DATABASE_BUSY_TIMEOUT_MS })
    const applied = await migrateToLatest(db)
    const result = await commands[name]!({ db, config, args, applied })
    out(JSON.stringify(result, null, 2))
    return 0
  } catch (e) {
    const message = isDatabaseBusy(e) ? DATABASE_BUSY_MESSAGE : e instanceof Error ? e.message : String(e)
    err(`club ${name}: ${message}`)
    return e instanceof UsageError ? 2 : 1
  } finally {
    await db?.destroy()
  }
}

// Run when executed directly (the `club` bin), not when imported by tests.
if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('/club')) {
  runCli(process.argv.slice(2), process.env, (s) => process.stdout.write(`${s}\n`), (s) => process.stderr.write(`${s}\n`)).then(
    (code) => {
      process.exitCode = code
    }
  )
}
