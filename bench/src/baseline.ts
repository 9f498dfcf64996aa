// The baselines: a bare Fastify route answering a constant JSON object. BASELINE_LOGGER=none has no
// logger at all (the framework's limit); BASELINE_LOGGER=pino has Fastify's default pino logger at
// LOG_LEVEL (its request and response lines, to stdout): what any server that logs its requests pays.
// Never the server's own logger: that is part of what the server costs.
import Fastify from 'fastify'

const withPino = process.env.BASELINE_LOGGER === 'pino'
const app = Fastify({ logger: withPino ? { level: process.env.LOG_LEVEL ?? 'info' } : false })
const answer = { status: 'APPROVED', pollInterval: 30, area: { id: 'baseline' } }
app.get('/baseline', async () => answer)
const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1' })
// Without a logger Fastify says nothing; the bench waits for this line.
if (!withPino) process.stdout.write(`Server listening at ${address}\n`)
process.once('SIGTERM', () => void app.close())
