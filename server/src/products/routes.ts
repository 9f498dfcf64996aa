// The product catalogue (admin), products on sale, buying them, and the deprecated offering list.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { productOfferingRoutes, productRoutes, purchaseRoutes } from '@club/contract'
import { currentUser } from '../plugins/auth.js'
import { sendSharedAnswer } from '../reply.js'
import { createProduct, deleteProduct, getProduct, listProducts, patchProduct } from './catalogue.js'
import { deprecationHeaders, listProductOfferings } from './offerings.js'
import { confirmPurchase, createPurchase } from './purchases.js'

const products: FastifyPluginAsyncTypebox = async (app) => {
  const admins = app.auth.bearer({ roles: ['admin'] })
  const staff = app.auth.bearer({ roles: ['admin', 'staff'] })
  const signedIn = app.auth.apiKeyOrBearer()
  const deps = () => ({ clock: app.clock, currency: app.config.CURRENCY })
  const purchaseDeps = () => ({ clock: app.clock, provider: app.paymentProvider, clubTimezone: app.config.CLUB_TIMEZONE, currency: app.config.CURRENCY })

  app.route({ ...productRoutes.create, onRequest: admins, handler: async (request, reply) => reply.code(201).send(await createProduct(app.db, request.body, deps())) })
  app.route({ ...productRoutes.list, onRequest: staff, handler: (request) => listProducts(app.db, request.query, false, productRoutes.list.url) })
  app.route({ ...productRoutes.get, onRequest: staff, handler: (request) => getProduct(app.db, request.params.id) })
  app.route({ ...productRoutes.patch, onRequest: admins, handler: (request) => patchProduct(app.db, request.params.id, request.body, deps()) })
  app.route({
    ...productRoutes.delete,
    onRequest: admins,
    handler: async (request, reply) => {
      const withdrawn = await deleteProduct(app.db, request.params.id, deps())
      return withdrawn ? reply.code(200).send(withdrawn) : reply.code(204).send(null)
    }
  })
  app.route({ ...productRoutes.onSale, onRequest: signedIn, handler: (request) => listProducts(app.db, request.query, true, productRoutes.onSale.url) })

  app.route({
    ...purchaseRoutes.create,
    onRequest: signedIn,
    handler: async (request, reply) => {
      const { created, purchase } = await createPurchase(app.db, request.body, currentUser(request), request.headers['idempotency-key'], purchaseDeps())
      return reply.code(created ? 201 : 200).send(purchase)
    }
  })
  app.route({ ...purchaseRoutes.confirm, onRequest: signedIn, handler: (request) => confirmPurchase(app.db, request.params.id, currentUser(request), purchaseDeps()) })

  // Deprecated: its headers go on every answer, refusals too, so they are set before the guard runs.
  const headers = deprecationHeaders(app.config.PRODUCT_OFFERINGS_SUNSET)
  app.route({
    ...productOfferingRoutes.list,
    onRequest: [
      (_request, reply, done) => {
        reply.headers(headers)
        done()
      },
      app.auth.bearer()
    ],
    handler: async (request, reply) =>
      sendSharedAnswer(reply, await listProductOfferings(app.db, request.query, currentUser(request), app.clock.now()))
  })
}

export default products
