#!/usr/bin/env node
// Reads the configuration, builds the app, listens, and closes with grace on SIGINT/SIGTERM.
import { buildApp } from './app.js'
import { leftoverReleaseKeyWarnings } from './agent-releases/keys.js'
import { ConfigError, developmentOnlySettings, loadConfig, productionRefusal } from './config.js'
import { consoleStream } from './logging.js'

async function main(): Promise<void> {
  let config
  try {
    config = loadConfig()
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`club server: ${err.message}\n`)
      process.exitCode = 1
      return
    }
    throw err
  }
  const refused = productionRefusal(config, 'start')
  if (refused !== null) {
    process.stderr.write(`club server: ${refused}\n`)
    process.exitCode = 1
    return
  }
  const unsafe = developmentOnlySettings(config)
  const app = await buildApp({ config, logStream: await consoleStream(process.stdout.isTTY === true) })
  // An upgraded server may still hold the release key it used to sign with: say so at every start.
  for (const warning of leftoverReleaseKeyWarnings(process.env, process.cwd())) app.log.warn({ setting: 'AGENT_RELEASE_PUBLIC_KEYS' }, warning)
  let closing = false
  const shutdown = async (signal: string) => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down: finishing in-flight requests')
    // A request that never ends must not keep the process alive past the timeout.
    const timer = setTimeout(() => {
      app.log.error('shutdown timed out; exiting')
      process.exit(1)
    }, config.SHUTDOWN_TIMEOUT_SECONDS * 1000)
    timer.unref()
    try {
      await app.close()
      app.log.info('closed')
    } catch (err) {
      app.log.error({ err }, 'error while closing')
      process.exitCode = 1
    }
  }
  process.once('SIGINT', () => void shutdown('SIGINT'))
  process.once('SIGTERM', () => void shutdown('SIGTERM'))
  await app.listen({ port: config.PORT, host: config.HOST })
  // Once, right after the start line: what would stop this server from starting in production.
  if (unsafe.length > 0) app.log.warn({ settings: unsafe }, `development settings in use (refused with CLUB_ENV=production): ${unsafe.join('; ')}`)
  // Every process offers to send webhook deliveries; the one holding the lease does.
  app.webhookDelivery.start()
  if (config.SCHEDULER === 'internal') {
    // Its catch-up runs in the background; the server already answers meanwhile.
    app.scheduler.start().then(
      (caughtUp) => app.log.info({ caughtUp: caughtUp.filter((c) => c.outcome === 'ran').map((c) => c.job) }, 'scheduled jobs started'),
      (err: unknown) => app.log.error({ err }, 'the scheduler failed to start')
    )
  } else {
    app.log.info('SCHEDULER=external: no job runs on a schedule here; a scheduler outside calls the receivers')
  }
}

main().catch((err) => {
  process.stderr.write(`club server: failed to start: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exitCode = 1
})
