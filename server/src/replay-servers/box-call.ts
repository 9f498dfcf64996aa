// A call from the server to a box's local API, at the serverUrl the box reported, with the box's own
// access token (derived, never stored: see deviceAccessToken). Every box, and anyone holding a box's
// token, may report any serverUrl, so the URL alone is never trusted: the server calls only an
// address the box could own, the one its status polls come from (any loopback address for a box
// polling from loopback, on the server's own machine) or one inside BOX_NETWORKS (boxes behind NAT or
// a VPN). The host is resolved here and the connection made to exactly the address that was checked,
// so DNS cannot swap it in between. The token goes in the Authorization header only; it is never in a
// URL, a log line or an answer. No redirect is followed, the whole call is bounded by a timeout and
// a size, and whatever goes wrong the caller learns only that the box failed or was too slow, never
// the remote text or the socket's error (which would make the server a scanner of the networks it
// sees).
import { lookup } from 'node:dns/promises'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, type BlockList } from 'node:net'
import { parseBoxNetworks, type Config } from '../config.js'
import { deviceAccessToken } from './service.js'

export interface BoxRow {
  id: string
  server_id_hash: string
  token_generation: number
  server_url: string
  /** The address the box's polls come from; null until it polled. */
  poll_address: string | null
}

export interface BoxCallDeps {
  tokenKey: string
  timeoutMs: number
  /** BOX_NETWORKS (parseBoxNetworks). */
  boxNetworks: BlockList
}

/** What every call to a box needs, from the settings: both call sites take it from here. */
export function boxCallDeps(config: Pick<Config, 'REPLAY_SNAPSHOT_TIMEOUT_MS' | 'BOX_NETWORKS'>, tokenKey: string): BoxCallDeps {
  return { tokenKey, timeoutMs: config.REPLAY_SNAPSHOT_TIMEOUT_MS, boxNetworks: parseBoxNetworks(config.BOX_NETWORKS) }
}

/** Why a call to a box failed: for the log only, never for an answer. */
export class BoxCallError extends Error {
  override name = 'BoxCallError'
  constructor(
    readonly reason: 'not-the-box' | 'unreachable' | 'timeout' | 'too-large' | 'bad-url',
    readonly detail: string
  ) {
    super(`${reason}: ${detail}`)
  }
}

export interface BoxAnswer {
  status: number
  contentType: string | undefined
  body: Buffer
}

/** The URL of `path` (relative, e.g. `cameras/a/snapshot`) on the box's local API. */
export function boxUrl(row: Pick<BoxRow, 'server_url'>, path: string): URL {
  return new URL(path, row.server_url.endsWith('/') ? row.server_url : `${row.server_url}/`)
}

/** An address as compared: an IPv4-mapped IPv6 address (::ffff:10.0.0.1) is the IPv4 address it maps. */
export function plainAddress(address: string): string {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (dotted) return dotted[1]!
  // The same in hex, as the URL parser writes it: [::ffff:127.0.0.1] becomes [::ffff:7f00:1].
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address)
  if (hex) {
    const [high, low] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)]
    return [high >> 8, high & 255, low >> 8, low & 255].join('.')
  }
  return address.toLowerCase()
}

function isLoopback(address: string): boolean {
  return address === '::1' || (isIP(address) === 4 && address.startsWith('127.'))
}

/** Whether the server may connect to `address` for a box whose polls come from `pollAddress`. */
export function mayCall(address: string, pollAddress: string | null, boxNetworks: BlockList): boolean {
  const to = plainAddress(address)
  const family = isIP(to)
  if (family === 0) return false
  if (pollAddress !== null) {
    const from = plainAddress(pollAddress)
    if (to === from) return true
    // A box polling from loopback runs on the server's own machine: any of its loopback addresses is the box's.
    if (isLoopback(from) && isLoopback(to)) return true
  }
  return boxNetworks.check(to, family === 4 ? 'ipv4' : 'ipv6')
}

/**
 * Calls `path` on the box with its token; answers the box's status, content type and body (at most
 * `maxBytes`). Throws BoxCallError when the box's URL may not be called (before any connection),
 * cannot be reached, is too slow or sends too much.
 */
