// Short-lived tokens for the mobile app's embedded web view: the same user and login (token family)
// as the app's own Bearer token, so signing out of the app revokes the web view's tokens too.
import type { OAuth2AccessToken, WebviewTokenRequest } from '@club/contract'
import type { Clock } from '../clock.js'
import type { DbOrTx } from '../db/database.js'
import { BadRequestError, ForbiddenError, OAuth2Error } from '../errors.js'
import type { Principal } from '../plugins/auth.js'
import { normalizeEmail } from '../users/service.js'
import { grantScope } from './scopes.js'
import { issueTokenPair } from './tokens.js'

export const WEBVIEW_GRANT_TYPE = 'mobile_webview_auth'

/** A page in the app shows replays and who is signed in; it never needs the app's whole `api`. */
export const WEBVIEW_SCOPES = ['replays', 'profile'] as const

/** What a web view token is given: `replays profile`, or less when asked; more is a 400, not a silent cut. */
function webviewScope(requested: string | undefined): string {
  try {
    return grantScope(requested, WEBVIEW_SCOPES)
  } catch (err) {
    if (err instanceof OAuth2Error) throw new BadRequestError(`scope: ${err.message}; a web view token may have ${WEBVIEW_SCOPES.join(' ')}`)
    throw err
  }
}

export async function issueWebviewToken(
  db: DbOrTx,
  principal: Principal,
  request: WebviewTokenRequest,
  deps: { clock: Clock; ttlSeconds: number }
): Promise<OAuth2AccessToken> {
  if (request.grant_type !== WEBVIEW_GRANT_TYPE) throw new BadRequestError(`grant_type must be ${WEBVIEW_GRANT_TYPE}`)
  if (principal.kind !== 'user' || principal.via !== 'bearer') throw new ForbiddenError('a web view token needs a user\'s Bearer token')
  if (normalizeEmail(request.username) !== normalizeEmail(principal.user.email)) {
    throw new ForbiddenError("username must be the signed-in user's own e-mail")
  }
  const { familyId: _familyId, ...answer } = await issueTokenPair(
    db,
    { userId: principal.user.id, clientId: principal.clientId, scope: webviewScope(request.scope), familyId: principal.familyId },
    // The refresh token lives no longer than the access token: the web view's session stays short.
    { clock: deps.clock, accessTokenTtlSeconds: deps.ttlSeconds, refreshTokenTtlSeconds: deps.ttlSeconds }
  )
  return answer
}
