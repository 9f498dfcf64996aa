// The token endpoint's grants (RFC 6749 section 4): which grant, which client, which checks.
import type { OAuth2AccessToken, TokenRequest } from '@club/contract'
import type { Db } from '../db/database.js'
import { OAuth2Error } from '../errors.js'
import { checkCredentials, type PasswordDeps } from '../users/service.js'
import { DEFAULT_SCOPES, authenticateClient, type ClientAuthentication, type OAuthClient } from './clients.js'
import { SCOPES, grantScope } from './scopes.js'
import { issueTokenPair, refreshTokens, type TokenDeps } from './tokens.js'

export interface TokenEndpointDeps extends TokenDeps, PasswordDeps {
  passwordGrantEnabled: boolean
}

/** A grant handler beyond the built-in ones (the authorization-code grant registers here). */
export type GrantHandler = (
  db: Db,
  body: TokenRequest,
  client: ClientAuthentication,
  deps: TokenEndpointDeps
) => Promise<OAuth2AccessToken>

const required = (value: string | undefined, name: string): string => {
  if (value === undefined || value === '') throw new OAuth2Error('invalid_request', `${name} is required`)
  return value
}

function requireClientAllowed(client: OAuthClient, grant: string): void {
  if (!client.grants.includes(grant as never)) {
    throw new OAuth2Error('unauthorized_client', `the client is not allowed the ${grant} grant`)
  }
}

const builtInGrants: Record<string, GrantHandler> = {
  async password(db, body, { client }, deps) {
    if (!deps.passwordGrantEnabled) throw new OAuth2Error('unsupported_grant_type', 'the password grant is disabled')
    if (client) requireClientAllowed(client, 'password')
    const username = required(body.username, 'username')
    const password = required(body.password, 'password')
    // A first-party app without a client gets `api` unless it asks for a narrower scope.
    const scope = client ? grantScope(body.scope, client.scopes) : grantScope(body.scope, SCOPES, DEFAULT_SCOPES)
    const user = await checkCredentials(db, username, password, deps)
    if (!user) throw new OAuth2Error('invalid_grant', 'the username or password is incorrect')
    const { familyId: _f, ...answer } = await issueTokenPair(db, { userId: user.id, clientId: client?.id ?? null, scope }, deps)
    return answer
  },

  async refresh_token(db, body, { client }, deps) {
    if (client) requireClientAllowed(client, 'refresh_token')
    const refreshToken = required(body.refresh_token, 'refresh_token')
    return refreshTokens(db, { refreshToken, clientId: client?.id ?? null, scope: body.scope }, deps)
  },

  async client_credentials(db, body, { client }, deps) {
    if (!client) throw new OAuth2Error('invalid_request', 'the client_credentials grant needs client authentication')
    requireClientAllowed(client, 'client_credentials')
    const scope = grantScope(body.scope, client.scopes)
    const { familyId: _f, ...answer } = await issueTokenPair(db, { userId: null, clientId: client.id, scope }, deps)
    return answer
  }
}

export class TokenEndpoint {
  private readonly grants = new Map<string, GrantHandler>(Object.entries(builtInGrants))

  registerGrant(name: string, handler: GrantHandler): void {
    this.grants.set(name, handler)
  }

  async exchange(db: Db, authorization: string | undefined, body: TokenRequest, deps: TokenEndpointDeps): Promise<OAuth2AccessToken> {
    const grantType = required(body.grant_type, 'grant_type')
    const handler = this.grants.get(grantType)
    // Authenticate the client first: a bad client is refused whatever grant it asks for.
    const client = await authenticateClient(db, authorization, body)
    if (!handler) throw new OAuth2Error('unsupported_grant_type', `grant_type ${grantType} is not supported`)
    return handler(db, body, client, deps)
  }
}
