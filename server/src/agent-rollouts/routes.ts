// Staged rollouts (admins): start one, list and read them, pause, resume, cancel; and the teller
// that advances every RUNNING or PAUSED rollout once per poll interval in every server process
// (conditional writes: two processes advancing one rollout open each group once).
import fp from 'fastify-plugin'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { agentRolloutRoutes as routes } from '@club/contract'
import { currentUser } from '../plugins/auth.js'
import { advanceRollouts, cancelAgentRollout, createAgentRollout, getAgentRollout, listAgentRollouts, pauseAgentRollout, resumeAgentRollout, type RecordingSince, type RolloutDeps } from './service.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Advances every running rollout now (what the teller does each poll interval); tests call it. */
    agentRollouts: { advance(): Promise<void> }
  }
}

export interface AgentRolloutOptions {
  /** Box health: since when a box's cameras all record (the box-health area's; see box-health.ts). */
  recordingSince?: RecordingSince
}

const agentRollouts: FastifyPluginAsyncTypebox<AgentRolloutOptions> = async (app, options) => {
  const deps: RolloutDeps = { clock: app.clock, ...(options.recordingSince ? { recordingSince: options.recordingSince } : {}) }
  const admin = app.auth.bearer({ roles: ['admin'] })

  let running: Promise<void> | null = null
  const advance = (): Promise<void> => {
    // One advance at a time in this process; a call meanwhile waits for it and runs afresh.
    const run = (running ?? Promise.resolve()).then(async () => {
      // Sightings held in memory first: a box that polls is not silent.
      if (app.hasDecorator('replayServerPolls')) await app.replayServerPolls.flush()
      await advanceRollouts(app.db, deps)
    })
    running = run.catch(() => undefined)
    return run
  }
  app.decorate('agentRollouts', { advance })
  const teller = setInterval(() => {
    advance().catch((err: unknown) => app.log.warn({ err }, 'advancing agent rollouts did not work; retrying'))
  }, app.config.REPLAY_POLL_INTERVAL_SECONDS * 1000)
  teller.unref()
  app.addHook('onClose', async () => {
    clearInterval(teller)
    await running
  })

  app.route({
    ...routes.create,
    onRequest: admin,
    handler: async (request, reply) => reply.code(201).send(await createAgentRollout(app.db, request.body, currentUser(request).id, deps))
  })
  app.route({ ...routes.list, onRequest: admin, handler: async (request) => listAgentRollouts(app.db, request.query) })
  app.route({ ...routes.get, onRequest: admin, handler: async (request) => getAgentRollout(app.db, request.params.id) })
  app.route({ ...routes.pause, onRequest: admin, handler: async (request) => pauseAgentRollout(app.db, request.params.id, deps) })
  app.route({ ...routes.resume, onRequest: admin, handler: async (request) => resumeAgentRollout(app.db, request.params.id, deps) })
  app.route({ ...routes.cancel, onRequest: admin, handler: async (request) => cancelAgentRollout(app.db, request.params.id, deps) })
}

// Not encapsulated: app.agentRollouts is the app's (tests advance through it).
export default fp(agentRollouts, { name: 'agent-rollouts' })
