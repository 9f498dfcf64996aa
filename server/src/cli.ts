#!/usr/bin/env node
// The `club` command: administration from a shell. Migrates first, prints JSON on stdout, and on
// any error prints one line on stderr and exits non-zero.
import { systemClock } from './clock.js'
import { loadConfig, productionRefusal } from './config.js'
import { backupDatabase, restoreDatabase } from './db/backup.js'
import { DATABASE_BUSY_MESSAGE, dialectOf, isDatabaseBusy, migrateToLatest, migratorFor, openDatabase, type Db } from './db/database.js'
import { createApiKey, revokeApiKey } from './api-keys/service.js'
import { jobCommands, webhookCommands } from './jobs/cli.js'
import { createClient } from './oauth2/clients.js'
import { membershipCommands } from './memberships/cli.js'
import { TEST_CARDS_HELP } from './payments/test-provider.js'
import { packageCommands } from './packages/cli.js'
import { productCommands } from './products/cli.js'
import { deviceCommands } from './replay-servers/cli.js'
import { agentReleaseCommands, agentReleaseOfflineCommands } from './agent-releases/cli.js'
import { rolloutCommands } from './agent-rollouts/cli.js'
import { setDefaultPaymentMethod } from './users/payment-methods.js'
import { createUser, findUserByEmail, toUser, userRecord } from './users/service.js'
import { venueCommands } from './venue/cli.js'
import { replayPageCommands } from './replay-page/cli.js'
import { footageCommands } from './footage-access/cli.js'
import { replayCommands } from './replays/cli.js'
import { matchCommands } from './matches/cli.js'
import { doNotFilmCommands } from './do-not-film/cli.js'
import { flags, HelpRequested, integer, UsageError, type Command, type StandaloneCommand } from './cli/args.js'
import { webhookEndpointCommands } from './webhook-endpoints/cli.js'

/** A command that charges or sends, refused in production with a development-only setting. */
class ProductionRefused extends Error {
  override name = 'ProductionRefused'
}

async function userIdByEmail(db: Db, email: string): Promise<string> {
  const user = await findUserByEmail(db, email)
  if (!user) throw new UsageError(`no user with email ${email}`)
  return user.id
}

/**
 * Commands by their words: `users create` → commands['users create']. Each area keeps its commands
 * in its own folder (`<area>/cli.ts`, a Record<string, Command>) and they are spread in here.
 */
export const commands: Record<string, Command> = {
  ...deviceCommands,
  ...agentReleaseCommands,
  ...rolloutCommands,

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

  /** An online copy while the server keeps serving (SQLite's backup API); FILE must not exist yet. */
  async 'db backup'({ db, args }) {
    const { positionals } = flags(args, {}, [], 'FILE')
    if (positionals.length !== 1) throw new UsageError('usage: club db backup FILE')
    return backupDatabase(db, positionals[0]!)
  },

  /** Brings the schema up to date (every command does that first; this one does nothing else). */
  async 'db migrate'({ applied }) {
    return { applied }
  },

  ...venueCommands,
  ...replayPageCommands,
  ...footageCommands,
  ...replayCommands,
  ...matchCommands,
  ...doNotFilmCommands,
  ...membershipCommands,
  ...jobCommands,
  ...productCommands,
  ...packageCommands,
  ...webhookEndpointCommands
}

/** `club <command> --help`: what a command's flags mean, where the flag names alone do not say it. */
export const commandHelp: Record<string, string> = {
  'rollouts create': [
    'Rolls an uploaded release out in stages: --canaries ID,ID (named boxes) form the first group, then --groups 5,15,80 (percents of',
    'the other approved boxes, summing to 100). A group opens once the one before reached --success-threshold (percent, default 100);',
    "a group's failures reaching --error-threshold (percent, at least one box) halt it. --health-seconds (default 600; 0: the version",
    'alone), --silent-timeout-minutes (default 60), --area AREA_ID. The servers take each step (once per poll interval).'
  ].join('\n'),
  'footage log': [
    'Every look at footage (replays asked for, download links issued, camera snapshots), newest first, kept FOOTAGE_LOG_RETENTION_DAYS.',
    '--user takes an id or an e-mail address; --from and --to (ISO 8601) select looks at footage overlapping that interval.'
  ].join('\n'),
  'payment-methods set': ["Sets a user's default payment method (no card number: what a payment provider would keep).", TEST_CARDS_HELP].join('\n'),
  'products create': [
    'Adds a product to the catalogue (or --file product.json, the body of POST /apis/v2/admin/products).',
    '--type PACKAGE|MEMBERSHIP|MERCHANDISE|SERVICE; --category is repeated (POD_SHOP, APPAREL, ...); --price in currency units;',
    '--picture URL sets every size; --tax NAME:PERCENT[:inclusive]; a PACKAGE needs --package-template, a MEMBERSHIP --membership.'
  ].join('\n')
}

