// What a token's scopes let it do (PROTOCOLS.md). Granting compares scope strings as RFC 6749 section
// 3.3 does; using a token compares its scopes with the ones the route's contract names in its security.
import { oauth2Scopes, type OAuth2Scope, type SecurityRequirement } from '@club/contract'
import { BadRequestError, HttpError, OAuth2Error, quote } from '../errors.js'

export const SCOPES = Object.keys(oauth2Scopes) as OAuth2Scope[]

const isScope = (value: string): value is OAuth2Scope => (SCOPES as string[]).includes(value)

/** Space-delimited scope → its distinct tokens (RFC 6749 section 3.3). */
export function parseScope(scope: string | undefined): string[] | undefined {
  if (scope === undefined) return undefined
  return [...new Set(scope.split(' ').filter(Boolean))]
}

/** The scopes asked for that are unknown or not in `allowed`: the ones to refuse. */
export function scopesBeyond(asked: string[], allowed: readonly string[]): string[] {
  return asked.filter((scope) => !isScope(scope) || !allowed.includes(scope))
}

/**
 * Scopes as an OAuth2 error may name them: error_description allows only %x20-21 / %x23-5B / %x5D-7E
 * (RFC 6749 section 5.2), so anything else is dropped, and a long one is cut rather than echoed.
 */
function describeScopes(scopes: string[]): string {
  const text = scopes.join(' ').replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, '')
  return text.length > 40 ? `${text.slice(0, 40)}... (${text.length} characters)` : text
}

/** A client's registered scopes: each one of the club's, at least one. */
export function checkRegisteredScopes(scopes: string[]): OAuth2Scope[] {
  const unknown = scopes.filter((scope) => !isScope(scope))
  if (unknown.length > 0) {
    throw new BadRequestError(`scope ${quote(unknown.join(' '), { limit: 40 })} is not one of ${SCOPES.join(', ')}`)
  }
  return scopes as OAuth2Scope[]
}

/** The scope to grant: what was asked for, if within what is allowed; all that is allowed otherwise. */
export function grantScope(requested: string | undefined, allowed: readonly string[], fallback: readonly string[] = allowed): string {
  const asked = parseScope(requested)
  if (!asked || asked.length === 0) return fallback.join(' ')
  const extra = scopesBeyond(asked, allowed)
  if (extra.length > 0) throw new OAuth2Error('invalid_scope', `scope ${describeScopes(extra)} is not allowed`)
  return asked.join(' ')
}

/**
 * The scopes any one of which lets a token call a route, widest first: `api`, the narrower ones the
 * contract's security names (`scopedSecurity`), and `read` for a GET or HEAD that is not for staff.
 * A route whose contract names none needs `api`: a new route is closed to narrow tokens until it says so.
 */
export function acceptedScopes(security: readonly SecurityRequirement[] | undefined, method: string, staffOnly: boolean): OAuth2Scope[] {
  const named = (security ?? []).flatMap((requirement) => requirement.oauth2 ?? []).filter(isScope)
  // Staff and admin routes need `api` whatever they declare: a read-only token is no front desk.
  if (staffOnly) return ['api']
  const accepted = new Set<OAuth2Scope>(['api', ...named])
  if (method === 'GET' || method === 'HEAD') accepted.add('read')
  return [...accepted]
}

/** RFC 6750 section 3.1: a valid token used beyond its scope. The body's `error` is the RFC's code. */
export class InsufficientScopeError extends HttpError {
  override name = 'InsufficientScopeError'
  readonly code = 'insufficient_scope'
  constructor(accepted: OAuth2Scope[], held: string) {
    // The header names the narrowest scope that would do; the message lists every one that would.
    const needed = accepted[accepted.length - 1]
    super(
      403,
      `this operation needs a token with the scope ${accepted.join(' or ')}; this token has ${quote(held || '(none)', { limit: 60 })}`,
      { 'www-authenticate': `Bearer error="insufficient_scope", scope="${needed}"` }
    )
  }
}

/** Whether a token's space-delimited scope holds `scope`. */
export function hasScope(held: string, scope: OAuth2Scope): boolean {
  return (parseScope(held) ?? []).includes(scope)
}

/** Refuses a token none of whose scopes is accepted by the route. */
export function checkScope(held: string, accepted: OAuth2Scope[]): void {
  const scopes = parseScope(held) ?? []
  if (!scopes.some((scope) => (accepted as string[]).includes(scope))) throw new InsufficientScopeError(accepted, held)
}
