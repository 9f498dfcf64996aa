// `club jobs run NAME [--date D]` runs a scheduled job by hand (trigger `cli`, recorded like any
// run), and `club webhooks sign PATH [--body JSON]` prints the headers a scheduler sends to a
// receiver, for a manual call with curl.
import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { JobName, webhookRoutes } from '@club/contract'
import { flags, UsageError, type Command, type StandaloneCommand } from '../cli/args.js'
import { systemClock } from '../clock.js'
import { webhookSecrets } from '../config.js'
import { BadRequestError } from '../errors.js'
import { requestInstant } from '../instants.js'
import { createLogger } from '../logging.js'
import { createMailer, type Mailer } from '../password-reset/mailer.js'
import { createPaymentProvider } from '../payments/index.js'
import { signDelivery, TOLERANCE_SECONDS } from '../webhooks/signature.js'
import { jobNames } from './registry.js'
import { JobRunner } from './runner.js'

const receiverPaths = Object.values(webhookRoutes).map((route) => route.url)

export const jobCommands: Record<string, Command> = {
  async 'jobs run'({ db, config, args }) {
    const { values, positionals } = flags(args, { date: { type: 'string' } }, [], 'NAME')
    const name = positionals[0]
    if (positionals.length !== 1 || !jobNames.includes(name as JobName)) throw new UsageError(`usage: club jobs run NAME [--date D], NAME one of ${jobNames.join(', ')}`)
    let date: Date | undefined
    if (values.date !== undefined) {
      const usage = `--date must be an ISO 8601 date-time, got ${JSON.stringify(values.date.slice(0, 40))}`
      if (!/^\d{4}-\d{2}-\d{2}T/.test(values.date)) throw new UsageError(usage)
      try {
        date = requestInstant(values.date, '--date')
      } catch (err) {
        if (err instanceof BadRequestError) throw new UsageError(usage)
        throw err
      }
    }
    // Mail the job sends goes to the relay, or (no SMTP_URL) to stderr, never into the JSON on stdout.
    let mailer: Mailer | undefined
    const log = createLogger(config.LOG_LEVEL, process.stderr) as unknown as FastifyBaseLogger
    const runner = new JobRunner({
      db,
      clock: systemClock,
      config,
      provider: createPaymentProvider(config),
      mailer: () => (mailer ??= createMailer(config, log))
    })
    try {
      const outcome = await runner.run(name as JobName, { trigger: 'cli', date })
      return outcome.kind === 'ran' ? outcome.run : outcome
    } finally {
      await mailer?.close()
    }
  }
}

export const webhookCommands: Record<string, StandaloneCommand> = {
  async 'webhooks sign'({ config, args }) {
    const { values, positionals } = flags(args, { body: { type: 'string' }, id: { type: 'string' } }, [], 'PATH')
    const path = positionals[0]
    if (positionals.length !== 1 || !receiverPaths.includes(path!)) throw new UsageError(`usage: club webhooks sign PATH [--body JSON], PATH one of ${receiverPaths.join(', ')}`)
    const keys = webhookSecrets(config.WEBHOOK_SECRET)
    if (keys.length === 0) throw new UsageError('WEBHOOK_SECRET is not set: there is nothing to sign with')
    const body = values.body ?? ''
    if (body !== '') {
      try {
        JSON.parse(body)
      } catch {
        throw new UsageError('--body must be JSON, e.g. \'{"date":"2026-03-01T09:00:00Z"}\'')
      }
    }
    const headers = signDelivery(keys, values.id ?? `msg_${randomUUID()}`, Math.floor(systemClock.now().getTime() / 1000), body)
    const url = `${config.PUBLIC_BASE_URL.replace(/\/+$/, '')}${path}`
    const quoted = (s: string) => `'${s.replace(/'/g, "'\\''")}'`
    const curl = [
      `curl -i -X POST ${quoted(url)}`,
      ...Object.entries(headers).map(([k, v]) => `-H ${quoted(`${k}: ${v}`)}`),
      ...(body !== '' ? [`-H 'content-type: application/json'`, `--data-raw ${quoted(body)}`] : [])
    ].join(' ')
    return { url, headers, body, expiresInSeconds: TOLERANCE_SECONDS, curl }
  }
}
