// Every request has an id: the one a trusted proxy sent in x-request-id, or a new UUID. Fastify puts
// it in every log line of the request (reqId); this plugin sends it back on every answer, errors
// included, so a user's report and the log line meet.
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { BlockList, isIPv4 } from 'node:net'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/** What a proxy's id may look like: short and printable, so it cannot forge or flood a log line. */
const SAFE_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/

/**
 * Fastify's genReqId for a TRUST_PROXY setting (as parseTrustProxy answers it). The id sent by the
 * peer is taken only when the peer itself is a trusted proxy: a client talking straight to the
 * server could otherwise choose the id its requests are logged under.
 */
export function requestIdGenerator(trustProxy: boolean | number | string[]): (req: IncomingMessage) => string {
  let trusted: (address: string | undefined) => boolean
  if (trustProxy === true || (typeof trustProxy === 'number' && trustProxy > 0)) {
    trusted = () => true
  } else if (Array.isArray(trustProxy) && trustProxy.length > 0) {
    const list = new BlockList()
    for (const entry of trustProxy) {
      const [address, bits] = entry.split('/') as [string, string | undefined]
      const type = isIPv4(address) ? 'ipv4' : 'ipv6'
      if (bits !== undefined) list.addSubnet(address, Number(bits), type)
      else list.addAddress(address, type)
    }
    trusted = (address) => {
      if (!address) return false
      const plain = address.startsWith('::ffff:') ? address.slice(7) : address
      return list.check(plain, isIPv4(plain) ? 'ipv4' : 'ipv6')
    }
  } else {
    trusted = () => false
  }
  return (req) => {
    const sent = req.headers['x-request-id']
    if (typeof sent === 'string' && SAFE_ID.test(sent) && trusted(req.socket?.remoteAddress)) return sent
    return randomUUID()
  }
}

export default fp(
  async function requestId(app: FastifyInstance) {
    // onRequest, first of all hooks: an answer given by any later hook (401, 429) carries it too.
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-request-id', request.id)
      done()
    })
  },
  { name: 'request-id' }
)
