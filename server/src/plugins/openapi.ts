// The OpenAPI 3 document, built from the contract's route schemas, and Swagger UI to read it.
import type { FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import type { TSchema } from 'typebox'
import { apiTags, eventPayloads, eventTypes, securitySchemes, type EventType } from '@club/contract'
import { developmentBaseUrl, type Config } from '../config.js'

/**
 * Where generated clients should call. PUBLIC_BASE_URL has a default for the links the API mails out,
 * but that default is a guess about a developer's machine: until the operator sets it, say `/` (relative
 * to wherever the document was fetched from) rather than send integrators to localhost.
 */
export function serverUrl(config: Config): string {
  if (config.PUBLIC_BASE_URL === developmentBaseUrl) return '/'
  // Paths start with a slash already; a trailing one would double it.
  return config.PUBLIC_BASE_URL.replace(/\/+$/, '') || '/'
}

/**
 * One entry per event type: the body a webhook endpoint receives (Standard Webhooks' {type,
 * timestamp, data}) with `data` the resource's GET schema. The feed answers the same events.
 */
function eventWebhooks(): { schemas: Record<string, TSchema>; webhooks: Record<string, unknown> } {
  // Each resource's schema once, under components: @fastify/swagger writes those in 3.0's dialect as
  // it does the routes' schemas.
  const schemas: Record<string, TSchema> = {}
  const refOf = (type: EventType) => {
    // e.g. replay_server.update_failed: ReplayServer
    const name = type.slice(0, type.indexOf('.')).replace(/(^|_)([a-z])/g, (_, _sep, c: string) => c.toUpperCase())
    schemas[name] ??= eventPayloads[type]
    return { $ref: `#/components/schemas/${name}` }
  }
  // OpenAPI 3.1's `webhooks`, under the name 3.0 tools (Redoc) read.
  const webhooks = Object.fromEntries(
    eventTypes.map((type) => [
      type,
      {
        post: {
          // e.g. replay_server.update_failed: replayServerUpdateFailedEvent
          operationId: `${type.replace(/[._]([a-z])/g, (_, c: string) => c.toUpperCase())}Event`,
          summary: type,
          // Nothing to present: the receiver checks the webhook-signature header (Standard Webhooks).
          security: [],
          tags: ['events'],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['type', 'timestamp', 'data'],
                  properties: {
                    type: { type: 'string', enum: [type] },
                    timestamp: { type: 'string', format: 'date-time' },
                    data: refOf(type)
                  }
                }
              }
            }
          },
          responses: { '2XX': { description: 'Received: any 2xx within 10 seconds; anything else is retried' } }
        }
      }
    ])
  )
  return { schemas, webhooks }
}

export default fp(
  async function openapi(app: FastifyInstance) {
    const config = app.config
    const events = eventWebhooks()
    await app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: {
          title: 'Club Platform API',
          version: '2.0',
          description:
            'The v2 interface of the club platform. Every error answers `{statusCode, message, error}`. ' +
            'Every answer carries an `x-request-id` header naming the request in the server log. ' +
            'Where this server departs from the reference, the operation says so.',
          license: { name: config.API_LICENSE_NAME, ...(config.API_LICENSE_URL ? { url: config.API_LICENSE_URL } : {}) },
          ...(config.API_CONTACT_EMAIL || config.API_CONTACT_URL
            ? {
                contact: {
                  ...(config.API_CONTACT_EMAIL ? { email: config.API_CONTACT_EMAIL } : {}),
                  ...(config.API_CONTACT_URL ? { url: config.API_CONTACT_URL } : {})
                }
              }
            : {})
        },
        servers: [{ url: serverUrl(config) }],
        tags: Object.entries(apiTags).map(([name, description]) => ({ name, description })),
        // The schemas as plain JSON: TypeBox marks its objects with symbols.
        components: { securitySchemes, schemas: JSON.parse(JSON.stringify(events.schemas)) },
        // Spread: an extension the swagger types cannot name.
        ...{ 'x-webhooks': events.webhooks }
      }
    })
    await app.register(swaggerUi, { routePrefix: '/documentation' })
  },
  { name: 'openapi', dependencies: ['services'] }
)
