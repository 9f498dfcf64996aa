// Headers every answer carries, errors and 404s included: browsers must not guess a content type
// (an error body sniffed as HTML), and no address of ours (links carry ids and reset tokens) leaks
// as a Referer to another site.
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

export default fp(
  async function securityHeaders(app: FastifyInstance) {
    // onSend runs for every answer, the error handler's and the 404 handler's too. Two constant
    // strings, no allocation: the hot status poll pays next to nothing. No Content-Security-Policy
    // here: it belongs to pages, and Swagger UI's needs its inline scripts. A callback, not an async
    // function, so no promise is made per answer.
    app.addHook('onSend', (_request, reply, payload, done) => {
      reply.header('x-content-type-options', 'nosniff')
      reply.header('referrer-policy', 'no-referrer')
      done(null, payload)
    })
  },
  { name: 'security-headers' }
)
