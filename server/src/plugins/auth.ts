// Who is calling: Bearer access tokens (RFC 6750) and API keys (`x-api-key`), the role checks
// routes declare, and a token's scopes against those its route's contract accepts (`api` when it
// names none). Routes opt in with `onRequest: app.auth.bearer({ roles: ['admin'] })`: as an
// onRequest hook the guard answers 401/403 before the body is read or validated.
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { SecurityRequirement, UserRole } from '@club/contract'
import { authenticateApiKey } from '../api-keys/service.js'
import { BadRequestError, ForbiddenError, UnauthorizedError } from '../errors.js'
import { acceptedScopes, checkScope, hasScope } from '../oauth2/scopes.js'
import { authenticateAccessToken } from '../oauth2/tokens.js'
import { authenticateDeviceToken } from '../replay-servers/service.js'
import { authenticateGuest, guestSettings, isGuestToken } from '../replays/guests.js'
import type { UserRecord } from '../users/service.js'

/** The signed-in user, read with the credential in the same query. */
export type AuthenticatedUser = UserRecord

export type Principal =
  | { kind: 'user'; via: 'bearer'; user: AuthenticatedUser; tokenId: string; familyId: string; clientId: string | null; scope: string }
  | { kind: 'user'; via: 'api-key'; user: AuthenticatedUser; apiKeyId: string }
  | { kind: 'client'; via: 'bearer'; clientId: string; tokenId: string; scope: string }
  | { kind: 'device'; via: 'device-token'; replayServerId: string; deviceId: string; areaId: string }
  /** A player without an account on a court page (REPLAYS_GUEST): the replay routes only. */
  | { kind: 'guest'; via: 'guest-token'; guestId: string }

export interface GuardOptions {
  /** Roles allowed; any signed-in user when absent. */
  roles?: UserRole[]
}

export interface Auth {
  bearer(options?: GuardOptions): onRequestAsyncHookHandler
  apiKeyOrBearer(options?: GuardOptions): onRequestAsyncHookHandler
  /** An approved recording box's access token as Bearer (the replay-server status answer gives it). */
  device(): onRequestAsyncHookHandler
  /**
   * A court page guest's token (REPLAYS_GUEST, told apart by its prefix), or whatever apiKeyOrBearer
   * admits: the replay routes a player uses with or without an account.
   */
  playerOrGuest(): onRequestAsyncHookHandler
}

declare module 'fastify' {
  interface FastifyInstance {
    auth: Auth
  }
  interface FastifyRequest {
    principal: Principal | null
  }
}

/** The signed-in user of a request a guard has passed, as their record says (users/current shows it). */
export function signedInUser(request: FastifyRequest): AuthenticatedUser {
  const principal = request.principal
  if (!principal || principal.kind !== 'user') throw new ForbiddenError('this operation needs a user, not a client token')
  return principal.user
}

/**
 * The signed-in user of a request a guard has passed, as the services see them: with a token narrower
 * than `api` (read, replays, profile: a web view, a partner's app), a staff member or admin acts as a
 * member. Staff powers on the routes every user shares (listing another member's replays, orders or
 * packages, asking for older footage) and the limits only members have (the replay rate limits) are
 * decided by the role, so the scope has to reach them through it: branch on this, never on the
 * record's role. The staff and admin routes themselves need `api` (checkTokenScope).
 */
export function currentUser(request: FastifyRequest): AuthenticatedUser {
  const user = signedInUser(request)
  const principal = request.principal!
  if (principal.via === 'bearer' && user.role !== 'member' && !hasScope(principal.scope, 'api')) return { ...user, role: 'member' }
  return user
}

/** The recording box app.auth.device() admitted (its record's id). */
export function currentDevice(request: FastifyRequest): string {
  const principal = request.principal
  if (principal?.kind !== 'device') throw new ForbiddenError("this operation needs a recording box's token")
  return principal.replayServerId
}

/** The Bearer token of a request: undefined when there is no Authorization header at all. */
export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization
  if (header === undefined) return undefined
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header)
  if (!match) throw new UnauthorizedError('the Authorization header must be "Bearer <token>"', 'Bearer error="invalid_request"')
  return match[1]
}

