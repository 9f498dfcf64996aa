// OAuth2 tokens and the authorization endpoints: code grant, webview tokens, forum single sign-on, password reset.
import Type, { type Static } from 'typebox'
import { ErrorBody, bearerSecurity, defineRoutes, noSecurity, type SecurityRequirement } from './common.js'

export const GrantType = Type.Enum(['password', 'refresh_token', 'client_credentials', 'authorization_code'])
export type GrantType = Static<typeof GrantType>

export const OAuth2AccessToken = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('bearer'),
  expires_in: Type.Integer({ description: 'Seconds until the access token expires' }),
  refresh_token: Type.String(),
  scope: Type.Optional(Type.String())
})
export type OAuth2AccessToken = Static<typeof OAuth2AccessToken>

const Param = (description: string) => Type.Optional(Type.String({ description, writeOnly: true }))

/**
 * The token request. `grant_type` is checked by the endpoint itself, not by the schema, so an
 * unknown grant answers RFC 6749's `unsupported_grant_type` rather than a generic 400.
 */
export const TokenRequest = Type.Object({
  grant_type: Type.String({ description: 'password, refresh_token, client_credentials or authorization_code' }),
  username: Param("The user's e-mail (password grant)"),
  password: Param('password grant'),
  scope: Param(
    'Space-delimited scopes (api, read, replays, profile); a client may ask only for the scopes it is registered with. ' +
      'Defaults to every scope the client is registered with; without a client, to api'
  ),
  refresh_token: Param('refresh_token grant'),
  code: Param('authorization_code grant'),
  redirect_uri: Param('authorization_code grant: the redirect URI the code was issued for'),
  code_verifier: Param('authorization_code grant with PKCE (RFC 7636)'),
  client_id: Param('Client authentication in the body (instead of HTTP Basic)'),
  client_secret: Param('Client authentication in the body (instead of HTTP Basic)')
})
export type TokenRequest = Static<typeof TokenRequest>

export const TokenQuery = Type.Object({ utm_location: Type.Optional(Type.String()) })

export const OAuth2ErrorCode = Type.Enum([
  'invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type', 'invalid_scope'
])
export type OAuth2ErrorCode = Static<typeof OAuth2ErrorCode>

/** RFC 6749 section 5.2 inside the platform's error shape: `error` carries the OAuth2 code. */
export const OAuth2Error = Type.Object({
  statusCode: Type.Integer(),
  error: OAuth2ErrorCode,
  message: Type.String(),
  error_description: Type.String()
})
export type OAuth2Error = Static<typeof OAuth2Error>

export const AuthorizationType = Type.Literal('OAUTH2_AUTHORIZATION_CODE')
export const CodeChallengeMethod = Type.Literal('S256')

export const AuthorizationRequest = Type.Object({
  type: AuthorizationType,
  clientId: Type.String({ minLength: 1 }),
  redirectUri: Type.String({ minLength: 1, writeOnly: true }),
  scope: Type.Optional(Type.String()),
  state: Type.Optional(Type.String({ maxLength: 500 })),
  codeChallenge: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{43}$' })),
  codeChallengeMethod: Type.Optional(CodeChallengeMethod)
})
export type AuthorizationRequest = Static<typeof AuthorizationRequest>

export const Authorization = Type.Object({
  type: AuthorizationType,
  clientId: Type.String(),
  scope: Type.String(),
  code: Type.String({ readOnly: true }),
  callbackUrl: Type.String({ readOnly: true })
})
export type Authorization = Static<typeof Authorization>

export const WebviewTokenRequest = Type.Object({
  username: Type.String({ minLength: 1 }),
  grant_type: Type.String({ description: 'mobile_webview_auth' }),
  scope: Type.Optional(Type.String({ description: 'Space-delimited, within `replays profile` (the default): a web view may ask for less, never more' }))
})
export type WebviewTokenRequest = Static<typeof WebviewTokenRequest>

export const ForumConnectRequest = Type.Object({
  type: Type.Literal('FORUM_CONNECT'),
  sso: Type.String({ minLength: 1, maxLength: 8192 }),
  sig: Type.String({ minLength: 1, maxLength: 128 })
})
export type ForumConnectRequest = Static<typeof ForumConnectRequest>

export const ForumConnectAuthorization = Type.Object({
  type: Type.Literal('FORUM_CONNECT'),
  sso: Type.String(),
  sig: Type.String(),
  callbackUrl: Type.String({ readOnly: true })
})
export type ForumConnectAuthorization = Static<typeof ForumConnectAuthorization>

export const PasswordResetRequest = Type.Object({
  email: Type.String({ format: 'email', maxLength: 320, writeOnly: true })
})
export type PasswordResetRequest = Static<typeof PasswordResetRequest>

export const PasswordReset = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 200, writeOnly: true }),
  password: Type.String({ minLength: 1, maxLength: 1024, writeOnly: true })
})
export type PasswordReset = Static<typeof PasswordReset>

export const EmptyObject = Type.Object({}, { additionalProperties: false })

/** RFC 7009's revocation request: the token to end, and optionally which kind it is. */
export const TokenRevocation = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 512, writeOnly: true, description: 'An access or refresh token' }),
  token_type_hint: Type.Optional(Type.Enum(['access_token', 'refresh_token'])),
  client_id: Param('Client authentication in the body (instead of HTTP Basic)'),
  client_secret: Param('Client authentication in the body (instead of HTTP Basic)')
})
export type TokenRevocation = Static<typeof TokenRevocation>