export async function callBox(
  deps: BoxCallDeps,
  row: BoxRow,
  path: string,
  init: { method?: 'GET' | 'POST'; accept?: string; maxBytes: number }
): Promise<BoxAnswer> {
  const signal = AbortSignal.timeout(deps.timeoutMs)
  let url: URL
  try {
    url = boxUrl(row, path)
  } catch {
    throw new BoxCallError('bad-url', 'the serverUrl is not a URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new BoxCallError('bad-url', `scheme ${url.protocol}`)
  if (url.username || url.password) throw new BoxCallError('bad-url', 'credentials in the serverUrl')
  const address = await allowedAddress(url.hostname.replace(/^\[|\]$/g, ''), row.poll_address, deps.boxNetworks, signal)
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  const hostname = url.hostname.replace(/^\[|\]$/g, '')
  return new Promise<BoxAnswer>((resolve, reject) => {
    const req = send(
      {
        // The checked address itself: no second look-up that DNS could answer otherwise.
        host: address,
        port: url.port || (url.protocol === 'https:' ? 443 : 80),
        path: `${url.pathname}${url.search}`,
        method: init.method ?? 'GET',
        headers: {
          host: url.host,
          authorization: `Bearer ${deviceAccessToken(deps.tokenKey, row)}`,
          ...(init.accept ? { accept: init.accept } : {})
        },
        // TLS checks the certificate against the name the box reported, not the address.
        ...(url.protocol === 'https:' && isIP(hostname) === 0 ? { servername: hostname } : {}),
        signal,
        agent: false
      },
      (res) => readAnswer(res, init.maxBytes, signal, deps.timeoutMs).then(resolve, reject)
    )
    req.on('error', (err) => reject(signal.aborted ? new BoxCallError('timeout', `no answer within ${deps.timeoutMs} ms`) : new BoxCallError('unreachable', (err as NodeJS.ErrnoException).code ?? err.message)))
    req.end()
  })
}

/** The first address `host` resolves to that the box may own, or BoxCallError('not-the-box'). */
async function allowedAddress(host: string, pollAddress: string | null, boxNetworks: BlockList, signal: AbortSignal): Promise<string> {
  let addresses: string[]
  if (isIP(host) !== 0) addresses = [host]
  else {
    try {
      const found = await Promise.race([
        lookup(host, { all: true, verbatim: true }),
        new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(new Error('look-up timed out')), { once: true }))
      ])
      addresses = found.map((a) => a.address)
    } catch (err) {
      throw new BoxCallError(signal.aborted ? 'timeout' : 'unreachable', `cannot resolve the box's host: ${(err as Error).message}`)
    }
  }
  const allowed = addresses.find((a) => mayCall(a, pollAddress, boxNetworks))
  if (allowed === undefined) {
    throw new BoxCallError('not-the-box', `${addresses.join(', ')} is neither the address the box polls from (${pollAddress ?? 'none yet'}) nor in BOX_NETWORKS`)
  }
  return plainAddress(allowed)
}

/** The answer's body, at most `maxBytes` (else BoxCallError('too-large')). */
function readAnswer(res: IncomingMessage, maxBytes: number, signal: AbortSignal, timeoutMs: number): Promise<BoxAnswer> {
  return new Promise((resolve, reject) => {
    const cut = () => reject(signal.aborted ? new BoxCallError('timeout', `no answer within ${timeoutMs} ms`) : new BoxCallError('unreachable', 'the answer was cut'))
    const chunks: Buffer[] = []
    let total = 0
    res.on('data', (chunk: Buffer) => {
      total += chunk.length
      if (total > maxBytes) {
        res.destroy()
        reject(new BoxCallError('too-large', `more than ${maxBytes} bytes`))
        return
      }
      chunks.push(chunk)
    })
    res.on('error', cut)
    // Closed before its end (the timeout, the box hanging up): the promise is settled by then otherwise.
    res.on('close', () => {
      if (!res.complete) cut()
    })
    res.on('end', () => {
      const type = res.headers['content-type']
      resolve({ status: res.statusCode ?? 0, contentType: typeof type === 'string' ? type : undefined, body: Buffer.concat(chunks) })
    })
  })
}
