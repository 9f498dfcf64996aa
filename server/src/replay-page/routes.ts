// The court page (GET /r/{courtSlug}), written for each request from packages/web's court page (its
// HTML and words; its modules and styles served by the page pipeline below /r/assets/), and the
// court's printable sign. The page and its assets are not API: they are kept out of the OpenAPI
// document (`hide`), and so carry no operationId; the sign is an admin operation of the contract
// (getCourtSign).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { contentSecurityPolicy, sendPage, type PageFile } from '@club/web/pages'
import { chooseLanguage, courtNotFoundHtml, courtPageHtml, wordsFor, type CourtWords } from '@club/web/court'
import { Slug, replayPageRoutes } from '@club/contract'
import { replayPageSeconds } from '../config.js'
import { NotFoundError, quote } from '../errors.js'
import { getVenueItem } from '../venue/service.js'
import { footageNotice } from '../footage-access/service.js'
import { serveAssets } from '../pages.js'
import { courtSign } from './sign.js'

// The page's own script and styles only; the clip is a signed link to wherever the club keeps its
// clips (this server for file://, the bucket for s3:// and gs://), so media may come from elsewhere.
// The page carries the server's clock and the player's court, so it is never cached.
const PAGE_HEADERS = {
  'cache-control': 'no-store',
  'content-security-policy': contentSecurityPolicy({ 'img-src': "'self' data:", 'media-src': '*', 'form-action': "'self'" })
}

/** The court page's HTML as a page file, sent like every other page. */
function htmlPage(html: string, statusCode = 200): PageFile {
  return { body: Buffer.from(html), type: 'text/html; charset=utf-8', headers: PAGE_HEADERS, statusCode }
}

/** A court's slug as the contract writes it; anything else names no court, with no query asked. */
const slugRule = Slug as unknown as { pattern: string; maxLength: number }
const slugPattern = new RegExp(slugRule.pattern, 'u')
const isSlug = (text: string) => text.length <= slugRule.maxLength && slugPattern.test(text)

const replayPage: FastifyPluginAsyncTypebox = async (app) => {
  const config = app.config
  const { assetsPath } = serveAssets(app as unknown as FastifyInstance, 'court', '/r')
  const assets = { script: `/r/${assetsPath}/court/main.js`, style: `/r/${assetsPath}/court.css` }
  const seconds = replayPageSeconds(config)
  const hidden = { schema: { hide: true } }

  const language = (request: FastifyRequest): { lang: string; words: CourtWords } => {
    const lang = chooseLanguage(request.headers['accept-language'])
    return { lang, words: wordsFor(lang) }
  }

  app.get<{ Params: { slug: string } }>('/r/:slug', hidden, async (request, reply: FastifyReply) => {
    const { slug } = request.params
    const court = isSlug(slug) ? await app.db.selectFrom('courts').select(['id', 'name', 'slug']).where('slug', '=', slug).executeTakeFirst() : undefined
    const { lang, words } = language(request)
    if (!court) {
      // A person with a browser gets a page in words; an API client the platform's error shape.
      if (!(request.headers.accept ?? '').includes('text/html')) throw new NotFoundError(`no court with slug ${quote(slug)}`)
      return sendPage(reply, htmlPage(courtNotFoundHtml({ lang, words, clubName: config.CLUB_NAME, style: assets.style }), 404), undefined)
    }
    const html = courtPageHtml({
      lang,
      words,
      clubName: config.CLUB_NAME,
      court,
      seconds,
      assets,
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
    return sendPage(reply, htmlPage(html), undefined)
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
