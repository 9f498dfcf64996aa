// `club memberships create|list|show`: selling a membership plan from a shell. A plan is given as a
// JSON file (--file, the body of POST /apis/v2/admin/memberships) or with flags for the usual fields.
import { readFileSync } from 'node:fs'
import { MembershipCreate, MembershipJobRequest, MembershipListQuery } from '@club/contract'
import { runMembershipJob } from '../jobs/membership-jobs.js'
import { createPaymentProvider } from '../payments/index.js'
import { flags, integer, UsageError, type Command, type CommandContext } from '../cli/args.js'
import { systemClock } from '../clock.js'
import { valueValidator } from '../plugins/validation.js'
import { createMembership, getMembership, listMemberships } from './plans.js'

const checkPlan = valueValidator(MembershipCreate, 'plan')
const checkQuery = valueValidator(MembershipListQuery, 'query')
const checkJob = valueValidator(MembershipJobRequest, 'job')

/** A `--price`-like flag: an amount in currency units. */
export const amount = (value: string | undefined, name: string) => {
  if (value === undefined) return undefined
  if (!/^\d+(\.\d+)?$/.test(value)) throw new UsageError(`--${name} must be an amount such as 29.90, got ${JSON.stringify(value.slice(0, 20))}`)
  return Number(value)
}

/** `--tax 'VAT:21'` or `--tax 'VAT:21:inclusive'`; `--fee 'Service:2.5'`. */
export function rate(value: string, name: 'tax' | 'fee') {
  const match = /^([^:]+):(\d+(?:\.\d+)?)(?::(inclusive|exclusive))?$/.exec(value)
  if (!match || (name === 'fee' && match[3])) {
    throw new UsageError(name === 'tax' ? '--tax must be NAME:PERCENT or NAME:PERCENT:inclusive' : '--fee must be NAME:PERCENT')
  }
  const base = { name: match[1]!, percentage: Number(match[2]) }
  return name === 'tax' ? { ...base, inclusive: match[3] === 'inclusive' } : base
}

/** `--file body.json`: the whole request body, with no other flag beside it. */
export function jsonFile(file: string, args: string[], what: string): unknown {
  if (args.length !== 2) throw new UsageError(`--file takes the whole ${what}; give no other flag with it`)
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new UsageError(`--file ${file}: ${err instanceof Error ? err.message : String(err)}`)
  }
}

function planFromFlags(args: string[]): unknown {
  const { values } = flags(args, {
    file: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    type: { type: 'string' },
    'charge-type': { type: 'string' },
    price: { type: 'string' },
    'initiation-fee': { type: 'string' },
    'additional-member-fee': { type: 'string' },
    'duration-days': { type: 'string' },
    area: { type: 'string' },
    tax: { type: 'string', multiple: true },
    fee: { type: 'string', multiple: true },
    'staff-only': { type: 'boolean' }
  })
  if (values.file !== undefined) return jsonFile(values.file, args, 'plan')
  for (const required of ['name', 'type', 'charge-type'] as const) {
    if (values[required] === undefined) throw new UsageError(`missing required flag --${required} (or --file plan.json)`)
  }
  const plan = {
    displayName: values.name,
    description: values.description,
    type: values.type,
    chargeType: values['charge-type'],
    price: amount(values.price, 'price'),
    initiationFee: amount(values['initiation-fee'], 'initiation-fee'),
    additionalMemberFee: amount(values['additional-member-fee'], 'additional-member-fee'),
    durationDays: integer(values['duration-days'], 'duration-days'),
    area: values.area === undefined ? undefined : { id: values.area },
    taxes: values.tax?.map((t) => rate(t, 'tax')),
    fees: values.fee?.map((f) => rate(f, 'fee')),
    selfService: values['staff-only'] ? false : undefined
  }
  return Object.fromEntries(Object.entries(plan).filter(([, v]) => v !== undefined))
}

const planDeps = (ctx: CommandContext) => ({ clock: systemClock, currency: ctx.config.CURRENCY })

export const membershipCommands: Record<string, Command> = {
  async 'memberships create'(ctx) {
    return createMembership(ctx.db, checkPlan(planFromFlags(ctx.args)), planDeps(ctx))
  },

  async 'memberships list'(ctx) {
    const { values } = flags(ctx.args, { status: { type: 'string' }, type: { type: 'string' }, page: { type: 'string' }, ipp: { type: 'string' } })
    const query = Object.fromEntries(
      Object.entries({ status: values.status, type: values.type, page: integer(values.page, 'page'), ipp: integer(values.ipp, 'ipp') }).filter(
        ([, v]) => v !== undefined
      )
    )
    return listMemberships(ctx.db, checkQuery(query), false, '/apis/v2/admin/memberships')
  },

  async 'memberships run-job'(ctx) {
    const { values, positionals } = flags(ctx.args, { date: { type: 'string' } })
    if (positionals.length !== 1) throw new UsageError('usage: club memberships run-job CHARGE|GRANT [--date 2026-04-01T00:00:00Z]')
    const request = checkJob({ type: positionals[0], ...(values.date !== undefined ? { date: values.date } : {}) })
    return runMembershipJob(ctx.db, request, { clock: systemClock, provider: createPaymentProvider(ctx.config) })
  },

  async 'memberships show'(ctx) {
    const { positionals } = flags(ctx.args, {})
    if (positionals.length !== 1) throw new UsageError('usage: club memberships show ID')
    return getMembership(ctx.db, positionals[0]!)
  }
}
