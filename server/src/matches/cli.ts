// `club matches list [--court ID] [--user ID|EMAIL] [--page N] [--ipp N]`: the matches from a shell,
// as staff see GET /apis/v2/matches (no links: nothing is handed out, nothing logged).
import { MatchListQuery } from '@club/contract'
import { systemClock } from '../clock.js'
import { flags, integer, UsageError, type Command } from '../cli/args.js'
import { valueValidator } from '../plugins/validation.js'
import { deviceTokenKey } from '../replay-servers/service.js'
import { replayDeps } from '../replays/deps.js'
import { findUserByEmail } from '../users/service.js'
import { listMatches, matchSettings } from './service.js'

const listQuery = valueValidator(MatchListQuery, 'flags')

export const matchCommands: Record<string, Command> = {
  async 'matches list'({ db, config, args }) {
    const { values } = flags(args, { court: { type: 'string' }, user: { type: 'string' }, page: { type: 'string' }, ipp: { type: 'string' } })
    let user = values.user
    if (user?.includes('@')) {
      const found = await findUserByEmail(db, user)
      if (!found) throw new UsageError(`--user: no user with email ${user}`)
      user = found.id
    }
    const given = { court: values.court, user, page: integer(values.page, 'page'), ipp: integer(values.ipp, 'ipp') }
    const query = listQuery(Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)))
    const deps = { replay: replayDeps(config, systemClock, await deviceTokenKey(db, config, systemClock)), settings: matchSettings(config) }
    // The command line sees what an admin sees (as `club replays takedown` acts for one).
    return listMatches(db, query, { who: { id: 'command-line', role: 'admin' }, address: null }, deps)
  }
}
