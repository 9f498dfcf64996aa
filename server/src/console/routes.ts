// The admin console: a page, not API. It is served here so that it needs no other web server and
// loads nothing from another origin (venues and club desks are often offline), and it calls only the
// public API with the signed-in user's token. Kept out of the OpenAPI document (hide).
import type { FastifyInstance } from 'fastify'
import { loadPage, sendPage } from '@club/web/pages'
import { NotFoundError, quote } from '../errors.js'

const PREFIX = '/console'

export default async function consoleRoutes(app: FastifyInstance): Promise<void> {
  const page = loadPage('console', `${PREFIX}/`)
  const common = { schema: { hide: true }, config: { quietLog: true } }
  for (const url of [PREFIX, `${PREFIX}/`]) app.get(url, common, async (request, reply) => sendPage(reply, page.html, request.headers['if-none-match']))
  app.get(`${PREFIX}/${page.assetsPath}/*`, common, async (request, reply) => {
    const path = (request.params as { '*': string })['*']
    const file = page.asset(path)
    if (!file) throw new NotFoundError(`no console asset ${quote(path)}`)
    return sendPage(reply, file, request.headers['if-none-match'])
  })
}
