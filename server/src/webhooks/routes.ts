// The reference's webhook receivers: each authenticates a Standard Webhooks delivery, reads the
// optional `{date}` and runs its job once per webhook-id (jobs/runs.ts). Which job has which receiver
// is jobs/registry.ts's. Nothing else lives here.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import type { WebhookRequest } from '@club/contract'
import { webhookSecrets } from '../config.js'
import { BadRequestError, ConflictError, HttpError, ServiceUnavailableError, quote } from '../errors.js'
import { requestInstant } from '../instants.js'
import { jobNames, scheduledJobs } from '../jobs/registry.js'
import { JobFailedError } from '../jobs/runs.js'
import { parseJsonBody } from '../plugins/body-parsing.js'
import { verifyDelivery } from './signature.js'

/** webhook-ids are the sender's; longer than this is not an id but a payload. */
const MAX_ID_LENGTH = 256

const webhooks: FastifyPluginAsyncTypebox = async (app) => {
  const keys = webhookSecrets(app.config.WEBHOOK_SECRET)
  if (keys.length === 0) app.log.warn('WEBHOOK_SECRET is not set: the webhook receivers answer 503 (the built-in scheduler runs the jobs without them)')
  // The signature covers the body as sent: keep it as text in this scope, parse it once checked.
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => done(null, body))

  for (const job of jobNames) {
    const route = scheduledJobs[job].receiver
    if (!route) continue
    app.route({
      ...route,
      preValidation: async (request) => {
        if (keys.length === 0) throw new ServiceUnavailableError('the webhook receivers are off: the server has no WEBHOOK_SECRET')
        const raw = typeof request.body === 'string' ? request.body : ''
        const id = verifyDelivery(keys, request.headers, raw, app.clock.now())
        if (id.length > MAX_ID_LENGTH) throw new BadRequestError(`webhook-id ${quote(id)} is longer than ${MAX_ID_LENGTH} characters`)
        request.body = (raw.trim() === '' ? {} : parseJsonBody(raw)) as WebhookRequest
      },
      handler: async (request, reply) => {
        const id = request.headers['webhook-id']
        const date = request.body.date === undefined ? undefined : requestInstant(request.body.date, 'body.date')
        let outcome
        try {
          outcome = await app.jobs.run(job, { trigger: 'webhook', key: `webhook:${id}`, delivery: id, date })
        } catch (err) {
          if (err instanceof JobFailedError) throw new HttpError(500, `the ${job} job failed; its run ${err.runId} is recorded as failed (GET /apis/v2/admin/job-runs); retry the delivery`)
          throw err
        }
        if (outcome.kind === 'held') throw new ConflictError(`delivery ${quote(id)} is being run by another request (lease until ${outcome.until}); retry later`)
        // No content, as the reference says: not the JSON `null` the schema would serialise.
        return (reply as FastifyReply).code(201).send()
      }
    })
  }
}

export default webhooks
