// The OpenAPI 3 document, built from the contract's route schemas, and Swagger UI to read it.
import type { FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { apiTags, eventPayloads, eventTypes, securitySchemes } from '@club/contract'
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
 * A contract schema in OpenAPI 3.0's dialect, as @fastify/swagger writes the routes' schemas (its
 * converter is not exported): `anyOf` with a null member becomes `nullable`, `patternProperties`
 * becomes `additionalProperties`, `const` a one-value `enum`, `examples` its first `example`. Plain JSON in, plain JSON out.
 */
export function toOpenapi30(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(toOpenapi30)
  if (typeof schema !== 'object' || schema === null) return schema
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$id' || key === '$schema') continue
    if (key === 'const') out.enum = [value]
    else if (key === 'examples') out.example = (value as unknown[])[0]
    else if (key === 'patternProperties') out.additionalProperties = toOpenapi30(Object.values(value as object)[0])
    else if (key === 'properties') out.properties = Object.fromEntries(Object.entries(value as object).map(([name, s]) => [name, toOpenapi30(s)]))
    else out[key] = toOpenapi30(value)
  }
  const members = out.anyOf as Array<Record<string, unknown>> | undefined
  const rest = members?.filter((member) => member.type !== 'null')
  if (members && rest && rest.length < members.length) {
    // `anyOf: [X, {type: 'null'}]` is X that may be null; several non-null members stay an anyOf.
    delete out.anyOf
    Object.assign(out, rest.length === 1 ? rest[0] : { anyOf: rest }, { nullable: true })
    // 3.0 wants `nullable` beside a `type`, and null among an enum's values when it may be null.
    const values = out.enum as unknown[] | undefined
    if (values) {
      out.type ??= values.every((v) => typeof v === 'string') ? 'string' : undefined
      out.enum = [...values, null]
    }
  }
  return out
}

/**
 * One entry per event type: the body a webhook endpoint receives (Standard Webhooks' {type,
 * timestamp, data}) with `data` the resource's GET schema. The feed answers the same events.
 */
function eventWebhooks(): { 'x-webhooks': Record<string, unknown> } {
  // OpenAPI 3.1's `webhooks`, under the name 3.0 tools (Redoc) read; an extension the types cannot name.
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
                    // The contract's schema as plain JSON (TypeBox marks its objects with symbols), in 3.0's words.
                    data: toOpenapi30(JSON.parse(JSON.stringify(eventPayloads[type])))
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
  return { 'x-webhooks': webhooks }
}

export default fp(
  async function openapi(app: FastifyInstance) {
    const config = app.config
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
        components: { securitySchemes },
        ...eventWebhooks()
      }
    })
    await app.register(swaggerUi, { routePrefix: '/documentation' })
  },
  { name: 'openapi', dependencies: ['services'] }
)
