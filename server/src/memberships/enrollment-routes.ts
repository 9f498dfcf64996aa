// Enrollments over HTTP: the members a subscription covers, what a member belongs to, and the page
// behind the invitation mail's link with the two open routes it calls.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { enrollmentInvitationRoutes, membershipEnrollmentRoutes as routes } from '@club/contract'
import { countedMailer } from '../health/metrics.js'
import { servePage } from '../pages.js'
import { createMailer } from '../password-reset/mailer.js'
import { currentUser } from '../plugins/auth.js'
import { routeRateLimit } from '../plugins/rate-limit.js'
import { answerInvitation, createEnrollment, deleteEnrollment, getEnrollment, listEnrollmentsOfUser, listSubscriptionEnrollments } from './enrollments.js'
import { INVITATION_PAGE, answerInvitationByToken, lookupInvitation, mailInvitation } from './invitation-links.js'

const HOUR_MS = 3600 * 1000

const enrollments: FastifyPluginAsyncTypebox = async (app) => {
  const signedIn = app.auth.apiKeyOrBearer()
  const mailer = countedMailer(createMailer(app.config, app.log), app.metrics)
  app.addHook('onClose', async () => mailer.close())
  // The mail goes after the answer: an unreachable relay neither delays nor undoes the invitation.
  const deps = () => ({
    clock: app.clock,
    invite: async (enrollment: Parameters<typeof mailInvitation>[1], token: string) =>
      app.background.run('enrollment invitation', () =>
        mailInvitation(app.db, enrollment, token, { clock: app.clock, mailer, publicBaseUrl: app.config.PUBLIC_BASE_URL })
      )
  })
  app.route({
    ...routes.list,
    onRequest: signedIn,
    handler: (request) =>
      listSubscriptionEnrollments(app.db, request.params.id, request.query, currentUser(request), `/apis/v2/membership-subscriptions/${request.params.id}/enrollments`)
  })
  app.route({
    ...routes.create,
    onRequest: signedIn,
    handler: async (request, reply) => reply.code(201).send(await createEnrollment(app.db, request.params.id, request.body, currentUser(request), deps()))
  })
  app.route({
    ...routes.answer,
    onRequest: signedIn,
    handler: (request) => answerInvitation(app.db, request.params.id, request.params.enrollmentId, request.body.accept, currentUser(request), app.clock)
  })
  app.route({
    ...routes.get,
    onRequest: signedIn,
    handler: (request) => getEnrollment(app.db, request.params.id, request.params.enrollmentId, currentUser(request))
  })
  app.route({
    ...routes.delete,
    onRequest: signedIn,
    handler: (request) => deleteEnrollment(app.db, request.params.id, request.params.enrollmentId, currentUser(request), app.clock)
  })
  app.route({
    ...routes.listOfUser,
    onRequest: signedIn,
    handler: (request) => listEnrollmentsOfUser(app.db, request.query, currentUser(request), routes.listOfUser.url)
  })

  // The page the invitation mail links to. The link carries the token: the page sends no Referer
  // anywhere, and the request log redacts the query (logging.ts).
  servePage(app as unknown as FastifyInstance, INVITATION_PAGE, `/${INVITATION_PAGE}`, { 'referrer-policy': 'no-referrer' })
  // Open routes whose credential is the token: no auth hook, so credentials sent along are never
  // read; limited per client IP against guessing (a token is 256 random bits all the same).
  const perIp = routeRateLimit({ max: app.config.INVITATION_LINK_RATE_LIMIT_MAX, timeWindowMs: HOUR_MS, what: 'invitation link requests' })
  app.route({
    ...enrollmentInvitationRoutes.read,
    config: perIp,
    handler: (request) => lookupInvitation(app.db, request.body.token, app.clock)
  })
  app.route({
    ...enrollmentInvitationRoutes.answer,
    config: perIp,
    handler: (request) => answerInvitationByToken(app.db, request.body, app.clock)
  })
}

export default enrollments
