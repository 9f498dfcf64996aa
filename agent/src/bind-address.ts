// Where the local API listens when httpHost is not set: on the address of the interface the box
// reaches the server through (the venue's network the server's calls come from), never on every
// interface. The choice is pure; finding the route is one UDP connect(), which sends no packet.
import { createSocket } from 'node:dgram'
import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'

export const FALLBACK_HOST = '127.0.0.1'

/**
 * The configured address when there is one; else the local address of the route to the server,
 * unless it is missing or a wildcard; else loopback only, which is safe and says so in the log.
 */
export function chooseHttpHost(configured: string | undefined, routeAddress: string | undefined): { host: string; reason: string } {
  if (configured) return { host: configured, reason: 'httpHost setting' }
  if (routeAddress && isIP(routeAddress) && routeAddress !== '0.0.0.0' && routeAddress !== '::') {
    return { host: routeAddress, reason: 'the interface that reaches the server' }
  }
  return { host: FALLBACK_HOST, reason: 'no route to the server could be found: loopback only' }
}

/** The local address the system would send from to reach `serverUrl`, or undefined. */
export async function addressTowards(serverUrl: string, timeoutMs = 2000): Promise<string | undefined> {
  let url: URL
  try {
    url = new URL(serverUrl)
  } catch {
    return undefined
  }
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80)
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1')
  let target: { address: string; family: number }
  try {
    target = await lookup(hostname)
  } catch {
    return undefined
  }
  const socket = createSocket(target.family === 6 ? 'udp6' : 'udp4')
  try {
    return await new Promise<string | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), timeoutMs)
      socket.once('error', () => {
        clearTimeout(timer)
        resolve(undefined)
      })
      // connect() on UDP only picks the route and the source address; nothing goes on the wire.
      socket.connect(port, target.address, () => {
        clearTimeout(timer)
        resolve(socket.address().address)
      })
    })
  } finally {
    socket.close()
  }
}
