// `club do-not-film list|add|delete`: a court's "do not film" intervals from a shell, as the admin
// routes answer them (made from here, an interval's createdBy is null).
import { systemClock } from '../clock.js'
import { flags, UsageError, type Command } from '../cli/args.js'
import { createDoNotFilmInterval, deleteDoNotFilmInterval, listDoNotFilmIntervals } from './service.js'

export const doNotFilmCommands: Record<string, Command> = {
  async 'do-not-film list'({ db, args }) {
    const { values, positionals } = flags(args, { past: { type: 'boolean' } }, [], 'COURT_ID')
    if (positionals.length !== 1) throw new UsageError('usage: club do-not-film list COURT_ID [--past]')
    return listDoNotFilmIntervals(db, positionals[0]!, { ...(values.past ? { past: true } : {}), ipp: 100 }, systemClock)
  },

  /** `--start` and `--end` are ISO 8601 date-times with a zone; `--start` defaults to now. */
  async 'do-not-film add'({ db, args }) {
    const { values, positionals } = flags(args, { start: { type: 'string' }, end: { type: 'string' }, reason: { type: 'string' } }, ['end', 'reason'], 'COURT_ID')
    if (positionals.length !== 1) throw new UsageError('usage: club do-not-film add COURT_ID [--start ISO] --end ISO --reason TEXT')
    // The route's rule (its contract): the console shows this text to staff as typed.
    if (!/\S/.test(values.reason!) || values.reason!.length > 200) throw new UsageError('--reason must say what the interval is for, in at most 200 characters')
    const body = { start: values.start ?? systemClock.now().toISOString(), end: values.end!, reason: values.reason! }
    return createDoNotFilmInterval(db, positionals[0]!, body, null, systemClock)
  },

  async 'do-not-film delete'({ db, args }) {
    const { positionals } = flags(args, {}, [], 'COURT_ID INTERVAL_ID')
    if (positionals.length !== 2) throw new UsageError('usage: club do-not-film delete COURT_ID INTERVAL_ID')
    await deleteDoNotFilmInterval(db, positionals[0]!, positionals[1]!)
    return { id: positionals[1], deleted: true }
  }
}
