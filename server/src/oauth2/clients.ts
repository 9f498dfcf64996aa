// OAuth2 clients and their authentication at the token endpoint (RFC 6749 sections 2.3 and 3.2.1).
import { randomUUID } from 'node:crypto'
import type { GrantType } from '@club/contract'
import type { Clock } from '../clock.js'
import { randomToken, safeEqual, sha256Hex } from '../crypto.js'
import type { DbOrTx } from '../db/database.js'
import { BadRequestError, OAuth2Error } from '../errors.js'
import { checkRegisteredScopes } from './scopes.js'

export const GRANT_TYPES: readonly GrantType[] = ['password', 'refresh_token', 'client_credentials', 'authorization_code']
/** What a client is registered with, and a client-less password grant gets, when no scope is named. */
export const DEFAULT_SCOPES = ['api']

export interface OAuthClient {
  id: string
  name: string
  redirectUris: string[]
  grants: GrantType[]
  scopes: string[]
}

export interface NewClient {
  name: string
  redirectUris?: string[]
  grants?: string[]
  scopes?: string[]
}

export async function createClient(
  db: DbOrTx,
  input: NewClient,
  clock: Clock
): Promise<{ clientId: string; clientSecret: string; client: OAuthClient }> {
  const name = input.name.trim()
  if (!name) throw new BadRequestError('name must not be empty')
  const grants = input.grants?.length ? input.grants : ['client_credentials', 'refresh_token']
  for (const grant of grants) {
    if (!GRANT_TYPES.includes(grant as GrantType)) {
      throw new BadRequestError(`grant must be one of ${GRANT_TYPES.join(', ')}; got ${grant}`)
    }
  }
  const redirectUris = input.redirectUris ?? []
  for (const uri of redirectUris) {
    let parsed: URL
    try {
      parsed = new URL(uri)
    } catch {
      throw new BadRequestError(`redirect URI ${uri} is not an absolute URL`)
    }
    // RFC 6749 section 3.1.2: the redirection endpoint must not include a fragment.
    if (parsed.hash) throw new BadRequestError(`redirect URI ${uri} must not have a fragment`)
  }
  if (grants.includes('authorization_code') && redirectUris.length === 0) {
    throw new BadRequestError('a client allowed authorization_code needs at least one redirect URI')
  }
  const scopes = checkRegisteredScopes(input.scopes?.length ? input.scopes : DEFAULT_SCOPES)
  const clientId = randomUUID()
  const clientSecret = randomToken()
  await db
    .insertInto('oauth_clients')
    .values({
      id: clientId,
      name,
      secret_hash: sha256Hex(clientSecret),
      redirect_uris: JSON.stringify(redirectUris),
      grants: JSON.stringify(grants),
      scopes: JSON.stringify(scopes),
      created_at: clock.now().toISOString()
    })
    .execute()
  return { clientId, clientSecret, client: { id: clientId, name, redirectUris, grants: grants as GrantType[], scopes } }
}

export async function findClient(db: DbOrTx, clientId: string): Promise<(OAuthClient & { secretHash: string }) | undefined> {
  const row = await db.selectFrom('oauth_clients').selectAll().where('id', '=', clientId).executeTakeFirst()
  if (!row) return undefined
  return {
    id: row.id,
    name: row.name,
    secretHash: row.secret_hash,
    redirectUris: JSON.parse(row.redirect_uris),
    grants: JSON.parse(row.grants),
    scopes: JSON.parse(row.scopes)
  }
}

export type ClientAuthentication =
  | { method: 'none'; client: null }
  | { method: 'basic' | 'body'; client: OAuthClient }

/** RFC 6749 section 5.2: a client that failed to authenticate is told to use HTTP Basic. */
export const basicChallenge = { 'www-authenticate': 'Basic realm="club", charset="UTF-8"' }

/** RFC 6749 Appendix B: Basic credentials are form-urlencoded before base64. */
function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '))
  } catch {
    throw new OAuth2Error('invalid_request', 'the client credentials in the Authorization header are not form-urlencoded')
  }
}

/**
 * Authenticates the client of a token request by HTTP Basic or by `client_id`/`client_secret` in
 * the body, never both. No credentials at all is `method: 'none'`; the grant decides whether
 * that is allowed.
 */
export async function authenticateClient(
  db: DbOrTx,
  authorization: string | undefined,
  body: { client_id?: string; client_secret?: string }
): Promise<ClientAuthentication> {
  let clientId: string
  let secret: string
  let method: 'basic' | 'body'
  if (authorization !== undefined) {
    const match = /^Basic(?: +(\S*))?\s*$/i.exec(authorization)
    if (!match) throw new OAuth2Error('invalid_request', 'the Authorization header must use the Basic scheme')
    if (body.client_secret !== undefined) {
      throw new OAuth2Error('invalid_request', 'use one client authentication method: the Authorization header or client_secret, not both')
    }
    const decoded = Buffer.from(match[1] ?? '', 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    if (!match[1] || colon < 0) {
      throw new OAuth2Error('invalid_request', 'the Basic credentials must be base64 of client_id:client_secret')
    }
    clientId = formDecode(decoded.slice(0, colon))
    secret = formDecode(decoded.slice(colon + 1))
    if (body.client_id !== undefined && body.client_id !== clientId) {
      throw new OAuth2Error('invalid_request', 'client_id in the body differs from the one in the Authorization header')
    }
    method = 'basic'
  } else if (body.client_id !== undefined || body.client_secret !== undefined) {
    if (body.client_id === undefined) throw new OAuth2Error('invalid_request', 'client_secret was sent without client_id')
    clientId = body.client_id
    secret = body.client_secret ?? ''
    method = 'body'
  } else {
    return { method: 'none', client: null }
  }
  const client = await findClient(db, clientId)
  // Hash and compare even for an unknown client, so timing does not tell which ids exist.
  const valid = safeEqual(sha256Hex(secret), client?.secretHash ?? sha256Hex(''))
  if (!client || !valid || secret === '') {
    throw new OAuth2Error('invalid_client', 'client authentication failed', 401, basicChallenge)
  }
  const { secretHash: _secretHash, ...publicClient } = client
  return { method, client: publicClient }
}
