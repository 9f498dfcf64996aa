// The webhook delivery worker (webhook-endpoints/worker.ts) and what the endpoint routes need to
// check URLs and show secrets. main.ts starts the worker; closing the app stops it and gives its
// lease back.
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { parseNetworks } from '../config.js'
import { onEventsCommitted } from '../events/outbox.js'
import { countedMailer } from '../health/metrics.js'
import { createMailer, type Mailer } from '../password-reset/mailer.js'
import { systemLookup } from '../webhook-endpoints/addresses.js'
import { endpointKey } from '../webhook-endpoints/secrets.js'
import type { EndpointDeps } from '../webhook-endpoints/service.js'
import { DeliveryWorker } from '../webhook-endpoints/worker.js'

declare module 'fastify' {
  interface FastifyInstance {
    webhookDelivery: DeliveryWorker
    /** The endpoint services' dependencies (the server key is read, or made, on first use). */
    webhookEndpoints: () => Promise<EndpointDeps>
  }
}

export default fp(
  async function webhookDelivery(app: FastifyInstance) {
    let mailer: Mailer | undefined
    const worker = new DeliveryWorker({
      db: app.db,
      clock: app.clock,
      config: app.config,
      log: app.log.child({ component: 'webhook-delivery' }),
      mailer: () => (mailer ??= countedMailer(createMailer(app.config, app.log), app.metrics))
    })
    const allowedNetworks = parseNetworks('WEBHOOK_ALLOWED_NETWORKS', app.config.WEBHOOK_ALLOWED_NETWORKS)
    let key: Promise<string> | undefined
    app.decorate('webhookDelivery', worker)
    app.decorate('webhookEndpoints', async () => ({
      clock: app.clock,
      key: await (key ??= endpointKey(app.db, app.config, app.clock)),
      allowedNetworks,
      lookup: systemLookup
    }))
    // Commit to 2xx well under a second: this process's commits that wrote events wake the worker at once.
    const unsubscribe = onEventsCommitted(app.db, () => worker.eventsCommitted())
    app.addHook('onClose', async () => {
      unsubscribe()
      await worker.stop()
      await mailer?.close()
    })
  },
  { name: 'webhook-delivery', dependencies: ['services', 'metrics'] }
)
