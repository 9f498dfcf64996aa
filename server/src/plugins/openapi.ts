// The OpenAPI 3 document, built from the contract's route schemas, and Swagger UI to read it.
import type { FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'

export default fp(
  async function openapi(app: FastifyInstance) {
    await app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: {
          title: 'Club Platform API',
          version: '2.0',
          description:
            'The v2 interface of the club platform. Every error answers `{statusCode, message, error}`. ' +
            'Where this server departs from the reference, the operation says so.'
        },
        components: {
          securitySchemes: {
            bearerAuth: { type: 'http', scheme: 'bearer' },
            apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' }
          }
        }
      }
    })
    await app.register(swaggerUi, { routePrefix: '/documentation' })
  },
  { name: 'openapi' }
)
