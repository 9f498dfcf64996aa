// Typed HTTP client for the server's device routes. Answers are checked against the contract's
// schemas when they arrive: a shape the agent does not understand is the server's fault, not a crash.
import {
  ReplayServerRegistration,
  ReplayServerStatusAnswer,
  replayServerDeviceRoutes,
  type ReplayServerRegistrationRequest,
  type ReplayServerStatusQuery
} from '@club/contract'
import { Value } from 'typebox/value'

/** The server could not be reached or answered in a way that calls for backing off. */
export class ServerUnavailableError extends Error {
  override name = 'ServerUnavailableError'
  constructor(message: string, readonly statusCode?: number) {
    super(message)
  }
}

/** The server refused the request as malformed; retrying the same request will not help. */
export class RequestRefusedError extends Error {
  override name = 'RequestRefusedError'
  constructor(message: string, readonly statusCode: number) {
    super(message)
  }
}

export type StatusResult =
  | { kind: 'status'; answer: ReplayServerStatusAnswer; etag?: string }
  | { kind: 'not-modified' }
  | { kind: 'unknown-server' }
  | { kind: 'rate-limited'; retryAfterSeconds: number }

export type RegisterResult =
  | { kind: 'registered'; registration: ReplayServerRegistration }
  | { kind: 'rate-limited'; retryAfterSeconds: number }

export interface ControlClientOptions {
  baseUrl: string
  timeoutMs: number
  fetch?: typeof fetch
}

export class ControlClient {
  private readonly fetch: typeof fetch

  constructor(private readonly options: ControlClientOptions) {
    this.fetch = options.fetch ?? fetch
  }

  /** The server's origin, as a key proof names it (its audience). */
  get origin(): string {
    return new URL(this.options.baseUrl).origin
  }

  async register(body: ReplayServerRegistrationRequest): Promise<RegisterResult> {
    const res = await this.call(replayServerDeviceRoutes.register.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body)
    })
    if (res.status === 429) return { kind: 'rate-limited', retryAfterSeconds: retryAfter(res) }
    const json = await answerOf(res, 'registration')
    if (!Value.Check(ReplayServerRegistration, json)) throw new ServerUnavailableError('the registration answer does not match the contract')
    return { kind: 'registered', registration: json }
  }

  async status(serverId: string, query: ReplayServerStatusQuery, etag?: string): Promise<StatusResult> {
    const path = replayServerDeviceRoutes.status.url.replace(':serverId', encodeURIComponent(serverId))
    const search = new URLSearchParams(
      Object.entries(query).flatMap(([name, value]) => (typeof value === 'string' || typeof value === 'number' ? [[name, String(value)] as [string, string]] : []))
    )
    const res = await this.call(`${path}?${search}`, { method: 'GET', headers: etag ? { 'if-none-match': etag } : {} })
    if (res.status === 304) return { kind: 'not-modified' }
    if (res.status === 404) return { kind: 'unknown-server' }
    if (res.status === 429) return { kind: 'rate-limited', retryAfterSeconds: retryAfter(res) }
    const json = await answerOf(res, 'status')
    if (!Value.Check(ReplayServerStatusAnswer, json)) throw new ServerUnavailableError('the status answer does not match the contract')
    return { kind: 'status', answer: json, etag: res.headers.get('etag') ?? undefined }
  }

  private call(path: string, init: RequestInit): Promise<Response> {
    return serverCall(this.options, path, init)
  }
}

/**
 * One request to the server at `baseUrl` + an absolute route (a base URL with a path prefix, behind
 * a proxy, keeps its prefix), bounded by `timeoutMs`; a network failure is ServerUnavailableError.
 */
export async function serverCall(
  options: { baseUrl: string; timeoutMs: number; fetch?: typeof fetch },
  path: string,
  init: RequestInit
): Promise<Response> {
  const url = `${options.baseUrl.replace(/\/$/, '')}${path}`
  try {
    return await (options.fetch ?? fetch)(url, { ...init, signal: AbortSignal.timeout(options.timeoutMs) })
  } catch (err) {
    throw new ServerUnavailableError(`cannot reach the server: ${(err as Error).message}`)
  }
}

/**
 * A 200's JSON body; a 5xx or 408 is the server being unavailable (try later), any other answer a
 * refusal carrying the server's message.
 */
export async function answerOf(res: Response, what: string): Promise<unknown> {
  let body: unknown
  try {
    body = await res.json()
  } catch {
    body = undefined
  }
  if (res.status >= 500 || res.status === 408) throw new ServerUnavailableError(`${what} answered ${res.status}`, res.status)
  if (res.status !== 200) {
    const message = (body as { message?: string } | undefined)?.message ?? ''
    throw new RequestRefusedError(`${what} answered ${res.status} ${message}`.trim(), res.status)
  }
  return body
}

function retryAfter(res: Response): number {
  const value = res.headers.get('retry-after')
  const seconds = Number(value)
  if (Number.isFinite(seconds) && seconds >= 0) return seconds
  const date = value ? Date.parse(value) : NaN
  return Number.isNaN(date) ? 60 : Math.max(0, Math.ceil((date - Date.now()) / 1000))
}