/**
 * Two credentials on one request are refused rather than one silently ignored (RFC 6750 section 2:
 * a client must not use more than one method): a garbage key beside a good token is a client bug
 * the caller should hear about, and which of the two was meant is not ours to guess.
 */
function oneCredential(request: FastifyRequest): void {
  if (request.headers['x-api-key'] !== undefined && request.headers.authorization !== undefined) {
    throw new BadRequestError('send one credential: an x-api-key or an Authorization header, not both')
  }
}

/**
 * A token from the token endpoint is held to its scopes; which scopes a route accepts is read from its
 * contract's security (acceptedScopes). API keys are `api`: a key is made by its user for an
 * integration of their own, and carries no scope to narrow (docs/integrating.md, "Scopes").
 */
function checkTokenScope(request: FastifyRequest, principal: Principal, options: GuardOptions): void {
  if (principal.via !== 'bearer') return
  const staffOnly = options.roles !== undefined && !options.roles.includes('member')
  const security = request.routeOptions.schema?.security as SecurityRequirement[] | undefined
  checkScope(principal.scope, acceptedScopes(security, request.method, staffOnly))
}

function checkRole(principal: Principal, options: GuardOptions): void {
  if (!options.roles) return
  if (principal.kind !== 'user') throw new ForbiddenError(`this operation needs a user, not a ${principal.kind} token`)
  if (!options.roles.includes(principal.user.role)) {
    throw new ForbiddenError(`this operation needs the role ${options.roles.join(' or ')}`)
  }
}

export default fp(
  async function auth(app: FastifyInstance) {
    app.decorateRequest('principal', null)

    async function fromBearer(request: FastifyRequest): Promise<Principal> {
      const token = bearerToken(request)
      if (token === undefined) throw new UnauthorizedError('authentication is required', 'Bearer')
      const p = await authenticateAccessToken(app.db, token, app.clock)
      return p.user
        ? { kind: 'user', via: 'bearer', user: p.user, tokenId: p.tokenId, familyId: p.familyId, clientId: p.clientId, scope: p.scope }
        : { kind: 'client', via: 'bearer', clientId: p.clientId ?? '', tokenId: p.tokenId, scope: p.scope }
    }

    async function fromApiKeyOrBearer(request: FastifyRequest): Promise<Principal> {
      const apiKey = request.headers['x-api-key']
      if (apiKey !== undefined) {
        if (typeof apiKey !== 'string' || apiKey === '') throw new UnauthorizedError('the x-api-key header is empty', 'ApiKey')
        const p = await authenticateApiKey(app.db, apiKey)
        return { kind: 'user', via: 'api-key', user: p.user, apiKeyId: p.apiKeyId }
      }
      if (request.headers.authorization !== undefined) return fromBearer(request)
      throw new UnauthorizedError('authentication is required: send an x-api-key or a Bearer token', 'Bearer')
    }

    app.decorate('auth', {
      bearer(options: GuardOptions = {}) {
        return async function bearerGuard(request) {
          oneCredential(request)
          const principal = await fromBearer(request)
          checkRole(principal, options)
          checkTokenScope(request, principal, options)
          request.principal = principal
        }
      },
      apiKeyOrBearer(options: GuardOptions = {}) {
        return async function apiKeyOrBearerGuard(request) {
          oneCredential(request)
          const principal = await fromApiKeyOrBearer(request)
          checkRole(principal, options)
          checkTokenScope(request, principal, options)
          request.principal = principal
        }
      },
      playerOrGuest() {
        return async function playerOrGuestGuard(request) {
          oneCredential(request)
          const token = request.headers['x-api-key'] === undefined ? bearerToken(request) : undefined
          const principal: Principal =
            token !== undefined && isGuestToken(token)
              ? { kind: 'guest', via: 'guest-token', guestId: await authenticateGuest(app.db, token, app.clock, guestSettings(app.config)) }
              : await fromApiKeyOrBearer(request)
          checkTokenScope(request, principal, {})
          request.principal = principal
        }
      },
      device() {
        return async function deviceGuard(request) {
          oneCredential(request)
          const token = bearerToken(request)
          if (token === undefined) throw new UnauthorizedError('a device access token is required', 'Bearer')
          const device = await authenticateDeviceToken(app.db, token)
          request.principal = { kind: 'device', via: 'device-token', ...device }
        }
      }
    })
  },
  { name: 'auth', dependencies: ['services'] }
)
