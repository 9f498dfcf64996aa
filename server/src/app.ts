// Builds the API: plugins, then route modules. Never listens; main.ts does, tests use inject().
import type { DestinationStream } from 'pino'
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { systemClock, type Clock } from './clock.js'
import { parseTrustProxy, type Config } from './config.js'
import { migrateToLatest, openDatabase, type Db } from './db/database.js'
import forumConnectRoutes from './forum-connect/routes.js'
import jobRoutes from './jobs/routes.js'
import healthRoutes from './health/routes.js'
import membershipRoutes from './memberships/routes.js'
import enrollmentRoutes from './memberships/enrollment-routes.js'
import orderRoutes from './orders/routes.js'
import packageRoutes from './packages/routes.js'
import productRoutes from './products/routes.js'
import replayRoutes from './replays/routes.js'
import matchRoutes from './matches/routes.js'
import footageAccessRoutes from './footage-access/routes.js'
import eventRoutes from './events/routes.js'
import consoleRoutes from './console/routes.js'
import replayPageRoutes from './replay-page/routes.js'
import doNotFilmRoutes from './do-not-film/routes.js'
import footageTakedownRoutes from './footage-takedowns/routes.js'
import { createPaymentProvider, type PaymentProvider } from './payments/index.js'
import { createLogger, RequestLog, requestLogging } from './logging.js'
import authorizationRoutes from './oauth2/authorization-routes.js'
import oauth2Routes from './oauth2/routes.js'
import { TokenEndpoint } from './oauth2/service.js'
import passwordResetRoutes from './password-reset/routes.js'
import auth from './plugins/auth.js'
import background from './plugins/background.js'
import backups from './plugins/backups.js'
import bodyParsing from './plugins/body-parsing.js'
import cors from './plugins/cors.js'
import errors, { frameworkErrorHandler } from './plugins/errors.js'
import jobs from './plugins/jobs.js'
import openapi from './plugins/openapi.js'
import metrics from './plugins/metrics.js'
import rateLimit from './plugins/rate-limit.js'
import redis from './plugins/redis.js'
import requestId, { requestIdGenerator } from './plugins/request-id.js'
import securityHeaders from './plugins/security-headers.js'
import services from './plugins/services.js'
import { createValidatorCompiler } from './plugins/validation.js'
import { serializerCompiler } from './plugins/serialization.js'
import replayServerRoutes from './replay-servers/routes.js'
import agentReleaseRoutes from './agent-releases/routes.js'
import agentRolloutRoutes from './agent-rollouts/routes.js'
import { camerasRecordingSince } from './agent-rollouts/box-health.js'
import type { RecordingSince } from './agent-rollouts/service.js'
import signupRoutes from './signup/routes.js'
import templateRoutes from './templates/routes.js'
import userRoutes from './users/routes.js'
import venueRoutes from './venue/routes.js'
import webhookRoutes from './webhooks/routes.js'
import webhookEndpointRoutes from './webhook-endpoints/routes.js'
import webhookDelivery from './plugins/webhook-delivery.js'