const tokenDescription = [
  'Issues tokens (RFC 6749). Form-urlencoded, JSON also accepted. Answers 201 (the reference; RFC 6749 says 200).',
  'Errors follow RFC 6749 section 5.2 inside the platform error shape; a failed client authentication through',
  'the Authorization header answers 401 with `WWW-Authenticate: Basic`.',
  'The `password` grant is kept for first-party apps although RFC 9700 section 2.4 says it MUST NOT be used:',
  'it works without client authentication, and when client credentials are sent they must be valid and the client',
  'must be allowed the grant. A `client_credentials` answer carries a refresh token because the reference requires',
  'one (RFC 6749 section 4.4.3 says it should not). A refresh token works once; presenting a used one revokes every',
  'token of the same login (RFC 9700 section 4.14.2).'
].join(' ')

/**
 * The token endpoint takes a confidential client's credentials as HTTP Basic (required for
 * authorization_code), and also answers without any: public clients send `client_id` in the body, and the
 * password and refresh grants need no client at all. `{}` is OpenAPI's way of saying the credential is optional.
 */
const tokenSecurity: SecurityRequirement[] = [{ clientBasic: [] }, {}]

export const oauth2Routes = defineRoutes({
  token: {
    method: 'POST',
    url: '/apis/v2/oauth2/token',
    schema: {
      operationId: 'createToken',
      summary: 'Issue an access token',
      description: tokenDescription,
      tags: ['oauth2'],
      security: tokenSecurity,
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      querystring: TokenQuery,
      body: TokenRequest,
      response: { 201: OAuth2AccessToken, 400: OAuth2Error, 401: OAuth2Error, 429: ErrorBody }
    }
  },
  revoke: {
    method: 'POST',
    url: '/apis/v2/oauth2/revoke',
    schema: {
      operationId: 'revokeToken',
      summary: 'Sign out: revoke a token and every token of the same login (RFC 7009)',
      description:
        'Not in the reference. Form-urlencoded, JSON also accepted. A token issued to a client (a confidential client: every ' +
        "client here has a secret) is revoked only with that client's authentication, as at the token endpoint (RFC 7009 " +
        'section 2.1): none is 401 `invalid_client`, another client\'s is 400 `unauthorized_client` and the token stays valid. ' +
        'A token issued without a client (the first-party password grant) needs no more than itself. Answers 200 `{}` ' +
        'whether or not the token was known or still valid (RFC 7009 section 2.2), so the answer tells nothing about it. ' +
        "The access and refresh tokens of the login stop working at once. Limited per client IP like the token endpoint.",
      tags: ['oauth2'],
      security: tokenSecurity,
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      body: TokenRevocation,
      response: { 200: EmptyObject, 400: OAuth2Error, 401: OAuth2Error, 429: ErrorBody }
    }
  },
  authorizations: {
    method: 'POST',
    url: '/apis/v2/oauth2/authorizations',
    schema: {
      operationId: 'createAuthorization',
      summary: 'Authorize a client for the signed-in user (authorization code, RFC 6749 4.1 with PKCE)',
      description:
        '`redirectUri` must equal one of the client\'s registered URIs exactly. Optional `state`, and PKCE with ' +
        '`codeChallenge` + `codeChallengeMethod` (S256 only). The code works once, for at most 10 minutes; the client ' +
        'exchanges it at the token endpoint with HTTP Basic client authentication.',
      tags: ['oauth2'],
      security: bearerSecurity,
      body: AuthorizationRequest,
      response: { 201: Authorization, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody }
    }
  },
  webviewToken: {
    method: 'POST',
    url: '/apis/v2/oauth2/webview-token',
    schema: {
      operationId: 'createWebviewToken',
      summary: "A short-lived token for the app's embedded web view",
      description:
        '`username` must be the signed-in user\'s own e-mail (403 otherwise); `grant_type` must be mobile_webview_auth. ' +
        'The token has the scopes `replays profile`, or fewer when `scope` asks for fewer; asking for any other is 400.',
      tags: ['oauth2'],
      security: bearerSecurity,
      body: WebviewTokenRequest,
      response: { 201: OAuth2AccessToken, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody }
    }
  },
  forumConnect: {
    method: 'POST',
    url: '/apis/v2/oauth2/forum-connect/authorizations',
    schema: {
      operationId: 'createForumConnectAuthorization',
      summary: 'Forum single sign-on (DiscourseConnect provider)',
      tags: ['oauth2'],
      security: bearerSecurity,
      description:
        'DiscourseConnect, provider side: `sig` must be the hex HMAC-SHA256 of `sso` under the forum secret and the ' +
        "payload's `return_sso_url` must be on the forum's origin. 503 when this server has no forum configured.",
      body: ForumConnectRequest,
      response: { 201: ForumConnectAuthorization, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 503: ErrorBody }
    }
  },
  requestPasswordReset: {
    method: 'PATCH',
    url: '/apis/v2/oauth2/users/credentials',
    schema: {
      operationId: 'requestPasswordReset',
      summary: 'Start a password reset',
      description:
        'Always answers 200 `{}`, whether or not the address belongs to a user; a user gets an e-mail with a link ' +
        'that works once, for one hour. Limited per client IP and per address (429).',
      tags: ['oauth2'],
      security: noSecurity,
      body: PasswordResetRequest,
      response: { 200: EmptyObject, 400: ErrorBody, 429: ErrorBody }
    }
  },
  resetPassword: {
    method: 'POST',
    url: '/apis/v2/oauth2/users/credentials/reset',
    schema: {
      operationId: 'resetPassword',
      summary: 'Finish a password reset with the token from the e-mail',
      description:
        'Not in the reference: the reference starts the flow and leaves out how it ends. Sets the new password and ' +
        "signs the user out everywhere; an unknown, used or expired token is 400.",
      tags: ['oauth2'],
      security: noSecurity,
      body: PasswordReset,
      response: { 200: EmptyObject, 400: ErrorBody, 429: ErrorBody }
    }
  }
})
