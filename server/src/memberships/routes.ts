// Membership plans (admin), and the plans on sale to members.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { membershipPlanRoutes } from '@club/contract'
import { createMembership, deleteMembership, getMembership, listMemberships, patchMembership } from './plans.js'

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
}

export default memberships
