// A call from the server to a box's local API, at the serverUrl the box reported, with the box's own
// access token (derived, never stored: see deviceAccessToken). Every box, and anyone holding a box's
// token, may report any serverUrl, so the URL alone is never trusted: the server calls only an
// address the box could own, the one its status polls come from as the server saw it (pollAddressOf:
// never an address the box wrote in a header itself) or one inside BOX_NETWORKS (boxes behind NAT or
// a VPN). Link-local, unspecified and multicast addresses are never called, and loopback only for a
// box whose polls come straight from loopback (no proxy between), never at the server's own port.
// The host is resolved here (c-ares, cancellable; a literal address without DNS) and the connection
// made to exactly the address that was checked, so DNS cannot swap it in between. The token goes in the Authorization header only; it is never in a
// URL, a log line or an answer. No redirect is followed, the whole call is bounded by a timeout and
// a size, and whatever goes wrong the caller learns only that the box failed or was too slow, never
// the remote text or the socket's error (which would make the server a scanner of the networks it
// sees).
import { Resolver } from 'node:dns/promises'
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { BlockList, isIP } from 'node:net'
import { parseBoxNetworks, type Config, type parseTrustProxy } from '../config.js'
import { deviceAccessToken } from './service.js'

export interface BoxRow {
  id: string
  server_id_hash: string
  token_generation: number
  server_url: string
  /** The address the box's polls come from; null until it polled. */
  poll_address: string | null
}

/** The look-ups a call makes for a hostname: c-ares by default (tests hand in their own answers). */
export type BoxResolver = Pick<Resolver, 'resolve4' | 'resolve6' | 'cancel'>

export interface BoxCallDeps {
  tokenKey: string
  timeoutMs: number
  /** BOX_NETWORKS (parseBoxNetworks). */
  boxNetworks: BlockList
  /** PORT: the server never calls itself on loopback. */
  ownPort: number
  /** Makes the resolver for one call; default a c-ares Resolver bounded by the call's timeout. */
  resolver?: (timeoutMs: number) => BoxResolver
}

/** What every call to a box needs, from the settings: both call sites take it from here. */
export function boxCallDeps(config: Pick<Config, 'REPLAY_SNAPSHOT_TIMEOUT_MS' | 'BOX_NETWORKS' | 'PORT'>, tokenKey: string): BoxCallDeps {
  return { tokenKey, timeoutMs: config.REPLAY_SNAPSHOT_TIMEOUT_MS, boxNetworks: parseBoxNetworks(config.BOX_NETWORKS), ownPort: config.PORT }
}

/** What pollAddressOf reads of a request: Fastify's request has all of it. */
export interface PollSource {
  ip: string
  headers: IncomingHttpHeaders
  socket: { remoteAddress?: string | undefined }
}

/**
 * The address a box's poll (or registration) comes from, as recorded for the calls to the box. It is
 * the plain address only when the server can vouch for it: the TCP peer of a request without any
 * X-Forwarded-For or Forwarded header, or the address that proxies named by TRUST_PROXY (a hop count
 * or their addresses) report. Otherwise, with TRUST_PROXY=true (the leftmost X-Forwarded-For entry,
 * which the box writes itself) or a forwarding header the server does not trust (the peer is then
 * the proxy, not the box), the address is recorded marked "(forwarded, not verified)": admins still
 * see it, and it authorises no call (such boxes need BOX_NETWORKS). Loopback and the other special
 * addresses count only as the TCP peer itself, with no forwarding header: every box behind a local
 * reverse proxy would otherwise poll "from" the server's own machine.
 */
