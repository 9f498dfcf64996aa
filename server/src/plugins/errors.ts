// One error shape for every failure: {statusCode, message, error}; never a stack trace. 5xx details
// go to the log, not to the client.
import { STATUS_CODES } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify'
import fp from 'fastify-plugin'
import { DATABASE_BUSY_MESSAGE, DATABASE_UNREACHABLE_MESSAGE, isDatabaseBusy, isDatabaseUnreachable } from '../db/database.js'
import { HttpError, OAuth2Error, quote } from '../errors.js'
import { InsufficientScopeError } from '../oauth2/scopes.js'
import { describeValidationErrors } from './validation.js'

export function errorBody(statusCode: number, message: string) {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message }
}

function send(reply: FastifyReply, statusCode: number, message: string, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}) {
  return reply.code(statusCode).headers(headers).send({ ...extra, ...errorBody(statusCode, message) })
}

/**
 * What Fastify's router refuses before any hook runs (a malformed URL, a path parameter past
 * maxParamLength), in the one error shape. Fastify's own message repeats the whole path.
 */
export function frameworkErrorHandler(err: FastifyError, request: { id: string }, reply: FastifyReply) {
  // No hook runs for these, so the request id header is set here.
  reply.header('x-request-id', request.id)
  const message =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? 'a path parameter is longer than 100 characters: no id is that long'
      : err.code === 'FST_ERR_BAD_URL'
        ? 'the URL is not valid (a malformed percent-encoding?)'
        : 'the request could not be routed'
  return send(reply, 400, message)
}

export default fp(
  async function errors(app: FastifyInstance) {
    app.setErrorHandler((err: FastifyError | HttpError, request, reply) => {
      if (err instanceof OAuth2Error) {
        return reply
          .code(err.statusCode)
          .headers({ ...err.headers, 'cache-control': 'no-store', pragma: 'no-cache' })
          .send({ statusCode: err.statusCode, error: err.code, message: err.message, error_description: err.message })
      }
      if (err instanceof InsufficientScopeError) {
        // RFC 6750's code in the platform's shape, as the token endpoint's errors carry RFC 6749's.
        return reply.code(403).headers(err.headers).send({ statusCode: 403, error: err.code, message: err.message })
      }
      if (err instanceof HttpError) return send(reply, err.statusCode, err.message, err.headers, err.body)
      const fastifyError = err as FastifyError
      if (fastifyError.validation) {
        const message = describeValidationErrors(fastifyError.validation, fastifyError.validationContext ?? 'request')
        return send(reply, 400, message)
      }
      const status = fastifyError.statusCode ?? 500
      if (status >= 400 && status < 500) {
        // Fastify's own client errors (bad JSON, wrong content type, body too large) say what was wrong.
        return send(reply, status, fastifyError.message)
      }
      if (isDatabaseBusy(err)) {
        // Another process (the CLI, a second server) held the write lock past busy_timeout: the
        // transaction rolled back whole, so the client may simply try again.
        request.log.warn({ err }, 'database busy')
        return send(reply, 503, DATABASE_BUSY_MESSAGE, { 'retry-after': '1' })
      }
      if (isDatabaseUnreachable(err)) {
        // PostgreSQL down, restarting or out of connections: an outage the load balancer and the
        // client can wait out, not a 500 that says the request was wrong.
        request.log.error({ err }, 'database unreachable')
        return send(reply, 503, DATABASE_UNREACHABLE_MESSAGE, { 'retry-after': '5' })
      }
      request.log.error({ err }, 'request failed')
      return send(reply, status >= 500 && status < 600 ? status : 500, 'An unexpected error occurred')
    })

    app.setNotFoundHandler((request, reply) => send(reply, 404, `Route ${request.method} ${quote(request.url.split('?')[0], { limit: 80 })} not found`))
  },
  { name: 'errors' }
)
