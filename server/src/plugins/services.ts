// The shared services every route module reaches through the instance: database, config, clock,
// payment provider.
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import type { Db } from '../db/database.js'
import type { PaymentProvider } from '../payments/provider.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Db
    config: Config
    clock: Clock
    paymentProvider: PaymentProvider
  }
}

export interface ServicesOptions {
  db: Db
  config: Config
  clock: Clock
  paymentProvider: PaymentProvider
  /** Close the database when the app closes (false when the caller owns it). */
  ownsDb: boolean
}

export default fp<ServicesOptions>(
  async function services(app: FastifyInstance, options) {
    app.decorate('db', options.db)
    app.decorate('config', options.config)
    app.decorate('clock', options.clock)
    app.decorate('paymentProvider', options.paymentProvider)
    if (options.ownsDb) app.addHook('onClose', async () => options.db.destroy())
  },
  { name: 'services' }
)
