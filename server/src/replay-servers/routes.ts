// The replay-server routes: the two a recording box calls (no authorization header: registration is
// open and rate limited, the serverId is the status call's secret) and the admin's routes around them.
import fp from 'fastify-plugin'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { replayServerDeviceRoutes } from '@club/contract'
import { routeRateLimit } from '../plugins/rate-limit.js'
import { parseTrustProxy } from '../config.js'
import { answerWithEtag, sendAnswer, sentEtag } from '../reply.js'
import { registerAdminRoutes } from './admin-routes.js'
import { tellConnectivity } from './connectivity.js'
import { runHealthTeller } from './health-teller.js'
import { countedMailer } from '../health/metrics.js'
import { createMailer, type Mailer } from '../password-reset/mailer.js'
import { pollAddressOf } from './box-call.js'
import { deviceTokenKey, registerReplayServer, type ReplayServerDeps } from './service.js'
import { matchesIfNoneMatch, StatusPolls } from './status-polls.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The status polls' answers kept in memory and their sightings not yet written. */
    replayServerPolls: StatusPolls
  }
}

const replayServers: FastifyPluginAsyncTypebox = async (app) => {
  if (!app.config.DEVICE_TOKEN_SECRET) {
    app.log.warn(
      'DEVICE_TOKEN_SECRET is not set: device tokens derive from a key kept in the database, so a copy of the database yields them; set it in production'
    )
  }
  const tokenKey = await deviceTokenKey(app.db, app.config, app.clock)
  const polls = new StatusPolls(
    app.db,
    {
      clock: app.clock,
      tokenKey,
      pollIntervalSeconds: app.config.REPLAY_POLL_INTERVAL_SECONDS,
      clubTimezone: app.config.CLUB_TIMEZONE,
      diskFloorPercent: app.config.REPLAY_SERVER_DISK_FLOOR_PERCENT
    },
    { maxEntries: app.config.REPLAY_STATUS_CACHE_ENTRIES, flushIntervalMs: app.config.REPLAY_SIGHTING_FLUSH_MS, log: app.log }
  )
  app.decorate('replayServerPolls', polls)
  // onClose hooks run last added first: this one, added after the services plugin's, writes the
  // last sightings before the database closes.
  app.addHook('onClose', async () => polls.close())
  const deps: ReplayServerDeps = {
    clock: app.clock,
    tokenKey,
    pollIntervalSeconds: app.config.REPLAY_POLL_INTERVAL_SECONDS,
    unrecordedSightings: polls
  }
  // A box that stops polling changes nothing stored: once per poll interval the sightings are written
  // and each box's going online or offline is told to integrators (connectivity.ts).
  const connectivity = setInterval(() => {
    polls
      .flush()
      .then(() => tellConnectivity(app.db, app.clock.now(), app.config.REPLAY_POLL_INTERVAL_SECONDS))
      .catch((err: unknown) => app.log.warn({ err }, 'telling box connectivity did not work; retrying'))
  }, app.config.REPLAY_POLL_INTERVAL_SECONDS * 1000)
  connectivity.unref()
  app.addHook('onClose', async () => clearInterval(connectivity))
  // Likewise each camera's, disk's and clock's change, once it held (health-teller.ts), mailed to the
  // admins unless REPLAY_SERVER_ALERT_MAIL=off.
  let mailer: Mailer | undefined
  const tellerDeps = {
    db: app.db,
    clock: app.clock,
    mailer: () => (mailer ??= countedMailer(createMailer(app.config, app.log), app.metrics)),
    publicBaseUrl: app.config.PUBLIC_BASE_URL,
    pollIntervalSeconds: app.config.REPLAY_POLL_INTERVAL_SECONDS,
    alertMail: app.config.REPLAY_SERVER_ALERT_MAIL
  }
  const healthTeller = setInterval(() => {
    runHealthTeller(tellerDeps)
      .catch((err: unknown) => app.log.warn({ err }, 'telling box health did not work; retrying'))
  }, app.config.REPLAY_POLL_INTERVAL_SECONDS * 1000)
  healthTeller.unref()
  app.addHook('onClose', async () => {
    clearInterval(healthTeller)
    await mailer?.close()
  })

  const audience = new URL(app.config.PUBLIC_BASE_URL).origin
  // Where a box's requests come from, as far as the server can vouch for it (box-call.ts).
  const trustProxy = parseTrustProxy(app.config.TRUST_PROXY)
  app.route({
    ...replayServerDeviceRoutes.register,
    config: routeRateLimit({ max: app.config.REPLAY_REGISTRATION_RATE_LIMIT_MAX, timeWindowMs: 60_000, what: 'replay-server registrations' }),
    // The audience a key proof must name: this server's configured origin (PUBLIC_BASE_URL), never
    // the request's Host or X-Forwarded-Host, which the sender chooses: a proof made for another
    // server, sent here with that server's name in Host, would verify. The source counts as the box's
    // address only as pollAddressOf allows (box-call.ts).
    handler: async (request) =>
      registerReplayServer(app.db, request.body, { sourceIp: pollAddressOf(request, trustProxy), audience }, deps)
  })

  app.route({
    ...replayServerDeviceRoutes.status,
    // Every box polls every few seconds: its request line is at debug unless the poll fails or a
    // report changed the record.
    config: { quietLog: true },
    // Most polls are "not modified": answered here, before validation and the handler, so that a
    // 304 costs clearly less than a full poll. Anything else goes on to the handler.
    onRequest: async (request, reply) => {
      const ifNoneMatch = request.headers['if-none-match']
      if (ifNoneMatch === undefined) return
      const params = request.params as { serverId: string }
      const kept = await polls.keptAnswer(params.serverId, request.query, pollAddressOf(request, trustProxy))
      // Only an answer already sent has an ETag a box can hold.
      const etag = kept && sentEtag(reply, kept)
      if (etag === undefined || !matchesIfNoneMatch(ifNoneMatch, etag)) return
      polls.notedUnchanged(params.serverId, request.query)
      // No payload at all, as below.
      return reply.header('etag', etag).header('cache-control', 'no-store').code(304).send(undefined as never)
    },
    handler: async (request, reply) => {
      const { answer, changed } = await polls.poll(request.params.serverId, request.query, pollAddressOf(request, trustProxy))
      // The ETag is the hash of exactly what is sent; made once per kept answer.
      const { etag } = answerWithEtag(reply, answer)
      if (changed) request.changedSomething = true
      // The answer may carry the access token: no shared cache may keep it.
      reply.header('etag', etag).header('cache-control', 'no-store')
      // No payload at all (the 304 schema's null only documents that): send(null) serialises "null"
      // and announces Content-Length: 4 on a 304, which strict HTTP clients wait for (autocannon hung).
      if (matchesIfNoneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send(undefined as never)
      return sendAnswer(reply, answer)
    }
  })

  registerAdminRoutes(app, deps)
}

// Not encapsulated: the polls are the app's (tests and shutdown reach app.replayServerPolls).
export default fp(replayServers, { name: 'replay-servers', dependencies: ['services'] })
