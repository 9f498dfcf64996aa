// Replays: the player's routes (Bearer or API key), the signed download of a file:// clip, and the
// box's routes (its device token) to fetch waiting replays and report their progress.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { preHandlerAsyncHookHandler } from 'fastify'
import { replayAdminRoutes, replayDeviceRoutes, replayPageRoutes, replayRoutes } from '@club/contract'
import { currentDevice as deviceOf, currentUser } from '../plugins/auth.js'
import { keyedRateLimit, routeRateLimit } from '../plugins/rate-limit.js'
import { createGuestSession, guestSettings } from './guests.js'
import { deviceTokenKey } from '../replay-servers/service.js'
import { notifyReplayServer } from './notify.js'
import { boxCallDeps } from '../replay-servers/box-call.js'
import { createReplay, deleteReplay, failUnansweredReplays, getReplay, listReplays, presentNewReplay, takeDownReplay } from './service.js'
import { NotTheReplaysClipError, listDeviceReplays, setDeviceReplayStatus } from './device.js'
import { openReplayDownload } from './clips.js'
import { byteRange } from '../agent-releases/service.js'
import { HttpError } from '../errors.js'
import { replayDeps } from './deps.js'
import { requesterOf, viewerOf } from './viewer.js'

const replays: FastifyPluginAsyncTypebox = async (app) => {
  const config = app.config
  const tokenKey = await deviceTokenKey(app.db, config, app.clock)
  const deps = replayDeps(config, app.clock, tokenKey)
  const player = app.auth.playerOrGuest()
  // What a guest's free replays are limited by instead of package items: per court, and per address.
  const hour = 3_600_000
  // The address first: one phone over its limit does not use up the court's.
  const guestLimits = [
    keyedRateLimit(app, {
      max: config.REPLAY_GUEST_ADDRESS_RATE_LIMIT_MAX,
      timeWindowMs: hour,
      keyGenerator: (request) => `guest-replays-address:${request.ip}`,
      what: 'guest replays from this address'
    }),
    keyedRateLimit(app, {
      max: config.REPLAY_GUEST_COURT_RATE_LIMIT_MAX,
      timeWindowMs: hour,
      keyGenerator: (request) => `guest-replays-court:${(request.body as { court: { id: string } }).court.id}`,
      what: "guests' replays of this court"
    })
  ]
  // A member pays with a package item too (createReplay), and is limited per hour and per court, so
  // that no one keeps the boxes' decoders busy or watches a court all day. Every request counts, a
  // refused one too (probing is asking). Staff and admins are not limited: each of their looks is
  // logged, and older footage takes their typed reason. Who is a member is what the token may do
  // (currentUser): a staff member's narrow token (a web view's, a partner app's) is a member's here too.
  const memberLimits = [
    keyedRateLimit(app, {
      max: config.REPLAY_MEMBER_RATE_LIMIT_MAX,
      timeWindowMs: hour,
      keyGenerator: (request) => `member-replays-user:${currentUser(request).id}`,
      what: 'replays asked for by this member'
    }),
    keyedRateLimit(app, {
      max: config.REPLAY_COURT_RATE_LIMIT_MAX,
      timeWindowMs: 60_000,
      keyGenerator: (request) => `member-replays-court:${(request.body as { court: { id: string } }).court.id}`,
      what: "members' replays of this court"
    })
  ]
  const replayLimits: preHandlerAsyncHookHandler = async function replayLimits(request, reply) {
    const principal = request.principal
    const limits = principal?.kind === 'guest' ? guestLimits : principal?.kind === 'user' && currentUser(request).role === 'member' ? memberLimits : []
    for (const limit of limits) await limit.call(this, request, reply)
  }
  const device = app.auth.device()
  const notifyDeps = { ...boxCallDeps(config, tokenKey), log: app.log }

  // Replays nobody asks about still time out (and give their item back) without waiting for a read.
  const sweep = setInterval(() => {
    failUnansweredReplays(app.db, deps).catch((err: unknown) => app.log.warn({ err }, 'failing unanswered replays did not work; retrying'))
  }, Math.min(config.REPLAY_REQUEST_TIMEOUT_SECONDS, 10) * 1000)
  sweep.unref()
  app.addHook('onClose', async () => clearInterval(sweep))

  app.route({
    ...replayPageRoutes.createGuestSession,
    config: routeRateLimit({ max: config.REPLAY_GUEST_ADDRESS_RATE_LIMIT_MAX, timeWindowMs: hour, what: 'guest sessions' }),
    handler: async (request, reply) => reply.code(201).header('cache-control', 'no-store').send(await createGuestSession(app.db, request.body.court.id, app.clock, guestSettings(config)))
  })
  app.route({
    ...replayRoutes.create,
    onRequest: player,
    preHandler: replayLimits,
    handler: async (request, reply) => {
      const row = await createReplay(app.db, request.body, viewerOf(request), deps)
      // Not awaited: the player's answer does not wait for the box.
      void notifyReplayServer(app.db, row.replay_server_id!, notifyDeps)
      return reply.code(201).send(presentNewReplay(row, requesterOf(request)))
    }
  })
  app.route({ ...replayRoutes.list, onRequest: player, handler: async (request) => listReplays(app.db, request.query, viewerOf(request), deps) })
  app.route({ ...replayRoutes.get, onRequest: player, handler: async (request) => getReplay(app.db, request.params.id, viewerOf(request), deps) })
  app.route({
    ...replayRoutes.delete,
    onRequest: player,
    handler: async (request, reply) => {
      await deleteReplay(app.db, request.params.id, requesterOf(request), deps)
      return reply.code(204).send(null)
    }
  })
  app.route({
    ...replayRoutes.download,
    // Its request line is written like any other: redactUrl blanks the signature in the query.
    handler: async (request, reply) => {
      // Opened once, where it really is: what was checked is what is sent (the stream closes it).
      const { handle, size } = await openReplayDownload(app.db, request.params.id, request.query.expires, request.query.signature, deps)
      // A <video> seeks by asking for the bytes from there: without ranges it cannot jump into a long
      // clip (a match's angle, to a chapter) and plays from the start (issue 49).
      const range = byteRange(request.headers.range, size)
      reply.type('video/mp4').header('accept-ranges', 'bytes').header('cache-control', 'private, no-store')
      if (range === 'unsatisfiable') {
        await handle.close()
        throw new HttpError(416, `the range ${request.headers.range} is outside the clip's ${size} bytes`, { 'content-range': `bytes */${size}` })
      }
      if (!range) return reply.header('content-length', size).send(handle.createReadStream() as never)
      return reply
        .code(206)
        .header('content-range', `bytes ${range.start}-${range.end}/${size}`)
        .header('content-length', range.end - range.start + 1)
        .send(handle.createReadStream({ start: range.start, end: range.end }) as never)
    }
  })
  app.route({
    ...replayAdminRoutes.takedown,
    onRequest: app.auth.bearer({ roles: ['staff', 'admin'] }),
    handler: async (request) => takeDownReplay(app.db, request.params.id, currentUser(request), request.body.reason, deps)
  })

  app.route({
    ...replayDeviceRoutes.list,
    onRequest: device,
    handler: async (request) => listDeviceReplays(app.db, deviceOf(request), deps)
  })
  app.route({
    ...replayDeviceRoutes.setStatus,
    onRequest: device,
    handler: async (request) => {
      const replayServerId = deviceOf(request)
      try {
        return await setDeviceReplayStatus(app.db, replayServerId, request.params.id, request.body, deps)
      } catch (err) {
        // A box naming another object than its replay's clip is broken or hostile: an admin should hear of it.
        if (err instanceof NotTheReplaysClipError) request.log.warn({ replayServerId, replayId: request.params.id, err: err.message }, 'a box reported a clip that is not its replay\'s')
        throw err
      }
    }
  })
}

export default replays
