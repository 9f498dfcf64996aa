// `club agent-releases ...`: release keys and signatures made offline, and the stored agent packages.
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, isAbsolute } from 'node:path'
import { systemClock } from '../clock.js'
import { UsageError, flags, type Command, type StandaloneCommand } from '../cli/args.js'
import type { Config } from '../config.js'
import { makeReleaseKey } from './keys.js'
import { addAgentRelease, listAgentReleases, signReleaseFile } from './service.js'

/**
 * Folders of the server's own data, where a release key must never be written: the default data
 * folder ./data (the old key's home) whatever the database, the releases and a SQLite file's folder.
 * makeReleaseKey compares real paths (through the symbolic links that exist).
 */
function serverFolders(config: Config): string[] {
  const database = config.DATABASE_URL
  const sqliteFile = database !== ':memory:' && !/^postgres(ql)?:\/\//.test(database)
  return ['data', config.AGENT_RELEASES_DIR, ...(sqliteFile ? [dirname(database)] : [])]
}

/** The signature file beside a package, as `sign` writes it and `add` reads it. */
const signatureFileOf = (file: string) => `${file}.sig`

/** Offline: they open no database and need no setting of the server. */
export const agentReleaseOfflineCommands: Record<string, StandaloneCommand> = {
  async 'agent-releases keygen'({ config, args }) {
    const { values } = flags(args, { out: { type: 'string' } }, ['out'])
    const made = makeReleaseKey(values.out!, serverFolders(config))
    return {
      ...made,
      note:
        'keep the key file on this machine (and a copy somewhere safe): boxes accept only packages signed by a key the server trusts. ' +
        'Add publicKeySetting to AGENT_RELEASE_PUBLIC_KEYS on the server, and give the fingerprint to whoever sets up a box: `club-agent setup` prints it, and they must be the same'
    }
  },

  async 'agent-releases sign'({ args }) {
    const { values, positionals } = flags(args, { key: { type: 'string' } }, ['key'], 'FILE')
    if (positionals.length !== 1) throw new UsageError('usage: club agent-releases sign FILE --key KEY (a club-agent .deb and the private key keygen wrote)')
    const file = positionals[0]!
    const signed = await signReleaseFile(file, values.key!)
    const signatureFile = signatureFileOf(file)
    writeFileSync(signatureFile, `${signed.signature}\n`)
    return { ...signed, signatureFile }
  }
}

export const agentReleaseCommands: Record<string, Command> = {
  async 'agent-releases add'(ctx) {
    const { values, positionals } = flags(ctx.args, { signature: { type: 'string' } }, [], 'FILE')
    if (positionals.length !== 1) throw new UsageError('usage: club agent-releases add FILE [--signature FILE.sig] (a club-agent .deb, signed with club agent-releases sign)')
    const file = positionals[0]!
    const signatureFile = values.signature ?? signatureFileOf(file)
    let signature: string
    try {
      signature = readFileSync(signatureFile, 'utf8')
    } catch {
      throw new UsageError(`no signature at ${signatureFile}: sign the package offline first (club agent-releases sign ${isAbsolute(file) ? file : `./${file}`} --key KEY)`)
    }
    return addAgentRelease(ctx.db, file, signature, ctx.config, systemClock)
  },

  async 'agent-releases list'(ctx) {
    flags(ctx.args, {})
    return listAgentReleases(ctx.db)
  }
}
