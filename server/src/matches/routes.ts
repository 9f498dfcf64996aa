// Matches: the two reading routes (participants and staff), and the teller that makes and mails them
// (service.ts), on an interval in every server process: a match is made once whichever process gets there.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { matchRoutes } from '@club/contract'
import { hasScope } from '../oauth2/scopes.js'
import { deviceTokenKey } from '../replay-servers/service.js'
import { replayDeps } from '../replays/deps.js'
import { viewerOf } from '../replays/viewer.js'
import { countedMailer } from '../health/metrics.js'
import { createMailer, type Mailer } from '../password-reset/mailer.js'
import { getMatch, listMatches, matchSettings, runMatchTeller, type MatchDeps } from './service.js'

const matches: FastifyPluginAsyncTypebox = async (app) => {
  const config = app.config
  const deps: MatchDeps = { replay: replayDeps(config, app.clock, await deviceTokenKey(app.db, config, app.clock)), settings: matchSettings(config) }
  const player = app.auth.playerOrGuest()

  let mailer: Mailer | undefined
  const tellerDeps = {
    ...deps,
    db: app.db,
    mailer: () => (mailer ??= countedMailer(createMailer(config, app.log), app.metrics)),
    publicBaseUrl: config.PUBLIC_BASE_URL
  }
  // As often as a box polls: a match is asked of its boxes within a poll of its end plus the grace.
  const teller = setInterval(() => {
    runMatchTeller(tellerDeps).catch((err: unknown) => app.log.warn({ err }, 'making or mailing matches did not work; retrying'))
  }, config.REPLAY_POLL_INTERVAL_SECONDS * 1000)
  teller.unref()
  app.addHook('onClose', async () => {
    clearInterval(teller)
    await mailer?.close()
  })

  app.route({ ...matchRoutes.list, onRequest: player, handler: async (request) => listMatches(app.db, request.query, viewerOf(request), deps) })
  // A token with only `read` reads a match already paid for; opening one spends an item (MATCH_REQUIRES_PACKAGE).
  const maySpend = (request: FastifyRequest) => {
    const principal = request.principal
    return principal?.via !== 'bearer' || hasScope(principal.scope, 'api') || hasScope(principal.scope, 'replays')
  }
  app.route({ ...matchRoutes.get, onRequest: player, handler: async (request) => getMatch(app.db, request.params.id, viewerOf(request), deps, maySpend(request)) })
}

export default matches
