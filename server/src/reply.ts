// The one place answers are serialised ahead of Fastify: the JSON text of answers the services keep
// in their read caches (db/read-cache.ts), made once per kept object and route, and sent as it is.
// Services return objects; a read cache hands out the same object until a write retires it, so the
// object itself is the key: a retired answer's text goes with it (a WeakMap holds it no longer).
// Kept answers are never changed after they are handed out: that is what makes their text reusable.
import type { FastifyReply } from 'fastify'
import { sha256Hex } from './crypto.js'

/** The text of one kept answer as one route's serializer made it, and its hash when asked (an ETag). */
interface Serialized {
  serializer: unknown
  json: string
  etag?: string
}

const serialized = new WeakMap<object, Serialized>()

/** The route's serializer for the status about to be sent (Fastify's compiled response schema). */
function serializerOf(reply: FastifyReply): unknown {
  return reply.getSerializationFunction(String(reply.statusCode))
}

function serializedOf(reply: FastifyReply, answer: object): Serialized {
  const serializer = serializerOf(reply)
  let kept = serialized.get(answer)
  // Another route (another schema) may serialise the same object differently: its own text then.
  if (kept === undefined || kept.serializer !== serializer) {
    kept = { serializer, json: reply.serialize(answer) as string }
    serialized.set(answer, kept)
  }
  return kept
}

/** Fastify passes a string or bytes with a JSON content type through as they are, without serialising them again. */
function sendText(reply: FastifyReply, json: string | Buffer): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json)
}

/** Sends `answer` by the route's response schema, serialising it only the first time this route sends this object. */
export function sendAnswer(reply: FastifyReply, answer: object): FastifyReply {
  return sendText(reply, serializedOf(reply, answer).json)
}

/** The text `answer` is sent as and its strong ETag (the hash of exactly that text), both made once per object. */
export function answerWithEtag(reply: FastifyReply, answer: object): { json: string; etag: string } {
  const kept = serializedOf(reply, answer)
  kept.etag ??= `"${sha256Hex(kept.json)}"`
  return { json: kept.json, etag: kept.etag }
}

/** The ETag `answer` was last sent with by this route, or undefined when it was never sent (nothing can match it yet). */
export function sentEtag(reply: FastifyReply, answer: object): string | undefined {
  const kept = serialized.get(answer)
  return kept !== undefined && kept.serializer === serializerOf(reply) ? kept.etag : undefined
}

/**
 * An answer kept for many callers that differ by one value only (a user's id): `shared` holds
 * `placeholder` wherever `value` goes. A token no other text of the answer can hold by chance.
 */
export interface SharedAnswer<T extends object> {
  shared: T
  placeholder: string
  value: string
}

/** The shared answer's text, cut where the placeholder stood, as UTF-8 bytes (made once per object). */
const cutAnswers = new WeakMap<object, { serializer: unknown; parts: Buffer[] }>()

/**
 * Sends a shared answer with its value in place: the text is serialised once per shared object and
 * kept cut around each placeholder, so a request only joins the parts with its value (no
 * serialising, searching or encoding of a large answer per request).
 */
export function sendSharedAnswer<T extends object>(reply: FastifyReply, answer: SharedAnswer<T>): FastifyReply {
  const serializer = serializerOf(reply)
  let cut = cutAnswers.get(answer.shared)
  if (cut === undefined || cut.serializer !== serializer) {
    const json = reply.serialize(answer.shared) as string
    cut = { serializer, parts: json.split(answer.placeholder).map((part) => Buffer.from(part)) }
    cutAnswers.set(answer.shared, cut)
  }
  // The placeholder stands inside JSON strings: the value goes in escaped as JSON would write it.
  return sendText(reply, joinedWith(cut.parts, Buffer.from(JSON.stringify(answer.value).slice(1, -1))))
}

/**
 * Cuts answers from slabs, as Node's own pool does for small buffers: one allocation per several
 * answers instead of one each (an allocation of this size is memory outside the heap, and the
 * collector runs more often the more of it is made; the offering list measured about 10% more CPU
 * per request without it). A slab is freed once no answer cut from it is referenced any more;
 * nothing is ever reused while it is. Small, because one answer still held (by a client that
 * stopped reading) keeps its whole slab: at most 8 answers' worth.
 */
class Slabs {
  static readonly BYTES = 128 * 1024
  #slab = Buffer.allocUnsafeSlow(0)
  #used = 0

  cut(length: number): Buffer {
    if (length > Slabs.BYTES / 4) return Buffer.allocUnsafeSlow(length)
    if (this.#used + length > this.#slab.length) {
      this.#slab = Buffer.allocUnsafeSlow(Slabs.BYTES)
      this.#used = 0
    }
    const out = this.#slab.subarray(this.#used, this.#used + length)
    // Kept 8-byte aligned, as Node's pool keeps its slices.
    this.#used += (length + 7) & ~7
    return out
  }
}

/** One per process, like Node's own buffer pool (a slab holds only bytes already sent or being sent). */
const slabs = new Slabs()

/** parts[0] + value + parts[1] + value + ... + parts[n-1], in one piece of a slab. */
function joinedWith(parts: readonly Buffer[], value: Buffer): Buffer {
  let length = value.length * (parts.length - 1)
  for (const part of parts) length += part.length
  const out = slabs.cut(length)
  let at = parts[0]!.copy(out, 0)
  for (let i = 1; i < parts.length; i++) {
    at += value.copy(out, at)
    at += parts[i]!.copy(out, at)
  }
  return out
}
