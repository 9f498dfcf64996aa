// Answers that are already JSON text (kept by a cache, or hashed for an ETag before sending).
import type { FastifyReply } from 'fastify'

/** Fastify passes a string with a JSON content type through as it is, without serialising it again. */
export function sendJson(reply: FastifyReply, json: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json)
}
