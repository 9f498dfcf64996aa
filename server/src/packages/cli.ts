// `club packages cancel-redemption`: the front desk's shell, under the same rules as the API's
// DELETE (spent is spent): the item comes back only while what it paid for was not delivered.
import { flags, UsageError, type Command, type CommandContext } from '../cli/args.js'
import { systemClock } from '../clock.js'
import { cancelRedemption } from './redemptions.js'

/** The shell is the club's own operator: it sees every package, as an admin does. */
const OPERATOR = { id: 'club-cli', role: 'admin' } as const

const deps = (ctx: CommandContext) => ({
  clock: systemClock,
  clubTimezone: ctx.config.CLUB_TIMEZONE,
  currency: ctx.config.CURRENCY,
  lateCancelHours: ctx.config.PACKAGE_LATE_CANCEL_HOURS
})

export const packageCommands: Record<string, Command> = {
  async 'packages cancel-redemption'(ctx) {
    const { positionals } = flags(ctx.args, {}, [], 'PACKAGE REDEMPTION')
    if (positionals.length !== 2) throw new UsageError('usage: club packages cancel-redemption PACKAGE REDEMPTION')
    return cancelRedemption(ctx.db, positionals[0]!, positionals[1]!, OPERATOR, deps(ctx))
  }
}
