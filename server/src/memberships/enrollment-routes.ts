// Enrollments over HTTP: the members a subscription covers, and what a member belongs to.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { membershipEnrollmentRoutes as routes } from '@club/contract'
import { currentUser } from '../plugins/auth.js'
import { createEnrollment, deleteEnrollment, getEnrollment, listEnrollmentsOfUser, listSubscriptionEnrollments } from './enrollments.js'

const enrollments: FastifyPluginAsyncTypebox = async (app) => {
  const signedIn = app.auth.apiKeyOrBearer()
  app.route({
    ...routes.list,
    onRequest: signedIn,
    handler: (request) =>
      listSubscriptionEnrollments(app.db, request.params.id, request.query, currentUser(request), `/apis/v2/membership-subscriptions/${request.params.id}/enrollments`)
  })
  app.route({
    ...routes.create,
    onRequest: signedIn,
    handler: async (request, reply) => reply.code(201).send(await createEnrollment(app.db, request.params.id, request.body, currentUser(request), app.clock))
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
