// A call from the server to a box's local API, at the serverUrl the box reported, with the box's own
// access token (derived, never stored: see deviceAccessToken). The token goes in the Authorization
// header only; it is never in a URL, a log line or an answer, and never follows a redirect (one would
// be a box misconfigured or impersonated).
import { deviceAccessToken } from './service.js'

export interface BoxRow {
  id: string
  server_id_hash: string
  token_generation: number
  server_url: string
}

/** The URL of `path` (relative, e.g. `cameras/a/snapshot`) on the box's local API. */
export function boxUrl(row: Pick<BoxRow, 'server_url'>, path: string): URL {
  return new URL(path, row.server_url.endsWith('/') ? row.server_url : `${row.server_url}/`)
}

/** Fetches `url` on the box with its token, bounded by `timeoutMs`; network failures are thrown as fetch throws them. */
export function callBox(tokenKey: string, row: BoxRow, url: URL, init: { method?: string; accept?: string; timeoutMs: number }): Promise<Response> {
  return fetch(url, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${deviceAccessToken(tokenKey, row)}`, ...(init.accept ? { accept: init.accept } : {}) },
    redirect: 'manual',
    signal: AbortSignal.timeout(init.timeoutMs)
  })
}
