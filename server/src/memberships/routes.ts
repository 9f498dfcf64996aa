// Membership plans (admin), and the plans on sale to members.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  membershipJobRoutes,
  membershipPauseRoutes as pauseRoutes,
  membershipPlanRoutes,
  membershipSubscriptionChangeRoutes as changeRoutes,
  membershipSubscriptionRoutes as subscriptionRoutes
} from '@club/contract'
import { runMembershipJob } from '../jobs/membership-jobs.js'
import { currentUser } from '../plugins/auth.js'
import { sendAnswer } from '../reply.js'
import { createPause, endPause, getPause, listPauses } from './pauses.js'
import { createMembership, deleteMembership, getMembership, listMemberships, patchMembership } from './plans.js'
import { cancelSubscription, patchSubscription, withdrawCancellation } from './subscription-changes.js'
import { getKeptSubscription, listSubscriptions } from './subscription-view.js'
import { confirmSubscription, createSubscription } from './subscriptions.js'

const memberships: FastifyPluginAsyncTypebox = async (app) => {
  const admins = app.auth.bearer({ roles: ['admin'] })
  const staff = app.auth.bearer({ roles: ['admin', 'staff'] })
  const deps = () => ({ clock: app.clock, currency: app.config.CURRENCY })

  app.route({
    ...membershipPlanRoutes.create,
    onRequest: admins,
    handler: async (request, reply) => reply.code(201).send(await createMembership(app.db, request.body, deps()))
  })
  app.route({
    ...membershipPlanRoutes.list,
    onRequest: staff,
    handler: (request) => listMemberships(app.db, request.query, false, membershipPlanRoutes.list.url)
  })
  app.route({ ...membershipPlanRoutes.get, onRequest: staff, handler: (request) => getMembership(app.db, request.params.id) })
  app.route({
    ...membershipPlanRoutes.patch,
    onRequest: admins,
    handler: (request) => patchMembership(app.db, request.params.id, request.body, deps())
  })
  app.route({
    ...membershipPlanRoutes.delete,
    onRequest: admins,
    handler: async (request, reply) => {
      const archived = await deleteMembership(app.db, request.params.id, deps())
      return archived ? reply.code(200).send(archived) : reply.code(204).send(null)
    }
  })
  app.route({
    ...membershipPlanRoutes.onSale,
    onRequest: app.auth.apiKeyOrBearer(),
    handler: (request) => listMemberships(app.db, request.query, true, membershipPlanRoutes.onSale.url)
  })

  const signedIn = app.auth.apiKeyOrBearer()
  const subscriptionDeps = () => ({ clock: app.clock, provider: app.paymentProvider, clubTimezone: app.config.CLUB_TIMEZONE })
  app.route({
    ...subscriptionRoutes.create,
    onRequest: signedIn,
    handler: async (request, reply) => {
      const { created, subscription } = await createSubscription(app.db, request.body, currentUser(request), subscriptionDeps())
      return reply.code(created ? 201 : 200).send(subscription)
    }
  })
  app.route({
    ...subscriptionRoutes.list,
    onRequest: signedIn,
    handler: (request) => listSubscriptions(app.db, request.query, currentUser(request), app.clock, subscriptionRoutes.list.url)
  })
  app.route({
    ...subscriptionRoutes.get,
    onRequest: signedIn,
    handler: async (request, reply) =>
      sendAnswer(reply, await getKeptSubscription(app.db, request.params.id, currentUser(request), app.clock))
  })
  app.route({
    ...changeRoutes.patch,
    onRequest: app.auth.apiKeyOrBearer({ roles: ['admin', 'staff'] }),
    handler: (request) => patchSubscription(app.db, request.params.id, request.body, currentUser(request), app.clock)
  })
  app.route({
    ...changeRoutes.cancel,
    onRequest: signedIn,
    // A member's "cancel" button sends no body: that is the plain request, not a bad one.
    preValidation: async (request) => {
      request.body ??= {}
    },
    handler: (request) => cancelSubscription(app.db, request.params.id, request.body.immediate ?? false, currentUser(request), app.clock)
  })
  app.route({
    ...changeRoutes.withdrawCancellation,
    onRequest: signedIn,
    handler: (request) => withdrawCancellation(app.db, request.params.id, currentUser(request), app.clock)
  })
  app.route({
    ...pauseRoutes.create,
    onRequest: signedIn,
    handler: async (request, reply) =>
      reply.code(201).send(await createPause(app.db, request.params.id, request.body, currentUser(request), { clock: app.clock, provider: app.paymentProvider }))
  })
  app.route({ ...pauseRoutes.list, onRequest: signedIn, handler: (request) => listPauses(app.db, request.params.id, currentUser(request), app.clock) })
  app.route({
    ...pauseRoutes.get,
    onRequest: signedIn,
    handler: (request) => getPause(app.db, request.params.id, request.params.pauseId, currentUser(request), app.clock)
  })
  app.route({
    ...pauseRoutes.end,
    onRequest: signedIn,
    handler: (request) => endPause(app.db, request.params.id, request.params.pauseId, currentUser(request), app.clock)
  })
  app.route({
    ...membershipJobRoutes.run,
    onRequest: admins,
    handler: async (request, reply) =>
      reply.code(201).send(await runMembershipJob(app.db, request.body, { clock: app.clock, provider: app.paymentProvider }))
  })
  app.route({
    ...subscriptionRoutes.confirm,
    onRequest: signedIn,
    handler: (request) => confirmSubscription(app.db, request.params.id, currentUser(request), subscriptionDeps())
  })
}

export default memberships
