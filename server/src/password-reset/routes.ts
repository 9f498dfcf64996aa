import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { oauth2Routes } from '@club/contract'
import { servePage } from '../pages.js'
import { keyedRateLimit, routeRateLimit } from '../plugins/rate-limit.js'
import { normalizeEmail } from '../users/service.js'
import { countedMailer } from '../health/metrics.js'
import { createMailer } from './mailer.js'
import { resetPassword, sendPasswordChangedMail, startPasswordReset, type MailDeps } from './service.js'

const HOUR_MS = 3600 * 1000
/** Requests per address per hour, whoever sends them (OWASP: limit per account, not only per client). */
export const RESETS_PER_ADDRESS_PER_HOUR = 5

const passwordReset: FastifyPluginAsyncTypebox = async (app) => {
  const mailer = countedMailer(createMailer(app.config, app.log), app.metrics)
  app.addHook('onClose', async () => mailer.close())
  const mailDeps = (): MailDeps => ({ clock: app.clock, mailer, publicBaseUrl: app.config.PUBLIC_BASE_URL })
  const perIp = routeRateLimit({ max: app.config.PASSWORD_RESET_RATE_LIMIT_MAX, timeWindowMs: HOUR_MS, what: 'password reset requests' })

  app.route({
    ...oauth2Routes.requestPasswordReset,
    config: perIp,
    preHandler: keyedRateLimit(app, {
      max: RESETS_PER_ADDRESS_PER_HOUR,
      timeWindowMs: HOUR_MS,
      keyGenerator: (request) => `password-reset:${normalizeEmail((request.body as { email: string }).email)}`,
      what: 'password reset requests for this address'
    }),
    handler: async (request) => {
      // The look-up and the mail happen after the answer: known and unknown addresses get the same
      // answer in the same time.
      const email = request.body.email
      app.background.run('password reset', () => startPasswordReset(app.db, email, mailDeps()))
      return {}
    }
  })

  // The page the mailed link opens (resetLink). The link carries the token: the page sends no Referer
  // anywhere, and the request log redacts the query (logging.ts).
  servePage(app as unknown as FastifyInstance, 'password-reset', '/password-reset', { 'referrer-policy': 'no-referrer' })

  app.route({
    ...oauth2Routes.resetPassword,
    config: perIp,
    handler: async (request) => {
      const user = await resetPassword(app.db, request.body, { clock: app.clock, passwordHashCost: app.config.PASSWORD_HASH_COST })
      app.background.run('password changed notice', () => sendPasswordChangedMail(app.db, user, mailDeps()))
      return {}
    }
  })
}

export default passwordReset
