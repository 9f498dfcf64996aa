// `club footage log [--court ID] [--user ID|EMAIL] [--from T] [--to T] [--page N] [--ipp N]`: the
// footage access log from a shell, the same page as GET /apis/v2/admin/footage-access.
import { FootageAccessQuery } from '@club/contract'
import { flags, integer, UsageError, type Command } from '../cli/args.js'
import { findUserByEmail } from '../users/service.js'
import { valueValidator } from '../plugins/validation.js'
import { listFootageAccess } from './service.js'

const logQuery = valueValidator(FootageAccessQuery, 'flags')

export const footageCommands: Record<string, Command> = {
  async 'footage log'({ db, args }) {
    const { values } = flags(args, {
      court: { type: 'string' },
      user: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      page: { type: 'string' },
      ipp: { type: 'string' }
    })
    let user = values.user
    if (user?.includes('@')) {
      const found = await findUserByEmail(db, user)
      if (!found) throw new UsageError(`--user: no user with email ${user}`)
      user = found.id
    }
    const given = { court: values.court, user, from: values.from, to: values.to, page: integer(values.page, 'page'), ipp: integer(values.ipp, 'ipp') }
    return listFootageAccess(db, logQuery(Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined))))
  }
}
