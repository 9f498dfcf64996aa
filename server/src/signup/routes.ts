import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { signupRoutes } from '@club/contract'
import { randomToken } from '../crypto.js'
import { countedPhoneProvider } from '../health/metrics.js'
import { createPhoneProvider } from './providers/index.js'
import { sendVerificationCode, verifyCode, type PhoneVerificationDeps } from './service.js'

const signup: FastifyPluginAsyncTypebox = async (app) => {
  const provider = countedPhoneProvider(createPhoneProvider(app.config, app.log), app.metrics)
  // Without a configured pepper, codes made by this process cannot be checked by another one:
  // acceptable for the development provider, which is the only one whose codes this server makes.
  const pepper = app.config.PHONE_CODE_PEPPER || randomToken()
  const deps = (): PhoneVerificationDeps => ({
    clock: app.clock,
    provider,
    pepper,
    resendCooldownSeconds: app.config.PHONE_RESEND_COOLDOWN_SECONDS,
    sendsPerNumberPerHour: app.config.PHONE_SENDS_PER_NUMBER_PER_HOUR,
    sendsPerIpPerHour: app.config.PHONE_SENDS_PER_IP_PER_HOUR
  })

  app.route({
    ...signupRoutes.phoneVerifications,
    handler: async (request, reply) => {
      const session =
        request.body.verificationCode !== undefined
          ? await verifyCode(app.db, request.body, deps())
          : await sendVerificationCode(app.db, request.body, request.ip, deps())
      return reply.code(201).header('cache-control', 'no-store').send(session)
    }
  })
}

export default signup
