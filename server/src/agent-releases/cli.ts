// `club agent-releases ...`: the release key and the stored agent packages, from a shell.
import { systemClock } from '../clock.js'
import { UsageError, flags, type Command } from '../cli.js'
import { addAgentRelease, generateReleaseKey, listAgentReleases } from './service.js'

export const agentReleaseCommands: Record<string, Command> = {
  async 'agent-releases keygen'(ctx) {
    flags(ctx.args, {})
    const { keyFile, publicKey, fingerprint } = generateReleaseKey(ctx.config)
    return {
      keyFile,
      publicKey,
      fingerprint,
      note: "keep a copy of the key file somewhere safe: boxes accept only packages it signed. Give the fingerprint to whoever sets up a box: `club-agent setup` prints the key's, and they must be the same"
    }
  },

  async 'agent-releases add'(ctx) {
    const { positionals } = flags(ctx.args, {}, [], 'FILE')
    if (positionals.length !== 1) throw new UsageError('usage: club agent-releases add FILE (a club-agent .deb)')
    return addAgentRelease(ctx.db, positionals[0]!, ctx.config, systemClock)
  },

  async 'agent-releases list'(ctx) {
    flags(ctx.args, {})
    return listAgentReleases(ctx.db)
  }
}