export function pollAddressOf(request: PollSource, trust: ReturnType<typeof parseTrustProxy>): string {
  const ip = request.ip
  const forwarded = request.headers['x-forwarded-for'] !== undefined || request.headers.forwarded !== undefined
  const vouched =
    isIP(ip) !== 0 &&
    (!forwarded ? ip === request.socket.remoteAddress : trust !== true && trust !== false && !isSpecial(plainAddress(ip)) && !isLoopback(plainAddress(ip)))
  return vouched ? ip : `${ip.slice(0, 45)} (forwarded, not verified)`
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

// Never a box, whatever BOX_NETWORKS or the polls say: link-local (cloud metadata at 169.254.169.254),
// unspecified ("this host"), multicast and broadcast, the IPv4 reserved block.
const NEVER_A_BOX = new BlockList()
NEVER_A_BOX.addSubnet('169.254.0.0', 16, 'ipv4')
NEVER_A_BOX.addSubnet('0.0.0.0', 8, 'ipv4')
NEVER_A_BOX.addSubnet('224.0.0.0', 4, 'ipv4')
NEVER_A_BOX.addSubnet('240.0.0.0', 4, 'ipv4')
NEVER_A_BOX.addSubnet('fe80::', 10, 'ipv6')
NEVER_A_BOX.addAddress('::', 'ipv6')
NEVER_A_BOX.addSubnet('ff00::', 8, 'ipv6')

function isSpecial(address: string): boolean {
  const family = isIP(address)
  return family !== 0 && NEVER_A_BOX.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

/**
 * Whether the server may connect to `address` for a box whose polls come from `pollAddress` (as
 * pollAddressOf records it). Loopback only for a box whose polls come straight from loopback: it runs
 * on the server's own machine, and any loopback address is the box's (callBox also keeps the server's
 * own port out). Special addresses never, BOX_NETWORKS or not.
 */
export function mayCall(address: string, pollAddress: string | null, boxNetworks: BlockList): boolean {
  const to = plainAddress(address)
  const family = isIP(to)
  if (family === 0 || isSpecial(to)) return false
  const from = pollAddress === null ? null : plainAddress(pollAddress)
  if (isLoopback(to)) return from !== null && isLoopback(from)
  if (to === from) return true
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
  const hostname = url.hostname.replace(/^\[|\]$/g, '')
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80))
  const address = await allowedAddress(hostname, row.poll_address, deps, signal)
  if (isLoopback(address) && port === deps.ownPort) throw new BoxCallError('not-the-box', `${address}:${port} is the server itself`)
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise<BoxAnswer>((resolve, reject) => {
    const req = send(
      {
        // The checked address itself: no second look-up that DNS could answer otherwise.
        host: address,
        port,
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
async function allowedAddress(host: string, pollAddress: string | null, deps: BoxCallDeps, signal: AbortSignal): Promise<string> {
  // localhost names are loopback without asking DNS (RFC 6761), as /etc/hosts says on every box.
  const local = host.toLowerCase() === 'localhost' || host.toLowerCase().endsWith('.localhost')
  const addresses = isIP(host) !== 0 ? [host] : local ? ['127.0.0.1', '::1'] : await resolveHost(host, deps, signal)
  const allowed = addresses.find((a) => mayCall(a, pollAddress, deps.boxNetworks))
  if (allowed === undefined) {
    throw new BoxCallError('not-the-box', `${addresses.join(', ')} is neither the address the box polls from (${pollAddress ?? 'none yet'}) nor in BOX_NETWORKS`)
  }
  return plainAddress(allowed)
}

/**
 * A hostname's IPv4 and IPv6 addresses, by DNS through c-ares: unlike dns.lookup it takes no libuv
 * thread pool slot that a slow name server could hold, and the call's timeout cancels it. (It reads
 * no /etc/hosts: a box's serverUrl names a host DNS knows, localhost, or an address.)
 */
async function resolveHost(host: string, deps: BoxCallDeps, signal: AbortSignal): Promise<string[]> {
  const resolver = (deps.resolver ?? ((timeout) => new Resolver({ timeout, tries: 1 })))(deps.timeoutMs)
  const cancel = () => resolver.cancel()
  signal.addEventListener('abort', cancel, { once: true })
  try {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)])
    const addresses = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])]
    if (signal.aborted) throw new BoxCallError('timeout', `cannot resolve the box's host within ${deps.timeoutMs} ms`)
    if (addresses.length === 0) {
      const err = v4.status === 'rejected' ? (v4.reason as NodeJS.ErrnoException) : undefined
      throw new BoxCallError('unreachable', `cannot resolve the box's host: ${err?.code ?? 'no address'}`)
    }
    return addresses
  } finally {
    signal.removeEventListener('abort', cancel)
  }
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
