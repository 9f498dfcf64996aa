// The authorization endpoints a signed-in user calls: authorization codes for a client, and a
// short-lived token for the app's web view. Also registers the authorization_code grant.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { oauth2Routes } from '@club/contract'
import { currentUser } from '../plugins/auth.js'
import { authorizationCodeGrant, authorize } from './authorization-code.js'
import { issueWebviewToken } from './webview.js'

/** Answers that carry a code or token must not be cached (RFC 6749 section 5.1). */
const noStore = { 'cache-control': 'no-store', pragma: 'no-cache' }

const authorizations: FastifyPluginAsyncTypebox = async (app) => {
  app.tokenEndpoint.registerGrant('authorization_code', authorizationCodeGrant)

  app.route({
    ...oauth2Routes.authorizations,
    preHandler: app.auth.bearer(),
    handler: async (request, reply) => {
      const answer = await authorize(app.db, currentUser(request).id, request.body, {
        clock: app.clock,
        codeTtlSeconds: app.config.AUTHORIZATION_CODE_TTL_SECONDS
      })
      return reply.code(201).headers(noStore).send(answer)
    }
  })

  app.route({
    ...oauth2Routes.webviewToken,
    preHandler: app.auth.bearer(),
    handler: async (request, reply) => {
      const answer = await issueWebviewToken(app.db, request.principal!, request.body, {
        clock: app.clock,
        ttlSeconds: app.config.WEBVIEW_TOKEN_TTL_SECONDS
      })
      return reply.code(201).headers(noStore).send(answer)
    }
  })
}

export default authorizations
