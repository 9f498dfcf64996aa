// Access and refresh tokens: opaque 256-bit random strings, stored only as SHA-256 hashes.
// Every token of one login shares a family id, so reuse of a refresh token can revoke them all.
import { randomUUID } from 'node:crypto'
import type { OAuth2AccessToken } from '@club/contract'
import type { Clock } from '../clock.js'
import { randomToken, sha256Hex } from '../crypto.js'
import { compiledOnce, runCompiled } from '../db/compiled.js'
import type { Db, DbOrTx } from '../db/database.js'
import { readThrough } from '../db/read-cache.js'
import { forUpdate, rowLocked } from '../db/sql.js'
import { OAuth2Error, UnauthorizedError } from '../errors.js'
import { basicChallenge } from './clients.js'
import { grantScope } from './scopes.js'
import { userRecord, type UserRecord } from '../users/service.js'

export interface TokenLifetimes {
  accessTokenTtlSeconds: number
  refreshTokenTtlSeconds: number
}

export interface TokenDeps extends TokenLifetimes {
  clock: Clock
}

export interface TokenGrant {
  userId: string | null
  clientId: string | null
  scope: string
  /** Continue an existing login's family; a new login starts a new one. */
  familyId?: string
}

/** Issues an access and refresh token pair and answers them in the OAuth2AccessToken shape. */
export async function issueTokenPair(db: DbOrTx, grant: TokenGrant, deps: TokenDeps): Promise<OAuth2AccessToken & { familyId: string }> {
  const now = deps.clock.now()
  const familyId = grant.familyId ?? randomUUID()
  const accessToken = randomToken()
  const refreshToken = randomToken()
  const common = {
    user_id: grant.userId,
    client_id: grant.clientId,
    scope: grant.scope,
    family_id: familyId,
    revoked_at: null,
    used_at: null,
    created_at: now.toISOString(),
    access_ttl_seconds: deps.accessTokenTtlSeconds,
    refresh_ttl_seconds: deps.refreshTokenTtlSeconds
  }
  await db
    .insertInto('tokens')
    .values([
      {
        ...common,
        id: randomUUID(),
        kind: 'access',
        token_hash: sha256Hex(accessToken),
        expires_at: new Date(now.getTime() + deps.accessTokenTtlSeconds * 1000).toISOString()
      },
      {
        ...common,
        id: randomUUID(),
        kind: 'refresh',
        token_hash: sha256Hex(refreshToken),
        expires_at: new Date(now.getTime() + deps.refreshTokenTtlSeconds * 1000).toISOString()
      }
    ])
    .execute()
  return {
    access_token: accessToken,
    token_type: 'bearer',
    expires_in: deps.accessTokenTtlSeconds,
    refresh_token: refreshToken,
    scope: grant.scope,
    familyId
  }
}

export async function revokeFamily(db: DbOrTx, familyId: string, clock: Clock): Promise<void> {
  await db
    .updateTable('tokens')
    .set({ revoked_at: clock.now().toISOString() })
    .where('family_id', '=', familyId)
    .where('revoked_at', 'is', null)
    .execute()
}

export async function revokeUserTokens(db: DbOrTx, userId: string, clock: Clock): Promise<void> {
  await db
    .updateTable('tokens')
    .set({ revoked_at: clock.now().toISOString() })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .execute()
}

/**
 * RFC 7009: ends the login a token belongs to (its whole family: the access token and the refresh
 * token it came with, and their successors). An unknown token is no error: the caller learns nothing.
 * A token issued to a client is revoked only by that client, authenticated (section 2.1): whoever
 * else holds it, or another client, cannot end a partner's login.
 */
export async function revokeToken(db: DbOrTx, token: string, client: { id: string } | null, clock: Clock): Promise<void> {
  const row = await db.selectFrom('tokens').select(['family_id', 'client_id']).where('token_hash', '=', sha256Hex(token)).executeTakeFirst()
  if (!row) return
  if (row.client_id !== null && client === null) {
    throw new OAuth2Error('invalid_client', "this token was issued to a client: revoking it needs that client's authentication", 401, basicChallenge)
  }
  if (client !== null && row.client_id !== client.id) {
    throw new OAuth2Error('unauthorized_client', 'the token was not issued to this client; it was not revoked')
  }
  await revokeFamily(db, row.family_id, clock)
}

/**
 * Exchanges a refresh token for a new pair in the same family. The used token is consumed; a
 * token presented again, or twice at once, revokes the whole family (RFC 9700 section 4.14.2).
 */
