// The admin console: a page, not API. It is served here so that it needs no other web server and
// loads nothing from another origin (venues and club desks are often offline), and it calls only the
// public API with the signed-in user's token. Kept out of the OpenAPI document (hide).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { answerFor, loadPage, type PageFile } from '@club/web/pages'
import { NotFoundError, quote } from '../errors.js'

const PREFIX = '/console'

function send(request: FastifyRequest, reply: FastifyReply, file: PageFile) {
  const answer = answerFor(file, request.headers['if-none-match'])
  return reply.code(answer.statusCode).headers(answer.headers).send(answer.body)
}

export default async function consoleRoutes(app: FastifyInstance): Promise<void> {
  const page = loadPage('console', `${PREFIX}/`)
  const common = { schema: { hide: true }, config: { quietLog: true } }
  for (const url of [PREFIX, `${PREFIX}/`]) app.get(url, common, async (request, reply) => send(request, reply, page.html))
  app.get(`${PREFIX}/${page.assetsPath}/*`, common, async (request, reply) => {
    const path = (request.params as { '*': string })['*']
    const file = page.asset(path)
    if (!file) throw new NotFoundError(`no console asset ${quote(path)}`)
    return send(request, reply, file)
  })
}
