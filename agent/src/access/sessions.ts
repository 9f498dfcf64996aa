// The installer's sessions (a cookie after signing in with the local password) and the count of
// sign-in attempts per client address. Both live in memory only: a restart ends every session, and
// the password's generation ends them sooner when the password is replaced.
import { createHash, randomBytes } from 'node:crypto'
import type { Clock } from '../clock.js'

export const SESSION_COOKIE = 'club_agent_session'

const digest = (token: string) => createHash('sha256').update(token).digest('base64')

interface Session {
  generation: string
  expiresAt: number
}

export interface SessionStoreOptions {
  clock: Clock
  ttlMs: number
  /** Beyond this many live sessions the oldest is dropped, so sign-ins cannot grow memory without end. */
  maxSessions?: number
}

export class SessionStore {
  // Keyed by the token's SHA-256: a heap dump shows no usable cookie.
  private readonly sessions = new Map<string, Session>()

  constructor(private readonly options: SessionStoreOptions) {}

  create(generation: string): { token: string; maxAgeSeconds: number } {
    const now = this.options.clock.now().getTime()
    this.prune(now)
    const max = this.options.maxSessions ?? 50
    while (this.sessions.size >= max) this.sessions.delete(this.sessions.keys().next().value!)
    const token = randomBytes(32).toString('base64url')
    this.sessions.set(digest(token), { generation, expiresAt: now + this.options.ttlMs })
    return { token, maxAgeSeconds: Math.floor(this.options.ttlMs / 1000) }
  }

  /** Whether `token` is a live session made under the password generation now in force. */
  check(token: string, generation: string | undefined): boolean {
    const key = digest(token)
    const session = this.sessions.get(key)
    if (!session) return false
    if (session.expiresAt <= this.options.clock.now().getTime() || session.generation !== generation) {
      this.sessions.delete(key)
      return false
    }
    return true
  }

  end(token: string): void {
    this.sessions.delete(digest(token))
  }

  private prune(now: number): void {
    for (const [key, session] of this.sessions) if (session.expiresAt <= now) this.sessions.delete(key)
  }
}

export type AttemptDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number }

export interface SignInAttemptsOptions {
  clock: Clock
  maxAttempts: number
  windowMs: number
  /** Addresses remembered at once; the oldest window is forgotten first. */
  maxAddresses?: number
}

/** A fixed window per client address: `maxAttempts` sign-ins, then 429 until the window ends. */
export class SignInAttempts {
  private readonly windows = new Map<string, { start: number; count: number }>()

  constructor(private readonly options: SignInAttemptsOptions) {}

  /** Counts one attempt from `address`; refuses it, with the wait, when it is one too many. */
  take(address: string): AttemptDecision {
    const { clock, maxAttempts, windowMs } = this.options
    const now = clock.now().getTime()
    let window = this.windows.get(address)
    if (!window || now - window.start >= windowMs) {
      this.windows.delete(address)
      if (this.windows.size >= (this.options.maxAddresses ?? 1000)) this.windows.delete(this.windows.keys().next().value!)
      window = { start: now, count: 0 }
      this.windows.set(address, window)
    }
    if (window.count >= maxAttempts) return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((window.start + windowMs - now) / 1000)) }
    window.count++
    return { allowed: true }
  }

  /** A successful sign-in forgets the address's earlier attempts. */
  reset(address: string): void {
    this.windows.delete(address)
  }
}

/** The value of one cookie in a Cookie header (RFC 6265 section 5.4), or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=')
    if (eq > 0 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim()
  }
  return undefined
}

/**
 * The session cookie. HttpOnly (no script reads it) and SameSite=Strict (no other site's page can
 * make the browser send it). Not Secure: the box serves plain http on the venue's LAN, and a Secure
 * cookie would never be sent back over it.
 */
export function sessionCookie(token: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${token}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict`
}

export function clearedSessionCookie(): string {
  return `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict`
}
