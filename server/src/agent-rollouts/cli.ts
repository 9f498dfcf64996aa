// `club rollouts ...`: the admin's staged-rollout routes from a shell. The CLI reads no box health,
// so it never judges boxes: a resumed rollout takes its next step with a server's teller.
import { AgentRolloutCreate, AgentRolloutListQuery } from '@club/contract'
import { systemClock } from '../clock.js'
import { integer, UsageError, flags, type Command, type CommandContext } from '../cli/args.js'
import { valueValidator } from '../plugins/validation.js'
import { cancelAgentRollout, createAgentRollout, getAgentRollout, listAgentRollouts, pauseAgentRollout, resumeAgentRollout, type RolloutDeps } from './service.js'

const deps: RolloutDeps = { clock: systemClock, stepNow: false }
const createBody = valueValidator(AgentRolloutCreate, 'flags')
const listQuery = valueValidator(AgentRolloutListQuery, 'flags')

/** A number flag (a percent may have decimals). */
function number(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value)
  if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`--${name} must be a number, got ${JSON.stringify(value)}`)
  return n
}

/** Commands that take only the rollout's id. */
const byId =
  (name: string, run: (ctx: CommandContext, id: string) => Promise<unknown>): Command =>
  async (ctx) => {
    const { positionals } = flags(ctx.args, {}, [], 'ID')
    if (positionals.length !== 1) throw new UsageError(`usage: club rollouts ${name} ID`)
    return run(ctx, positionals[0]!)
  }

export const rolloutCommands: Record<string, Command> = {
  /**
   * `club rollouts create VERSION --groups 5,15,80 --error-threshold 10 [--canaries ID,ID]`: the
   * canaries (named boxes) form the first group, then the percent groups in order.
   */
  async 'rollouts create'(ctx) {
    const { values, positionals } = flags(
      ctx.args,
      {
        groups: { type: 'string' },
        canaries: { type: 'string' },
        'error-threshold': { type: 'string' },
        'success-threshold': { type: 'string' },
        'health-seconds': { type: 'string' },
        'silent-timeout-minutes': { type: 'string' },
        area: { type: 'string' }
      },
      ['error-threshold'],
      'VERSION'
    )
    if (positionals.length !== 1) throw new UsageError('usage: club rollouts create VERSION --groups 5,15,80 --error-threshold PERCENT [--canaries ID,ID]')
    if (values.groups === undefined && values.canaries === undefined) throw new UsageError('name the groups: --groups 5,15,80 (percents), --canaries ID,ID, or both')
    const split = (text: string) => text.split(',').map((s) => s.trim()).filter((s) => s !== '')
    const groups = [
      ...(values.canaries !== undefined ? [{ boxes: split(values.canaries).map((id) => ({ id })) }] : []),
      ...(values.groups !== undefined ? split(values.groups).map((p) => ({ percent: number(p, 'groups')! })) : [])
    ]
    const body = createBody(
      Object.fromEntries(
        Object.entries({
          version: positionals[0],
          groups,
          errorThresholdPercent: number(values['error-threshold'], 'error-threshold'),
          successThresholdPercent: number(values['success-threshold'], 'success-threshold'),
          healthSeconds: integer(values['health-seconds'], 'health-seconds'),
          silentTimeoutMinutes: integer(values['silent-timeout-minutes'], 'silent-timeout-minutes'),
          area: values.area !== undefined ? { id: values.area } : undefined
        }).filter(([, v]) => v !== undefined)
      )
    )
    return createAgentRollout(ctx.db, body, null, deps)
  },

  async 'rollouts list'(ctx) {
    const { values } = flags(ctx.args, { status: { type: 'string' }, page: { type: 'string' }, ipp: { type: 'string' } })
    const query = listQuery(
      Object.fromEntries(
        Object.entries({ status: values.status, page: integer(values.page, 'page'), ipp: integer(values.ipp, 'ipp') }).filter(([, v]) => v !== undefined)
      )
    )
    return listAgentRollouts(ctx.db, query)
  },

  'rollouts show': byId('show', ({ db }, id) => getAgentRollout(db, id)),
  'rollouts pause': byId('pause', ({ db }, id) => pauseAgentRollout(db, id, deps)),
  'rollouts resume': byId('resume', ({ db }, id) => resumeAgentRollout(db, id, deps)),
  'rollouts cancel': byId('cancel', ({ db }, id) => cancelAgentRollout(db, id, deps))
}
