// The box's local API on the venue network: health, cameras, snapshots, clip export.
import { createHash, timingSafeEqual } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { agentLocalApi, type AgentHealth, type ClipRequest } from '@club/contract'
import type { Logger } from './log.js'

/** What the local API needs from the running agent. */
export interface LocalApiHandlers {
  health(): Promise<AgentHealth>
  /** The device's access token, when it has one. */
  accessToken(): string | undefined
  snapshot(cameraId: string, outputPath: string): Promise<void>
  exportClip(request: ClipRequest): Promise<unknown>
}

export class HttpError extends Error {
  constructor(readonly statusCode: number, message: string) {
    super(message)
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest()
}

/** Compares digests, so the comparison takes the same time whatever the length of the guess. */
export function bearerMatches(header: string | undefined, token: string | undefined): boolean {
  if (!token || !header?.startsWith('Bearer ')) return false
  return timingSafeEqual(digest(header.slice('Bearer '.length).trim()), digest(token))
}

export async function buildLocalApi(handlers: LocalApiHandlers, log: Logger): Promise<FastifyInstance> {
  const app = Fastify({ loggerInstance: log.child({ component: 'http' }) as unknown as FastifyBaseLogger, forceCloseConnections: true })

  app.setErrorHandler((err: Error & { statusCode?: number; validation?: unknown }, request, reply) => {
    const statusCode = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500
    if (statusCode === 500) request.log.error({ err }, 'request failed')
    const message = statusCode === 500 ? 'the agent could not complete the request' : err.message
    void reply.code(statusCode).send({ statusCode, error: reasonPhrase(statusCode), message })
  })

  const requireToken = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!bearerMatches(request.headers.authorization, handlers.accessToken())) {
      void reply.header('www-authenticate', 'Bearer')
      throw new HttpError(401, "the device's access token is required as a Bearer token")
    }
  }

  // Monitoring polls these every few seconds: keep them out of the journal unless they fail.
  app.route({ ...agentLocalApi.health, logLevel: 'warn', handler: () => handlers.health() })
  app.route({ ...agentLocalApi.cameras, logLevel: 'warn', handler: async () => (await handlers.health()).cameras })
  app.route({
    ...agentLocalApi.snapshot,
    handler: async (request, reply) => {
      const { id } = request.params as { id: string }
      const dir = await mkdtemp(join(tmpdir(), 'club-agent-snapshot-'))
      try {
        const file = join(dir, 'snapshot.jpg')
        await handlers.snapshot(id, file)
        return reply.type('image/jpeg').header('cache-control', 'no-store').send(await readFile(file))
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    }
  })
  app.route({
    ...agentLocalApi.exportClip,
    preHandler: requireToken,
    handler: (request) => handlers.exportClip(request.body as ClipRequest)
  })
  return app
}

function reasonPhrase(statusCode: number): string {
  return ({ 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found', 422: 'Unprocessable Entity', 500: 'Internal Server Error' } as Record<number, string>)[statusCode] ?? 'Error'
}
