import formbody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyError } from 'fastify'
import { oauth2Routes } from '@club/contract'
import { OAuth2Error } from '../errors.js'
import { routeRateLimit } from '../plugins/rate-limit.js'
import { describeValidationErrors } from '../plugins/validation.js'
import { authenticateClient } from './clients.js'
import { TokenEndpoint } from './service.js'
import { revokeToken } from './tokens.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The token endpoint's grants; other areas register theirs (authorization_code) here. */
    tokenEndpoint: TokenEndpoint
  }
}

/** Anything wrong with the request itself is RFC 6749's invalid_request, in the OAuth2 error shape. */
function asOAuth2Error(err: FastifyError): never {
  if (err instanceof OAuth2Error) throw err
  const status = err.statusCode ?? 500
  if (err.validation) throw new OAuth2Error('invalid_request', describeValidationErrors(err.validation, err.validationContext ?? 'body'))
  // Too large (413) and unreadable (415) keep their own status: the body was never read as a request.
  if (status >= 400 && status < 500 && ![413, 415, 429].includes(status)) throw new OAuth2Error('invalid_request', err.message)
  throw err
}

const oauth2: FastifyPluginAsyncTypebox = async (app) => {
  const deps = () => ({
    clock: app.clock,
    accessTokenTtlSeconds: app.config.ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTtlSeconds: app.config.REFRESH_TOKEN_TTL_SECONDS,
    passwordHashCost: app.config.PASSWORD_HASH_COST,
    passwordGrantEnabled: app.config.PASSWORD_GRANT_ENABLED
  })

  // Only here: RFC 6749 sends token requests form-encoded; every other route documents JSON alone.
  // This plugin is not wrapped in fastify-plugin, so the parser stays in its scope.
  await app.register(formbody)

  app.route({
    ...oauth2Routes.token,
    attachValidation: true,
    // Every grant checks a secret; a per-IP limit slows guessing and keeps scrypt from being a lever.
    config: routeRateLimit({ max: app.config.TOKEN_RATE_LIMIT_MAX, timeWindowMs: 60_000, what: 'token requests' }),
    errorHandler: asOAuth2Error,
    handler: async (request, reply) => {
      if (request.validationError) {
        const v = request.validationError as { validation?: []; validationContext?: string; message: string }
        throw new OAuth2Error('invalid_request', v.validation ? describeValidationErrors(v.validation, v.validationContext ?? 'body') : v.message)
      }
      const answer = await app.tokenEndpoint.exchange(app.db, request.headers.authorization, request.body, deps())
      return reply.code(201).headers({ 'cache-control': 'no-store', pragma: 'no-cache' }).send(answer)
    }
  })

  app.route({
    ...oauth2Routes.revoke,
    // The same limit as the token endpoint: a guess here costs what a guess there does.
    config: routeRateLimit({ max: app.config.TOKEN_RATE_LIMIT_MAX, timeWindowMs: 60_000, what: 'token requests' }),
    // RFC 7009 section 2.2.1 answers errors as RFC 6749 section 5.2 does.
    errorHandler: asOAuth2Error,
    handler: async (request, reply) => {
      const { client } = await authenticateClient(app.db, request.headers.authorization, request.body)
      await revokeToken(app.db, request.body.token, client, app.clock)
      return reply.header('cache-control', 'no-store').send({})
    }
  })
}

export default oauth2
