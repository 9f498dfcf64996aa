// The court page (GET /r/{courtSlug}), its script and styles, and the court's printable sign. The page
// and its assets are not API: they are kept out of the OpenAPI document (`hide`), and so carry no
// operationId; the sign is an admin operation of the contract (getCourtSign).
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Value } from 'typebox/value'
import { assetFile, contentSecurityPolicy, sendPage, type PageFile } from '@club/web/pages'
import { Slug, replayPageRoutes } from '@club/contract'
import { replayPageSeconds } from '../config.js'
import { NotFoundError, quote } from '../errors.js'
import { getVenueItem } from '../venue/service.js'
import { footageNotice } from '../footage-access/service.js'
import { PAGE_DIR, chooseLanguage, loadStrings, wordsFor, type Strings } from './strings.js'
import { courtSign } from './sign.js'
import { notFoundHtml, pageHtml } from './html.js'

/** A content-named asset: its name changes with its bytes, so browsers may keep it for a year. */
function asset(file: string): { path: string; file: PageFile } {
  const body = readFileSync(PAGE_DIR + file)
  const [name, ext] = file.split('.') as [string, string]
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12)
  return { path: `/r/assets/${name}.${hash}.${ext}`, file: assetFile(file, body) }
}

// The page's own script and styles only; the clip is a signed link to wherever the club keeps its
// clips (this server for file://, the bucket for s3:// and gs://), so media may come from elsewhere.
const PAGE_POLICY = contentSecurityPolicy({ 'img-src': "'self' data:", 'media-src': '*', 'form-action': "'self'" })

const replayPage: FastifyPluginAsyncTypebox = async (app) => {
  const config = app.config
  const strings = loadStrings()
  const languages = Object.keys(strings)
  const assets = { script: asset('page.js'), style: asset('page.css') }
  const byPath = new Map(Object.values(assets).map((a) => [a.path, a.file]))
  const seconds = replayPageSeconds(config)
  const hidden = { schema: { hide: true } }

  const language = (request: FastifyRequest): { lang: string; words: Strings } => {
    const lang = chooseLanguage(request.headers['accept-language'], languages)
    return { lang, words: wordsFor(strings, lang) }
  }

  app.get<{ Params: { slug: string } }>('/r/:slug', hidden, async (request, reply: FastifyReply) => {
    const { slug } = request.params
    const court = Value.Check(Slug, slug) ? await app.db.selectFrom('courts').select(['id', 'name', 'slug']).where('slug', '=', slug).executeTakeFirst() : undefined
    const { lang, words } = language(request)
    if (!court) {
      // A person with a browser gets a page in words; an API client the platform's error shape.
      if (!(request.headers.accept ?? '').includes('text/html')) throw new NotFoundError(`no court with slug ${quote(slug)}`)
      return reply
        .code(404)
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('content-security-policy', PAGE_POLICY)
        .send(notFoundHtml({ lang, words, clubName: config.CLUB_NAME, style: assets.style.path }))
    }
    const html = pageHtml({
      lang,
      words,
      clubName: config.CLUB_NAME,
      court,
      seconds,
      script: assets.script.path,
      style: assets.style.path,
      settings: {
        guests: config.REPLAYS_GUEST,
        requirePackage: config.REPLAYS_REQUIRE_PACKAGE,
        shopUrl: config.REPLAY_SHOP_URL,
        // The phone's clock is measured against this (so the page itself is never cached).
        serverNow: app.clock.now().getTime(),
        // A tap kept offline longer than this is not sent: the page says so rather than be refused.
        maxAgeSeconds: config.REPLAY_MAX_AGE_SECONDS
      },
      notice: footageNotice(config)
    })
    return reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('content-security-policy', PAGE_POLICY)
      .send(html)
  })

  app.get<{ Params: { name: string } }>('/r/assets/:name', hidden, async (request, reply) => {
    const found = byPath.get(`/r/assets/${request.params.name}`)
    if (!found) throw new NotFoundError(`no court page asset ${quote(request.params.name)}`)
    return sendPage(reply, found, request.headers['if-none-match'])
  })

  app.route({
    ...replayPageRoutes.getCourtSign,
    onRequest: app.auth.bearer({ roles: ['staff', 'admin'] }),
    handler: async (request, reply) => {
      const court = await getVenueItem(app.db, 'courts', request.params.id)
      const format = request.query.format ?? ((request.headers.accept ?? '').includes('application/pdf') ? 'pdf' : 'svg')
      const sign = await courtSign(court, config, language(request).words, format)
      return reply
        .type(sign.type)
        .header('content-disposition', `inline; filename="sign-${court.slug}.${format}"`)
        .header('cache-control', 'no-store')
        .send(sign.body)
    }
  })
}

export default replayPage
