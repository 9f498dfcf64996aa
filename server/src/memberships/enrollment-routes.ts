// Enrollments over HTTP: the members a subscription covers, and what a member belongs to.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { membershipEnrollmentRoutes as routes } from '@club/contract'
import { countedMailer } from '../health/metrics.js'
import { createMailer } from '../password-reset/mailer.js'
import { currentUser } from '../plugins/auth.js'
import { answerInvitation, createEnrollment, deleteEnrollment, getEnrollment, listEnrollmentsOfUser, listSubscriptionEnrollments, mailInvitation } from './enrollments.js'

const enrollments: FastifyPluginAsyncTypebox = async (app) => {
  const signedIn = app.auth.apiKeyOrBearer()
  const mailer = countedMailer(createMailer(app.config, app.log), app.metrics)
  app.addHook('onClose', async () => mailer.close())
  // The mail goes after the answer: an unreachable relay neither delays nor undoes the invitation.
  const deps = () => ({
    clock: app.clock,
    invite: async (enrollment: Parameters<typeof mailInvitation>[1]) =>
      app.background.run('enrollment invitation', () => mailInvitation(app.db, enrollment, { clock: app.clock, mailer }))
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
}

export default enrollments