export interface AppOptions {
  config: Config
  /** Defaults to the system clock; tests pass a ManualClock. */
  clock?: Clock
  /** Where log lines go; stdout by default. Tests capture it. */
  logStream?: DestinationStream
  /** An open database to use instead of opening DATABASE_URL; the caller closes it. */
  db?: Db
  /** Defaults to the provider PAYMENT_PROVIDER names; tests pass their own to complete authentications. */
  paymentProvider?: PaymentProvider
  /** Box health for staged rollouts (agent-rollouts/box-health.ts); tests pass simulated boxes' health. */
  recordingSince?: RecordingSince
  /** Registered last, before the app is ready: extra routes for tests, or a deployment's own plugins. */
  extend?: (app: FastifyInstance) => Promise<void>
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config } = options
  const app = Fastify({
    loggerInstance: createLogger(config.LOG_LEVEL, options.logStream) as FastifyBaseLogger,
    // One line per request at the answer, not Fastify's pair of lines (incoming, completed).
    logController: new RequestLog(),
    // Fastify takes a hop count too, though its types leave numbers out.
    trustProxy: parseTrustProxy(config.TRUST_PROXY) as boolean | string[],
    bodyLimit: config.BODY_LIMIT_BYTES,
    return503OnClosing: true,
    frameworkErrors: frameworkErrorHandler,
    genReqId: requestIdGenerator(parseTrustProxy(config.TRUST_PROXY)),
    // Keep-alive connections would hold a graceful close open forever.
    forceCloseConnections: 'idle'
  }).withTypeProvider<TypeBoxTypeProvider>()
  app.setValidatorCompiler(createValidatorCompiler())
  app.setSerializerCompiler(serializerCompiler)

  const db = options.db ?? openDatabase(config.DATABASE_URL, {
    readCacheEntries: config.READ_CACHE_ENTRIES,
    busyTimeoutMs: config.DATABASE_BUSY_TIMEOUT_MS,
    poolMax: config.DATABASE_POOL_MAX,
    cacheTrust: {
      lost: (err) => app.log.warn({ err: err.message }, 'the database does not answer: no read cache is trusted until it does'),
      restored: () => app.log.info('the database answers again: read caches are trusted again')
    },
    checkpointsFailed: (err) =>
      app.log.warn({ err: err.message }, "the background checkpoint worker stopped: SQLite's checkpoints run in the request path again, every 1,000 pages")
  })
  try {
    await migrateToLatest(db)
  } catch (err) {
    if (!options.db) await db.destroy()
    throw err
  }

  await app.register(services, {
    db,
    config,
    clock: options.clock ?? systemClock,
    paymentProvider: options.paymentProvider ?? createPaymentProvider(config),
    ownsDb: !options.db
  })
  await app.register(requestId)
  await app.register(requestLogging)
  await app.register(metrics)
  await app.register(background)
  await app.register(backups)
  await app.register(jobs)
  await app.register(webhookDelivery)
  await app.register(errors)
  await app.register(securityHeaders)
  // Before the rate limit and the guards: a preflight is answered in its onRequest hook, uncounted
  // and without credentials (browsers send none on a preflight).
  await app.register(cors)
  await app.register(bodyParsing)
  await app.register(openapi)
  await app.register(redis)
  await app.register(rateLimit)
  await app.register(auth)
  app.decorate('tokenEndpoint', new TokenEndpoint())

  await app.register(healthRoutes)
  await app.register(oauth2Routes)
  await app.register(userRoutes)
  await app.register(authorizationRoutes)
  await app.register(forumConnectRoutes)
  await app.register(passwordResetRoutes)
  await app.register(signupRoutes)
  await app.register(venueRoutes)
  await app.register(templateRoutes)
  await app.register(replayServerRoutes)
  await app.register(agentReleaseRoutes)
  await app.register(agentRolloutRoutes, { recordingSince: options.recordingSince ?? camerasRecordingSince })
  await app.register(membershipRoutes)
  await app.register(enrollmentRoutes)
  await app.register(orderRoutes)
  await app.register(packageRoutes)
  // Scheduled jobs (issue 14): the receivers, and what admins read of the runs.
  await app.register(webhookRoutes)
  await app.register(jobRoutes)
  await app.register(productRoutes)
  await app.register(replayRoutes)
  await app.register(matchRoutes)
  // Every look at footage, for admins (issue 33).
  await app.register(footageAccessRoutes)
  // The court page players open from the sign's QR code (issue 25).
  await app.register(replayPageRoutes)
  await app.register(doNotFilmRoutes)
  await app.register(footageTakedownRoutes)
  // The event feed for integrators (issue 35).
  await app.register(eventRoutes)
  // Where events are sent, signed, and how each delivery went (issue 35).
  await app.register(webhookEndpointRoutes)
  // The admin console (issue 17): a page over the routes above.
  await app.register(consoleRoutes)

  if (options.extend) await app.register(async (scope) => options.extend!(scope as unknown as FastifyInstance))

  await app.ready()
  await greetFirstRun(app as unknown as FastifyInstance)
  return app as unknown as FastifyInstance
}

/** On a database without users, one line telling the operator how to make the first admin. */
async function greetFirstRun(app: FastifyInstance): Promise<void> {
  const anyone = await app.db.selectFrom('users').select('id').limit(1).executeTakeFirst()
  if (anyone) return
  app.log.info(
    "no users yet: create the first admin with  pnpm -s club users create --email you@example.org --password '<8+ characters>' --role admin"
  )
}
