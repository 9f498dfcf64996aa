// The signed-in user's session and every call the console makes: only the public API, with the
// user's Bearer token. The tokens live in sessionStorage (this tab only, gone when it closes), never in
// a URL; an expired access token is refreshed once with the refresh token; signing out revokes them.
import type { OAuth2AccessToken, Paged } from '@club/contract'

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

interface Tokens {
  accessToken: string
  refreshToken: string
}

const STORAGE_KEY = 'club.console.session'

/** The message of an error body (the platform's shape, or RFC 6749's inside it). */
async function errorOf(res: Response): Promise<ApiError> {
  let message = `${res.status} ${res.statusText}`
  try {
    const body = (await res.json()) as { message?: string; error_description?: string }
    message = body.error_description ?? body.message ?? message
  } catch {
    // Not JSON (a proxy's page): the status line says enough.
  }
  return new ApiError(res.status, message)
}

export class Session {
  private tokens: Tokens | null
  private refreshing?: Promise<boolean>
  /** Called when the session ends without the user asking (the refresh token was refused). */
  onExpired: () => void = () => {}

  constructor(private readonly storage: Storage) {
    try {
      this.tokens = JSON.parse(storage.getItem(STORAGE_KEY) ?? 'null') as Tokens | null
    } catch {
      this.tokens = null
    }
  }

  get signedIn(): boolean {
    return this.tokens !== null
  }

  private keep(tokens: Tokens | null): void {
    this.tokens = tokens
    if (tokens) this.storage.setItem(STORAGE_KEY, JSON.stringify(tokens))
    else this.storage.removeItem(STORAGE_KEY)
  }

  private async token(fields: Record<string, string>): Promise<Tokens> {
    const res = await fetch('/apis/v2/oauth2/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields)
    })
    if (!res.ok) throw await errorOf(res)
    const answer = (await res.json()) as OAuth2AccessToken
    return { accessToken: answer.access_token, refreshToken: answer.refresh_token }
  }

  async signIn(email: string, password: string): Promise<void> {
    this.keep(await this.token({ grant_type: 'password', username: email, password }))
  }

  /** One refresh at a time: calls failing together wait for the same new pair. */
  private refresh(): Promise<boolean> {
    const tokens = this.tokens
    if (!tokens) return Promise.resolve(false)
    this.refreshing ??= this.token({ grant_type: 'refresh_token', refresh_token: tokens.refreshToken })
      .then((fresh) => (this.keep(fresh), true))
      .catch(() => (this.keep(null), false))
      .finally(() => (this.refreshing = undefined))
    return this.refreshing
  }

  /** Ends the login on the server too; the local copy goes whatever the server answers. */
  async signOut(): Promise<void> {
    const tokens = this.tokens
    this.keep(null)
    if (!tokens) return
    await fetch('/apis/v2/oauth2/revoke', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tokens.refreshToken, token_type_hint: 'refresh_token' })
    }).catch(() => undefined)
  }

  /** A call to the API; answers the parsed body (null for 204) or throws an ApiError with the server's message. */
  async call<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    const res = await this.send(method, path, body, headers)
    return (res.status === 204 ? null : await res.json()) as T
  }

  /** A file the API answers (a court's sign), fetched with the token: a plain link could not carry it. */
  async file(path: string, accept: string): Promise<Blob> {
    return (await this.send('GET', path, undefined, { accept })).blob()
  }

  /** Sends with the access token, refreshing it once on a 401; a refusal is thrown as an ApiError. */
  private async send(method: string, path: string, body: unknown, headers: Record<string, string>): Promise<Response> {
    const send = () =>
      fetch(path, {
        method,
        headers: {
          ...headers,
          authorization: `Bearer ${this.tokens?.accessToken ?? ''}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {})
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {})
      })
    let res = await send()
    if (res.status === 401 && (await this.refresh())) res = await send()
    if (res.status === 401) {
      this.keep(null)
      this.onExpired()
    }
    if (!res.ok) throw await errorOf(res)
    return res
  }

  /** Every item of a paged list (boxes, areas, courts are few: at most a handful of pages). */
  async all<T>(path: string): Promise<T[]> {
    const items: T[] = []
    for (let page = 1; ; page++) {
      const separator = path.includes('?') ? '&' : '?'
      const answer = await this.call<Paged<T>>('GET', `${path}${separator}ipp=100&page=${page}`)
      items.push(...answer.items)
      if (answer.items.length === 0 || items.length >= answer._total) return items
    }
  }
}
