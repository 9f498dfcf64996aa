// `club replays takedown ID --reason TEXT`: a replay taken down from a shell, as the admin route does
// (its takedown's `by` is null: the command line).
import { systemClock } from '../clock.js'
import { flags, UsageError, type Command } from '../cli/args.js'
import { deviceTokenKey } from '../replay-servers/service.js'
import { replayDeps } from './deps.js'
import { takeDownReplay } from './service.js'

export const replayCommands: Record<string, Command> = {
  async 'replays takedown'({ db, config, args }) {
    const { values, positionals } = flags(args, { reason: { type: 'string' } }, ['reason'], 'ID')
    if (positionals.length !== 1) throw new UsageError('usage: club replays takedown ID --reason TEXT')
    if (!/\S/.test(values.reason!)) throw new UsageError('--reason must say why')
    const deps = replayDeps(config, systemClock, await deviceTokenKey(db, config, systemClock))
    return takeDownReplay(db, positionals[0]!, null, values.reason!.slice(0, 500), deps)
  }
}