export async function refreshTokens(
  db: Db,
  input: { refreshToken: string; clientId: string | null; scope?: string },
  deps: TokenDeps
): Promise<OAuth2AccessToken> {
  // The token's row, locked, keeps "used once": a second use waits, then reads it used.
  const outcome = await rowLocked(db, async (tx) => {
    const now = deps.clock.now().toISOString()
    const token = await forUpdate(
      tx,
      tx.selectFrom('tokens').selectAll().where('token_hash', '=', sha256Hex(input.refreshToken)).where('kind', '=', 'refresh')
    ).executeTakeFirst()
    type Outcome = { answer?: OAuth2AccessToken; error: string }
    if (!token) return { error: 'the refresh token is not valid' } as Outcome
    if (token.client_id !== input.clientId) {
      return { error: 'the refresh token was not issued to this client' } as Outcome
    }
    if (token.used_at !== null) {
      await revokeFamily(tx, token.family_id, deps.clock)
      return { error: 'the refresh token was already used; every token of this login is now revoked' } as Outcome
    }
    if (token.revoked_at !== null) return { error: 'the refresh token was revoked' } as Outcome
    if (token.expires_at <= now) return { error: 'the refresh token has expired' } as Outcome
    const consumed = await tx
      .updateTable('tokens')
      .set({ used_at: now })
      .where('id', '=', token.id)
      .where('used_at', 'is', null)
      .executeTakeFirst()
    if (Number(consumed.numUpdatedRows) !== 1) {
      await revokeFamily(tx, token.family_id, deps.clock)
      return { error: 'the refresh token was already used; every token of this login is now revoked' } as Outcome
    }
    const scope = grantScope(input.scope, token.scope.split(' ').filter(Boolean))
    // The new pair lives as long as the login's first did: a web view's short session stays short.
    const lifetimes = {
      clock: deps.clock,
      accessTokenTtlSeconds: token.access_ttl_seconds ?? deps.accessTokenTtlSeconds,
      refreshTokenTtlSeconds: token.refresh_ttl_seconds ?? deps.refreshTokenTtlSeconds
    }
    const pair = await issueTokenPair(tx, { userId: token.user_id, clientId: token.client_id, scope, familyId: token.family_id }, lifetimes)
    const { familyId: _familyId, ...answer } = pair
    return { answer, error: '' } as Outcome
  })
  // The revocation above must commit, so the refusal is thrown only after the transaction.
  if (outcome.answer === undefined) throw new OAuth2Error('invalid_grant', outcome.error)
  return outcome.answer
}

export interface AccessPrincipal {
  tokenId: string
  familyId: string
  clientId: string | null
  scope: string
  user: UserRecord | null
}

const invalidToken = (message: string) => new UnauthorizedError(message, 'Bearer error="invalid_token"')

/** What an access token's look-up reads: the token and its user in one indexed read. */
const accessTokenLookup = (db: DbOrTx, tokenHash: string) =>
  db
    .selectFrom('tokens')
    .leftJoin('users', 'users.id', 'tokens.user_id')
    .select([
      'tokens.id',
      'tokens.family_id',
      'tokens.client_id',
      'tokens.scope',
      'tokens.expires_at',
      'tokens.revoked_at',
      'tokens.kind',
      'users.id as user_id',
      'users.email',
      'users.role',
      'users.first_name',
      'users.last_name',
      'users.created_at'
    ])
    .where('tokens.token_hash', '=', tokenHash)

type AccessTokenRow = Awaited<ReturnType<ReturnType<typeof accessTokenLookup>['executeTakeFirstOrThrow']>>

/** Every request with a Bearer token asks this: compiled once (see db/compiled.ts). */
const accessTokenQuery = compiledOnce((db) => accessTokenLookup(db, ''))

/**
 * The principal behind an access token, or a 401 for an unknown, expired or revoked one. One
 * indexed read, answered from the read cache until a token, user or client changes (revocation
 * is a write to `tokens`, so it is seen by the next request); expiry is checked on every request.
 */
export async function authenticateAccessToken(db: DbOrTx, token: string, clock: Clock): Promise<AccessPrincipal> {
  const tokenHash = sha256Hex(token)
  const load = async (): Promise<AccessTokenRow> => {
    const row = (await runCompiled(db, accessTokenQuery, [tokenHash]))[0]
    if (!row) throw invalidToken('the access token is not valid')
    return row
  }
  const row = await readThrough(db, { name: 'access-tokens', tables: ['tokens', 'users', 'oauth_clients'] }, tokenHash, load)
  if (row.kind !== 'access') throw invalidToken('the access token is not valid')
  if (row.revoked_at !== null) throw invalidToken('the access token was revoked')
  if (row.expires_at <= clock.now().toISOString()) throw invalidToken('the access token has expired')
  return {
    tokenId: row.id,
    familyId: row.family_id,
    clientId: row.client_id,
    scope: row.scope,
    user: row.user_id && row.email && row.role && row.created_at
      ? userRecord({ id: row.user_id, email: row.email, role: row.role, first_name: row.first_name, last_name: row.last_name, created_at: row.created_at })
      : null
  }
}
