// Where the server may send an integrator's events. An admin names any URL, so the URL is checked
// before it is stored and again before every attempt: only http(s), and only public addresses
// unless WEBHOOK_ALLOWED_NETWORKS lists the network (a receiver on the club's own LAN, or the tests'
// receiver on loopback). A hostname is resolved and every address it gives is checked; at delivery
// the connection goes to the address that was checked, so DNS cannot answer a public address to the
// check and a private one to the connection (rebinding).
import { lookup as dnsLookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'
import { BadRequestError, quote } from '../errors.js'
import { plainAddress } from '../replay-servers/box-call.js'

/** A hostname's addresses; dns.lookup by default (it reads /etc/hosts, so `localhost` is loopback). */
export type Lookup = (host: string) => Promise<string[]>

export const systemLookup: Lookup = async (host) => (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address)

// Not the public internet: private (RFC 1918, unique local), shared (CGNAT), loopback, link-local
// (cloud metadata at 169.254.169.254), unspecified, benchmarking, documentation, multicast, reserved.
const NOT_PUBLIC = new BlockList()
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4]
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv4')
}
// The IPv6 forms that carry an IPv4 address (IPv4-compatible ::a.b.c.d, IPv4-translated
// ::ffff:0:a.b.c.d, NAT64, 6to4, Teredo) are all refused, as deprecated or local, so that no spelling
// of 127.0.0.1 or 10.0.0.1 gets through; ::ffff:a.b.c.d is checked as the IPv4 address it maps.
for (const [network, prefix] of [
  ['::', 96],
  ['::ffff:0:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 32],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8]
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv6')
}

/** Whether events may be sent to `address`: a public one, or one inside `allowed`. */
export function mayDeliverTo(address: string, allowed: BlockList): boolean {
  const plain = plainAddress(address)
  const family = isIP(plain)
  if (family === 0) return false
  const type = family === 4 ? 'ipv4' : 'ipv6'
  return allowed.check(plain, type) || !NOT_PUBLIC.check(plain, type)
}

/** Why a URL may not be an endpoint's, for the 400 (`field` names it) or the attempt's record. */
export class EndpointUrlError extends Error {
  override name = 'EndpointUrlError'
}

/** The URL parsed, when its form may be an endpoint's (http or https, no credentials); no look-up. */
export function parseEndpointUrl(url: string): URL {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new EndpointUrlError(`${quote(url)} is not a URL`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new EndpointUrlError(`must be an http:// or https:// URL, not ${parsed.protocol}`)
  // A password in a URL ends up in every list of endpoints and every log that shows the URL.
  if (parsed.username || parsed.password) throw new EndpointUrlError('must not carry a user name or password')
  return parsed
}

const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, '')

/** Every address `url`'s host stands for (the host itself when it is an address). */
async function addressesOf(url: URL, lookup: Lookup): Promise<string[]> {
  const host = hostOf(url)
  if (isIP(host) !== 0) return [host]
  let addresses: string[]
  try {
    addresses = await lookup(host)
  } catch {
    addresses = []
  }
  if (addresses.length === 0) throw new EndpointUrlError(`host ${quote(host)} does not resolve`)
  return addresses
}

/**
 * Checks an endpoint URL an admin sends: a 400 naming `field` when it is not http(s) or any address
 * its host resolves to is private, loopback or link-local and not in WEBHOOK_ALLOWED_NETWORKS.
 */
export async function checkEndpointUrl(field: string, url: string, allowed: BlockList, lookup: Lookup): Promise<string> {
  try {
    const parsed = parseEndpointUrl(url)
    const refused = (await addressesOf(parsed, lookup)).filter((a) => !mayDeliverTo(a, allowed))
    if (refused.length > 0) {
      throw new EndpointUrlError(`host ${quote(hostOf(parsed))} is at ${refused.join(', ')}: private, loopback and link-local addresses are refused unless WEBHOOK_ALLOWED_NETWORKS lists them`)
    }
    return parsed.toString()
  } catch (err) {
    if (err instanceof EndpointUrlError) throw new BadRequestError(`${field} ${err.message}`)
    throw err
  }
}

/** The address an attempt connects to: the first one the host resolves to that may be delivered to, looked up now. */
export async function deliveryAddress(url: URL, allowed: BlockList, lookup: Lookup): Promise<string> {
  const addresses = await addressesOf(url, lookup)
  const address = addresses.find((a) => mayDeliverTo(a, allowed))
  if (address === undefined) throw new EndpointUrlError(`${addresses.join(', ')} is not an address events may be sent to (WEBHOOK_ALLOWED_NETWORKS)`)
  return plainAddress(address)
}
