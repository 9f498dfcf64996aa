// The pages of packages/web this server answers (the console, the password reset page): each at its
// address with and without the trailing slash, its assets below it. Pages, not API: kept out of the
// OpenAPI document, and their successful loads out of the request log.
import type { FastifyInstance } from 'fastify'
import { loadPage, sendPage, type PageName } from '@club/web/pages'
import { NotFoundError, quote } from './errors.js'

export function servePage(app: FastifyInstance, name: PageName, prefix: string, headers: Record<string, string> = {}): void {
  const page = loadPage(name, `${prefix}/`)
  const common = { schema: { hide: true }, config: { quietLog: true } }
  for (const url of [prefix, `${prefix}/`]) {
    app.get(url, common, async (request, reply) => sendPage(reply.headers(headers), page.html, request.headers['if-none-match']))
  }
  app.get(`${prefix}/${page.assetsPath}/*`, common, async (request, reply) => {
    const path = (request.params as { '*': string })['*']
    const file = page.asset(path)
    if (!file) throw new NotFoundError(`no ${name} asset ${quote(path)}`)
    return sendPage(reply, file, request.headers['if-none-match'])
  })
}
