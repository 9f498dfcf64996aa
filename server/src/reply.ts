// Answers that are already JSON text (kept by a cache, or hashed for an ETag before sending).
import type { FastifyReply } from 'fastify'

/** Fastify passes a string or bytes with a JSON content type through as they are, without serialising them again. */
export function sendJson(reply: FastifyReply, json: string | Buffer): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json)
}
