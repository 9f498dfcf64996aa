// The baseline: a bare Fastify route answering a constant JSON object, with the same logger the
// server uses, so the ratio measures what the API adds and nothing else.
import Fastify, { type FastifyBaseLogger } from 'fastify'
import { createLogger } from '@club/server/logging.js'

const app = Fastify({ loggerInstance: createLogger(process.env.LOG_LEVEL ?? 'info') as FastifyBaseLogger })
const answer = { status: 'APPROVED', pollInterval: 30, area: { id: 'baseline' } }
app.get('/baseline', async () => answer)
await app.listen({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1' })
process.once('SIGTERM', () => void app.close())
