// Browser apps on other origins (CORS_ORIGINS): preflights answered for the listed origins with what
// the API uses, and the headers a client needs to read exposed. Everyone else is refused by the browser.
import type { FastifyInstance } from 'fastify'
import cors from '@fastify/cors'
import fp from 'fastify-plugin'
import { parseCorsOrigins } from '../config.js'

/** Request headers the API reads: credentials, bodies, and the conditional requests on templates and status. */
export const corsAllowedHeaders = ['authorization', 'x-api-key', 'content-type', 'if-match', 'if-none-match']
/** Answer headers a client acts on: versions for If-Match/If-None-Match, and when it may try again. */
export const corsExposedHeaders = ['etag', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'www-authenticate']

export default fp(
  async function corsPolicy(app: FastifyInstance) {
    await app.register(cors, {
      // Always a list, even an empty one: a list makes the plugin compare each Origin exactly, reflect only
      // a listed one and send `Vary: Origin`. With none listed a preflight still gets its 204, without
      // Access-Control-Allow-Origin, which is how a browser is told no (`origin: false` would answer 404).
      origin: parseCorsOrigins(app.config.CORS_ORIGINS),
      // Tokens and keys travel in headers, never in cookies: no credentials mode, so never `*` with it.
      credentials: false,
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      allowedHeaders: corsAllowedHeaders,
      exposedHeaders: corsExposedHeaders,
      // Browsers cap this (Chromium at 2 hours); 10 minutes spares a preflight per call without
      // keeping a changed CORS_ORIGINS from taking effect for long.
      maxAge: 600,
      // An OPTIONS without Origin is no preflight; answer it like one anyway rather than with the
      // plugin's plain-text 400, which would be the one answer outside the platform's error shape.
      strictPreflight: false
    })
  },
  { name: 'cors', dependencies: ['services'] }
)
