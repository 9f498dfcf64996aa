// `club devices ...`: the admin's replay-server routes from a shell, for operators without a token.
import { readFileSync } from 'node:fs'
import { ReplayServerListQuery } from '@club/contract'
import { systemClock } from '../clock.js'
import { integer, UsageError, flags, type Command, type CommandContext } from '../cli/args.js'
import { valueValidator } from '../plugins/validation.js'
import { deviceTokenKey, type ReplayServerDeps } from './service.js'
import { approveReplayServerClaim, approveReplayServer, deleteReplayServer, getReplayServer, listReplayServers, rejectReplayServer, rejectReplayServerClaim, revokeReplayServer, rotateReplayServerToken, setReplayServerConfig, setReplayServerTargetVersion } from './decisions.js'

async function depsOf({ db, config }: CommandContext): Promise<ReplayServerDeps> {
  return {
    clock: systemClock,
    tokenKey: await deviceTokenKey(db, config, systemClock),
    pollIntervalSeconds: config.REPLAY_POLL_INTERVAL_SECONDS
  }
}

/** The one positional a command takes: the record id (`club devices list` shows it). */
function recordId(positionals: string[], usage: string): string {
  if (positionals.length !== 1) throw new UsageError(`usage: club devices ${usage}`)
  return positionals[0]!
}

/** Commands that take only the record id. */
const byId =
  (usage: string, run: (ctx: CommandContext, id: string, deps: ReplayServerDeps) => Promise<unknown>): Command =>
  async (ctx) => {
    const { positionals } = flags(ctx.args, {}, [], 'ID')
    return run(ctx, recordId(positionals, usage), await depsOf(ctx))
  }

/** Commands that take the record id and one of its claims' ids. */
const byClaim =
  (name: string, run: (db: CommandContext['db'], id: string, claimId: string, deps: ReplayServerDeps) => Promise<unknown>): Command =>
  async (ctx) => {
    const { positionals } = flags(ctx.args, {}, [], 'ID CLAIM_ID')
    if (positionals.length !== 2) throw new UsageError(`usage: club devices ${name} ID CLAIM_ID`)
    return run(ctx.db, positionals[0]!, positionals[1]!, await depsOf(ctx))
  }

const listQuery = valueValidator(ReplayServerListQuery, 'flags')

function booleanFlag(value: string | undefined, name: string): boolean | undefined {
  if (value === undefined) return undefined
  if (value !== 'true' && value !== 'false') throw new UsageError(`--${name} must be true or false, got ${JSON.stringify(value)}`)
  return value === 'true'
}

export const deviceCommands: Record<string, Command> = {
  async 'devices list'(ctx) {
    const { values } = flags(ctx.args, {
      status: { type: 'string' },
      online: { type: 'string' },
      'device-id': { type: 'string' },
      'update-state': { type: 'string' },
      page: { type: 'string' },
      ipp: { type: 'string' }
    })
    const query = listQuery(
      Object.fromEntries(
        Object.entries({
          status: values.status,
          online: booleanFlag(values.online, 'online'),
          deviceId: values['device-id'],
          updateState: values['update-state'],
          page: integer(values.page, 'page'),
          ipp: integer(values.ipp, 'ipp')
        }).filter(([, v]) => v !== undefined)
      )
    )
    return listReplayServers(ctx.db, query, await depsOf(ctx))
  },

  'devices show': byId('show ID', ({ db }, id, deps) => getReplayServer(db, id, deps)),
  'devices reject': byId('reject ID', ({ db }, id, deps) => rejectReplayServer(db, id, deps)),
  'devices revoke': byId('revoke ID', ({ db }, id, deps) => revokeReplayServer(db, id, deps)),
  'devices rotate-token': byId('rotate-token ID', ({ db }, id, deps) => rotateReplayServerToken(db, id, deps)),
  'devices delete': byId('delete ID', async ({ db }, id) => {
    await deleteReplayServer(db, id)
    return { id, deleted: true }
  }),

  /** A pending claim (`club devices show ID` lists them under claims): accept it as the box, or reject it. */
  'devices approve-claim': byClaim('approve-claim', approveReplayServerClaim),
  'devices reject-claim': byClaim('reject-claim', rejectReplayServerClaim),

  async 'devices approve'(ctx) {
    const { values, positionals } = flags(ctx.args, { area: { type: 'string' }, 'display-name': { type: 'string' } }, ['area'], 'ID')
    const id = recordId(positionals, 'approve ID --area AREA_ID [--display-name NAME]')
    const approval = { areaId: values.area!, ...(values['display-name'] !== undefined ? { displayName: values['display-name'] } : {}) }
    return approveReplayServer(ctx.db, id, approval, await depsOf(ctx))
  },

  async 'devices config'(ctx) {
    const { values, positionals } = flags(ctx.args, { file: { type: 'string' } }, ['file'], 'ID')
    const id = recordId(positionals, 'config ID --file config.json')
    let config: unknown
    try {
      config = JSON.parse(readFileSync(values.file!, 'utf8'))
    } catch (err) {
      throw new UsageError(`--file ${values.file}: ${err instanceof Error ? err.message : String(err)}`)
    }
    return setReplayServerConfig(ctx.db, id, config, await depsOf(ctx))
  },

  /**
   * Sets (or, with only the ID, shows) the version a box should run, and answers where its update
   * stands: updateState (DOWNLOADING, WAITING_FOR_IDLE, INSTALLING, ROLLED_BACK, FAILED) with its
   * version and reason. `--window 02:00-05:00` updates only then (club time); `--window idle` whenever idle.
   */
  async 'devices target-version'(ctx) {
    const { values, positionals } = flags(ctx.args, { clear: { type: 'boolean' }, window: { type: 'string' } }, [], 'ID [VERSION]')
    const usage = 'target-version ID [VERSION] [--window HH:MM-HH:MM|idle], or target-version ID --clear'
    if (positionals.length < 1 || positionals.length > (values.clear ? 1 : 2)) throw new UsageError(`usage: club devices ${usage}`)
    const [id, version] = positionals as [string, string | undefined]
    const deps = await depsOf(ctx)
    const window = values.window === undefined ? {} : { updateWindow: values.window === 'idle' ? null : values.window }
    const box =
      version === undefined && !values.clear && values.window === undefined
        ? await getReplayServer(ctx.db, id, deps)
        : await setReplayServerTargetVersion(
            ctx.db,
            id,
            { version: values.clear ? null : (version ?? (await getReplayServer(ctx.db, id, deps)).targetVersion), ...window },
            deps
          )
    const { id: boxId, version: running, targetVersion, architecture, updateWindow, updateState, updateVersion, updateReason } = box
    return { id: boxId, version: running, targetVersion, architecture, updateWindow, updateState, updateVersion, updateReason }
  }
}
