// `club webhooks endpoints list|create|show|update|delete|rotate-secret|deliveries|retry`: the admin
// routes of webhook endpoints from a shell, with the same checks (the contract's, and the URL's). A
// server process sends what the CLI makes due within WEBHOOK_POLL_MS.
import { EndpointDeliveryListQuery, WebhookEndpointListQuery, WebhookEndpointPatch, WebhookEndpointRequest } from '@club/contract'
import { systemClock } from '../clock.js'
import { flags, integer, UsageError, type Command, type CommandContext } from '../cli/args.js'
import { parseNetworks } from '../config.js'
import { valueValidator } from '../plugins/validation.js'
import { systemLookup } from './addresses.js'
import { endpointKey } from './secrets.js'
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  listEndpointDeliveries,
  listWebhookEndpoints,
  retryEndpointDelivery,
  rotateWebhookEndpointSecret,
  updateWebhookEndpoint,
  type EndpointDeps
} from './service.js'

const createBody = valueValidator(WebhookEndpointRequest, 'flags')
const patchBody = valueValidator(WebhookEndpointPatch, 'flags')
const deliveriesQuery = valueValidator(EndpointDeliveryListQuery, 'flags')
const listQuery = valueValidator(WebhookEndpointListQuery, 'flags')

async function deps({ db, config }: CommandContext): Promise<EndpointDeps> {
  return {
    clock: systemClock,
    key: await endpointKey(db, config, systemClock),
    allowedNetworks: parseNetworks('WEBHOOK_ALLOWED_NETWORKS', config.WEBHOOK_ALLOWED_NETWORKS),
    lookup: systemLookup
  }
}

/** The flags create and update share; --type repeats, one event type each. */
const endpointFlags = {
  url: { type: 'string' },
  type: { type: 'string', multiple: true },
  description: { type: 'string' },
  enabled: { type: 'string' }
} as const

function booleanFlag(value: string | undefined, name: string): boolean | undefined {
  if (value === undefined) return undefined
  if (value !== 'true' && value !== 'false') throw new UsageError(`--${name} must be true or false`)
  return value === 'true'
}

function endpointFields(values: { url?: string; type?: string[]; description?: string; enabled?: string }) {
  const fields = { url: values.url, eventTypes: values.type, description: values.description, enabled: booleanFlag(values.enabled, 'enabled') }
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined))
}

function oneId(args: string[], usage: string): string {
  const { positionals } = flags(args, {}, [], 'ENDPOINT_ID')
  if (positionals.length !== 1) throw new UsageError(`usage: club webhooks endpoints ${usage} ENDPOINT_ID`)
  return positionals[0]!
}

export const webhookEndpointCommands: Record<string, Command> = {
  async 'webhooks endpoints list'({ db, args }) {
    const { values } = flags(args, { page: { type: 'string' }, ipp: { type: 'string' } })
    // Checked as the route checks its query: --ipp 0 or -1 and --page 0 are refused, not passed to LIMIT and OFFSET.
    return listWebhookEndpoints(db, listQuery({ page: integer(values.page, 'page') ?? 1, ipp: integer(values.ipp, 'ipp') ?? 100 }))
  },

  /** Prints the endpoint with its secret: the only time it is shown. */
  async 'webhooks endpoints create'(context) {
    const { values } = flags(context.args, endpointFlags, ['url', 'type'])
    return createWebhookEndpoint(context.db, createBody(endpointFields(values)), await deps(context))
  },

  async 'webhooks endpoints show'({ db, args }) {
    return getWebhookEndpoint(db, oneId(args, 'show'))
  },

  /** --type replaces the whole list of event types. */
  async 'webhooks endpoints update'(context) {
    const { values, positionals } = flags(context.args, endpointFlags, [], 'ENDPOINT_ID')
    if (positionals.length !== 1) throw new UsageError('usage: club webhooks endpoints update ENDPOINT_ID [--url URL] [--type TYPE ...] [--description TEXT] [--enabled true|false]')
    return updateWebhookEndpoint(context.db, positionals[0]!, patchBody(endpointFields(values)), await deps(context))
  },

  async 'webhooks endpoints delete'({ db, args }) {
    const id = oneId(args, 'delete')
    await deleteWebhookEndpoint(db, id)
    return { id, deleted: true }
  },

  /** Prints the new secret (the only time it is shown); the old one signs too for 24 h. */
  async 'webhooks endpoints rotate-secret'(context) {
    return rotateWebhookEndpointSecret(context.db, oneId(context.args, 'rotate-secret'), await deps(context))
  },

  async 'webhooks endpoints deliveries'({ db, args }) {
    const { values, positionals } = flags(args, { status: { type: 'string' }, page: { type: 'string' }, ipp: { type: 'string' } }, [], 'ENDPOINT_ID')
    if (positionals.length !== 1) throw new UsageError('usage: club webhooks endpoints deliveries ENDPOINT_ID [--status S] [--page N] [--ipp N]')
    const given = { status: values.status, page: integer(values.page, 'page'), ipp: integer(values.ipp, 'ipp') }
    return listEndpointDeliveries(db, positionals[0]!, deliveriesQuery(Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined))))
  },

  async 'webhooks endpoints retry'({ db, args }) {
    const { positionals } = flags(args, {}, [], 'ENDPOINT_ID DELIVERY_ID')
    if (positionals.length !== 2) throw new UsageError('usage: club webhooks endpoints retry ENDPOINT_ID DELIVERY_ID')
    return retryEndpointDelivery(db, positionals[0]!, positionals[1]!, systemClock)
  }
}