export const standaloneCommands: Record<string, StandaloneCommand> = {
  /**
   * Puts a backup in place of DATABASE_URL. Standalone: opening the target to migrate it would
   * itself hold it open, and migrating a database about to be replaced is pointless.
   */
  async 'db restore'({ config, args }) {
    const { positionals } = flags(args, {}, [], 'FILE')
    if (positionals.length !== 1) throw new UsageError('usage: club db restore FILE')
    if (config.DATABASE_URL === ':memory:') throw new UsageError('DATABASE_URL is :memory:: there is no file to restore into')
    return restoreDatabase(config.DATABASE_URL, positionals[0]!, systemClock)
  },
  /** Which migrations the database has and which are pending, without applying any. */
  async 'db status'({ config, args }) {
    flags(args, {}, [])
    const db = openDatabase(config.DATABASE_URL, { busyTimeoutMs: config.DATABASE_BUSY_TIMEOUT_MS, readCacheEntries: 0 })
    try {
      const known = await migratorFor(db).getMigrations()
      return {
        database: dialectOf(db),
        applied: known.filter((m) => m.executedAt).map((m) => ({ name: m.name, executedAt: m.executedAt!.toISOString() })),
        pending: known.filter((m) => !m.executedAt).map((m) => m.name)
      }
    } finally {
      await db.destroy()
    }
  },
  ...webhookCommands,
  ...agentReleaseOfflineCommands
}

/**
 * The commands that charge a card or send mail (any job may do either): in production they refuse the
 * development-only settings the server refuses at its start, before the database is even opened, so
 * that a shell cannot renew with the test payment provider (orders PAID, nobody charged) or write
 * reset links into a log. A new command that charges or sends belongs here.
 */
const CHARGES_OR_SENDS = new Set(['jobs run', 'memberships run-job'])

const allCommandNames = () => [...Object.keys(commands), ...Object.keys(standaloneCommands)].sort()

/** One command's synopsis, from the flags it declares: `users create --email <value> [--role <value>]`. */
export async function commandUsage(name: string): Promise<string> {
  const run = commands[name] ?? standaloneCommands[name]
  if (!run) throw new UsageError(`unknown command "${name}"`)
  try {
    // Every command parses its flags before it touches the database, so it needs none to answer.
    await run({ db: undefined as never, config: undefined as never, args: ['--help'], applied: [] })
  } catch (err) {
    if (err instanceof HelpRequested) {
      const parts = Object.entries(err.options).map(([flag, option]) => {
        const value = option.type === 'boolean' ? `--${flag}` : `--${flag} <value>`
        const shown = option.multiple ? `${value} ...` : value
        return err.required.includes(flag) ? shown : `[${shown}]`
      })
      return [name, err.positionals, ...parts].filter(Boolean).join(' ')
    }
  }
  return name
}

export const usage = async () => {
  const lines = await Promise.all(allCommandNames().map(async (name) => `  ${await commandUsage(name)}`))
  return `usage: club <command> [flags]   (club <command> --help for one command)\ncommands:\n${lines.join('\n')}`
}

/** Runs one command line; returns the exit code. Output goes to the given writers. */
export async function runCli(
  argv: string[],
  env: Record<string, string | undefined>,
  out: (s: string) => void,
  err: (s: string) => void
): Promise<number> {
  const words = argv.filter((a) => !a.startsWith('-'))
  // Up to three words: `club webhooks endpoints list`.
  // Own keys only: `in` would take `constructor` or `toString`, which every object inherits, for commands.
  const name = [words.slice(0, 3).join(' '), words.slice(0, 2).join(' '), words[0]].find(
    (n) => n !== undefined && (Object.hasOwn(commands, n) || Object.hasOwn(standaloneCommands, n))
  )
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    out(await usage())
    return argv.length === 0 ? 1 : 0
  }
  if (!name) {
    err(`club: unknown command "${words.slice(0, 2).join(' ')}"; run "club help" for the list`)
    return 2
  }
  const args = argv.slice(argv.indexOf(name.split(' ').at(-1)!) + 1)
  if (args.includes('--help') || args.includes('-h')) {
    out([`usage: club ${await commandUsage(name)}`, ...(commandHelp[name] ? [commandHelp[name]] : [])].join('\n'))
    return 0
  }
  let db: Db | undefined
  try {
    const config = loadConfig(env)
    if (CHARGES_OR_SENDS.has(name)) {
      const refused = productionRefusal(config, 'run')
      if (refused !== null) throw new ProductionRefused(refused)
    }
    const standalone = standaloneCommands[name]
    if (standalone) {
      out(JSON.stringify(await standalone({ config, args }), null, 2))
      return 0
    }
    // No read caches: a command makes a few reads, and on PostgreSQL they would need the change feed.
    db = openDatabase(config.DATABASE_URL, { busyTimeoutMs: config.DATABASE_BUSY_TIMEOUT_MS, readCacheEntries: 0 })
    const applied = await migrateToLatest(db)
    const result = await commands[name]!({ db, config, args, applied })
    out(JSON.stringify(result, null, 2))
    return 0
  } catch (e) {
    const message = isDatabaseBusy(e) ? DATABASE_BUSY_MESSAGE : e instanceof Error ? e.message : String(e)
    err(`club ${name}: ${message}`)
    // 78: EX_CONFIG (sysexits.h), the configuration is what is wrong, not the command line.
    return e instanceof UsageError ? 2 : e instanceof ProductionRefused ? 78 : 1
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
