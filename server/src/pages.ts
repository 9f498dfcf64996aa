// The pages of packages/web this server answers (the console, the court page, the password reset
// page...): each page's assets below its address, and a page with an HTML file of its own at its
// address with and without the trailing slash. Pages, not API: kept out of the OpenAPI document, and
// their successful loads out of the request log.
import type { FastifyInstance } from 'fastify'
import { loadAssets, loadPage, sendPage, type PageAssets, type PageFolder, type PageName } from '@club/web/pages'
import { NotFoundError, quote } from './errors.js'

const PAGE_ROUTE = { schema: { hide: true }, config: { quietLog: true } }

export function servePage(app: FastifyInstance, name: PageName, prefix: string, headers: Record<string, string> = {}): void {
  const page = loadPage(name, `${prefix}/`)
  for (const url of [prefix, `${prefix}/`]) {
    app.get(url, PAGE_ROUTE, async (request, reply) => sendPage(reply.headers(headers), page.html, request.headers['if-none-match']))
  }
  serveAssets(app, name, prefix, page)
}

/** A page's assets at `{prefix}/assets/<hash>/…`; loaded here unless the caller has them. */
export function serveAssets(app: FastifyInstance, name: PageFolder, prefix: string, assets: PageAssets = loadAssets(name)): PageAssets {
  app.get(`${prefix}/${assets.assetsPath}/*`, PAGE_ROUTE, async (request, reply) => {
    const path = (request.params as { '*': string })['*']
    const file = assets.asset(path)
    if (!file) throw new NotFoundError(`no ${name} asset ${quote(path)}`)
    return sendPage(reply, file, request.headers['if-none-match'])
  })
  return assets
}
