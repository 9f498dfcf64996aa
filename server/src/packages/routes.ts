// Packages (issued, read, renamed, cancelled), their redemptions, and the areas' session periods
// that booking constraints are matched against.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { areaSessionPeriodRoutes, packageRoutes } from '@club/contract'
import { currentUser } from '../plugins/auth.js'
import { cancelRedemption, getRedemption, giveBackRedemption, listRedemptions, redeemFromAny, redeemFromPackage } from './redemptions.js'
import { cancelPackage, createPackage, getPackage, listPackages, patchPackage } from './service.js'
import { getSessionPeriods, setSessionPeriods } from './session-periods.js'

const packages: FastifyPluginAsyncTypebox = async (app) => {
  const staff = app.auth.bearer({ roles: ['admin', 'staff'] })
  const admins = app.auth.bearer({ roles: ['admin'] })
  const signedIn = app.auth.apiKeyOrBearer()
  const deps = () => ({ clock: app.clock, clubTimezone: app.config.CLUB_TIMEZONE })
  const redemptionDeps = () => ({ ...deps(), currency: app.config.CURRENCY, lateCancelHours: app.config.PACKAGE_LATE_CANCEL_HOURS })

  app.route({
    ...packageRoutes.create,
    onRequest: staff,
    handler: async (request, reply) => reply.code(201).send(await createPackage(app.db, request.body, currentUser(request), deps()))
  })
  app.route({
    ...packageRoutes.list,
    onRequest: signedIn,
    handler: (request) => listPackages(app.db, request.query, currentUser(request), app.clock, packageRoutes.list.url)
  })
  app.route({ ...packageRoutes.get, onRequest: signedIn, handler: (request) => getPackage(app.db, request.params.id, currentUser(request), app.clock) })
  app.route({
    ...packageRoutes.patch,
    onRequest: staff,
    handler: (request) => patchPackage(app.db, request.params.id, request.body, currentUser(request), app.clock)
  })
  app.route({
    ...packageRoutes.cancel,
    onRequest: staff,
    handler: (request) => cancelPackage(app.db, request.params.id, currentUser(request), app.paymentProvider, app.clock)
  })
  app.route({
    ...packageRoutes.redeem,
    onRequest: signedIn,
    handler: async (request, reply) => {
      const { created, redemption } = await redeemFromPackage(app.db, request.params.id, request.body, currentUser(request), redemptionDeps())
      return reply.code(created ? 201 : 200).send(redemption)
    }
  })
  app.route({
    ...packageRoutes.redeemAny,
    onRequest: signedIn,
    handler: async (request, reply) => {
      const { created, redemption } = await redeemFromAny(app.db, request.body, currentUser(request), redemptionDeps())
      return reply.code(created ? 201 : 200).send(redemption)
    }
  })
  app.route({ ...packageRoutes.listRedemptions, onRequest: signedIn, handler: (request) => listRedemptions(app.db, request.params.id, currentUser(request)) })
  app.route({
    ...packageRoutes.getRedemption,
    onRequest: signedIn,
    handler: (request) => getRedemption(app.db, request.params.id, request.params.redemptionId, currentUser(request))
  })
  app.route({
    ...packageRoutes.giveBackRedemption,
    onRequest: staff,
    handler: (request) => giveBackRedemption(app.db, request.params.id, request.params.redemptionId, request.body.reason, currentUser(request), app.clock)
  })
  app.route({
    ...packageRoutes.cancelRedemption,
    onRequest: signedIn,
    handler: (request) => cancelRedemption(app.db, request.params.id, request.params.redemptionId, currentUser(request), redemptionDeps())
  })

  app.route({ ...areaSessionPeriodRoutes.get, onRequest: admins, handler: (request) => getSessionPeriods(app.db, request.params.id, app.config.CLUB_TIMEZONE) })
  app.route({
    ...areaSessionPeriodRoutes.set,
    onRequest: admins,
    handler: (request) => setSessionPeriods(app.db, request.params.id, request.body, app.config.CLUB_TIMEZONE, app.clock)
  })
}

export default packages
