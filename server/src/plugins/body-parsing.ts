// How request bodies are read. JSON only, UTF-8 only, never compressed: anything else is a 415
// rather than a guess. Form-encoded bodies are taken by the token endpoint alone (RFC 6749), which
// registers @fastify/formbody in its own scope.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { BadRequestError, UnsupportedMediaTypeError, quote } from '../errors.js'

/** Keys that would reach an object's prototype if a later Object.assign or merge copied them. */
const REFUSED_KEYS = new Set(['__proto__', 'constructor'])

function refuseKeys(key: string, value: unknown): unknown {
  if (REFUSED_KEYS.has(key)) throw new BadRequestError(`body: the key ${JSON.stringify(key)} is refused (it could change an object's prototype)`)
  return value
}

/** JSON.parse, refusing prototype-changing keys. The reviver runs only when such a key could be there. */
export function parseJsonBody(text: string): unknown {
  if (text.length === 0) throw new BadRequestError('body is empty although Content-Type says application/json')
  // Escapes (\u005f…) could spell a refused key, so their presence takes the careful path too.
  const careful = text.includes('__proto__') || text.includes('constructor') || text.includes('\\u')
  try {
    return careful ? JSON.parse(text, refuseKeys) : JSON.parse(text)
  } catch (err) {
    if (err instanceof BadRequestError) throw err
    throw new BadRequestError('body is not valid JSON')
  }
}

/** The charset parameter of a Content-Type header, lower-cased; undefined when none is given. */
function charsetOf(contentType: string): string | undefined {
  const match = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(contentType)
  return match?.[1]?.toLowerCase()
}

/**
 * Refuses what cannot be read as sent. Compressed bodies are not supported: request bodies here are
 * small, and inflating them would need its own size limits against decompression bombs; proxies
 * that compress requests are rare. So any Content-Encoding other than identity is a 415, whether or
 * not the bytes really are gzip. A charset other than UTF-8 is a 415 too (RFC 8259 requires UTF-8).
 */
export function checkBodyEncoding(request: FastifyRequest): void {
  // Only a request that carries a body: a GET with a stray header has nothing to decode.
  if (request.headers['content-length'] === undefined && request.headers['transfer-encoding'] === undefined) return
  const encoding = request.headers['content-encoding']
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity' && encoding.trim() !== '') {
    throw new UnsupportedMediaTypeError(`Content-Encoding ${quote(encoding)} is not supported: send the body uncompressed`)
  }
  const contentType = request.headers['content-type']
  if (contentType !== undefined) {
    const charset = charsetOf(contentType)
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      throw new UnsupportedMediaTypeError(`charset ${quote(charset)} is not supported: send UTF-8`)
    }
  }
}

export default fp(
  async function bodyParsing(app: FastifyInstance) {
    app.removeContentTypeParser('application/json')
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      try {
        done(null, parseJsonBody(body as string))
      } catch (err) {
        done(err as Error, undefined)
      }
    })
    // preParsing: before a byte of the body is read, and only for requests that have one.
    app.addHook('preParsing', async (request, _reply, payload) => {
      checkBodyEncoding(request)
      return payload
    })
  },
  { name: 'body-parsing' }
)
