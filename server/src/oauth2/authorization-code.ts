// The authorization code grant (RFC 6749 section 4.1) with PKCE (RFC 7636): a signed-in user
// authorizes a registered client, the client exchanges the single-use code at the token endpoint.
import { createHash, randomUUID } from 'node:crypto'
import type { Authorization, AuthorizationRequest, OAuth2AccessToken } from '@club/contract'
import type { Clock } from '../clock.js'
import { randomToken, safeEqual, sha256Hex } from '../crypto.js'
import type { Db, DbOrTx } from '../db/database.js'
import { BadRequestError, OAuth2Error, quote } from '../errors.js'
import { withQuery } from '../url.js'
import { findClient } from './clients.js'
import type { GrantHandler } from './service.js'
import { parseScope, scopesBeyond } from './scopes.js'
import { issueTokenPair, revokeFamily } from './tokens.js'

/** RFC 7636 section 4.2: BASE64URL(SHA256(ASCII(code_verifier))). */
export function s256Challenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url')
}

const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/

export interface AuthorizeDeps {
  clock: Clock
  codeTtlSeconds: number
}

/** Issues a code for `userId` to the client the request names, after checking client, redirect URI and scope. */
export async function authorize(db: DbOrTx, userId: string, request: AuthorizationRequest, deps: AuthorizeDeps): Promise<Authorization> {
  const client = await findClient(db, request.clientId)
  if (!client) throw new BadRequestError(`clientId ${request.clientId} is not a registered client`)
  if (!client.grants.includes('authorization_code')) {
    throw new BadRequestError(`client ${request.clientId} is not allowed the authorization_code grant`)
  }
  // Exact string comparison (RFC 9700 section 4.1.3): no prefix, pattern or normalization.
  if (!client.redirectUris.includes(request.redirectUri)) {
    throw new BadRequestError('redirectUri is not one of the redirect URIs registered for this client')
  }
  const asked = parseScope(request.scope) ?? []
  const extra = scopesBeyond(asked, client.scopes)
  if (extra.length > 0) throw new BadRequestError(`scope ${quote(extra.join(' '), { limit: 40 })} is not allowed for this client`)
  const scope = (asked.length > 0 ? asked : client.scopes).join(' ')
  if (request.codeChallengeMethod !== undefined && request.codeChallenge === undefined) {
    throw new BadRequestError('codeChallengeMethod was sent without codeChallenge')
  }
  if (request.codeChallenge !== undefined && request.codeChallengeMethod !== 'S256') {
    // RFC 7636 would read a missing method as "plain", which this server does not accept.
    throw new BadRequestError('codeChallengeMethod must be S256 when codeChallenge is sent')
  }

  const code = randomToken()
  const now = deps.clock.now()
  await db
    .insertInto('authorization_codes')
    .values({
      id: randomUUID(),
      code_hash: sha256Hex(code),
      client_id: client.id,
      user_id: userId,
      redirect_uri: request.redirectUri,
      scope,
      code_challenge: request.codeChallenge ?? null,
      code_challenge_method: request.codeChallenge ? 'S256' : null,
      expires_at: new Date(now.getTime() + deps.codeTtlSeconds * 1000).toISOString(),
      used_at: null,
      family_id: null,
      created_at: now.toISOString()
    })
    .execute()
  return {
    type: 'OAUTH2_AUTHORIZATION_CODE',
    clientId: client.id,
    scope,
    code,
    callbackUrl: withQuery(request.redirectUri, { code, state: request.state })
  }
}

/**
 * The token endpoint's `authorization_code` grant. The reference requires HTTP Basic client
 * authentication for it. A code works once; presented again it revokes the tokens issued from it.
 */
export const authorizationCodeGrant: GrantHandler = async (db: Db, body, auth, deps): Promise<OAuth2AccessToken> => {
  if (auth.method !== 'basic' || !auth.client) {
    throw new OAuth2Error('invalid_client', 'the authorization_code grant requires HTTP Basic client authentication', 401, {
      'www-authenticate': 'Basic realm="club", charset="UTF-8"'
    })
  }
  const client = auth.client
  if (!client.grants.includes('authorization_code')) {
    throw new OAuth2Error('unauthorized_client', 'the client is not allowed the authorization_code grant')
  }
  if (!body.code) throw new OAuth2Error('invalid_request', 'code is required')
  if (!body.redirect_uri) throw new OAuth2Error('invalid_request', 'redirect_uri is required')
  if (body.code_verifier !== undefined && !VERIFIER.test(body.code_verifier)) {
    throw new OAuth2Error('invalid_request', 'code_verifier must be 43 to 128 characters of A-Z, a-z, 0-9, "-", ".", "_", "~"')
  }
  const code = body.code
  const redirectUri = body.redirect_uri
  const verifier = body.code_verifier

  const outcome = await db.transaction().execute(async (tx) => {
    const now = deps.clock.now().toISOString()
    const row = await tx.selectFrom('authorization_codes').selectAll().where('code_hash', '=', sha256Hex(code)).executeTakeFirst()
    type Outcome = { answer?: OAuth2AccessToken; error: string }
    if (!row || row.client_id !== client.id) return { error: 'the code is not valid for this client' } as Outcome
    if (row.used_at !== null) {
      if (row.family_id) await revokeFamily(tx, row.family_id, deps.clock)
      return { error: 'the code was already used; the tokens issued from it are now revoked' } as Outcome
    }
    if (row.expires_at <= now) return { error: 'the code has expired' } as Outcome
    if (row.redirect_uri !== redirectUri) return { error: 'redirect_uri differs from the one the code was issued for' } as Outcome
    if (row.code_challenge === null && verifier !== undefined) {
      return { error: 'code_verifier was sent but the code was issued without a code challenge' } as Outcome
    }
    if (row.code_challenge !== null) {
      if (verifier === undefined) return { error: 'code_verifier is required: the code was issued with a code challenge' } as Outcome
      if (!safeEqual(s256Challenge(verifier), row.code_challenge)) return { error: 'code_verifier does not match the code challenge' } as Outcome
    }
    const consumed = await tx
      .updateTable('authorization_codes')
      .set({ used_at: now })
      .where('id', '=', row.id)
      .where('used_at', 'is', null)
      .executeTakeFirst()
    if (Number(consumed.numUpdatedRows) !== 1) return { error: 'the code was already used' } as Outcome
    const { familyId, ...answer } = await issueTokenPair(tx, { userId: row.user_id, clientId: client.id, scope: row.scope }, deps)
    await tx.updateTable('authorization_codes').set({ family_id: familyId }).where('id', '=', row.id).execute()
    return { answer, error: '' } as Outcome
  })
  // A revocation above must commit, so the refusal is thrown only after the transaction.
  if (outcome.answer === undefined) throw new OAuth2Error('invalid_grant', outcome.error)
  return outcome.answer
}
