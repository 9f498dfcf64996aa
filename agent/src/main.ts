#!/usr/bin/env node
// club-agent: reads the configuration, checks ffmpeg, starts the agent, stops it gracefully on
// SIGTERM/SIGINT so that every camera's last segment is a valid file.
import { LocalPassword } from './access/local-password.js'
import { Agent } from './agent.js'
import { parseCli, usage } from './cli.js'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { ConfigError, DEFAULT_CONFIG_PATH, loadAgentConfig } from './config.js'
import { loadOrCreateBoxKey } from './control/box-key.js'
import { setup, SetupError } from './setup.js'
import { aptInstaller, INSTALLER_STATE_DIR, systemInstallerClock, UpdateInstaller } from './update/installer.js'
import { agentVersion, readIdentity } from './identity.js'
import { createLogger } from './log.js'
import { FfmpegRunner } from './recorder/runner.js'

// ffmpeg names segments with strftime, which uses local time: in UTC the names carry UTC.
process.env.TZ = 'UTC'

async function main(): Promise<number> {
  let command
  try {
    command = parseCli(process.argv.slice(2))
  } catch (err) {
    console.error(`club-agent: ${(err as Error).message}`)
    return 2
  }
  if (command.kind === 'help') {
    console.log(usage())
    return 0
  }
  if (command.kind === 'version') {
    console.log(agentVersion())
    return 0
  }
  if (command.kind === 'setup') {
    const run = promisify(execFile)
    try {
      await setup(
        { configPath: command.configPath ?? DEFAULT_CONFIG_PATH, server: command.server, ...(command.name ? { name: command.name } : {}), ...(command.releaseKey ? { releaseKey: command.releaseKey } : {}), ...(command.fingerprints ? { fingerprints: command.fingerprints } : {}) },
        {
          fetch,
          checkFfmpeg: (config) => new FfmpegRunner({ ffmpegPath: config.ffmpegPath, ffprobePath: config.ffprobePath }).check(),
          startService: async () => {
            if (!command.start) return
            await run('systemctl', ['enable', 'club-agent.service'])
            // restart, not start: setup run again makes a running agent read the new configuration.
            await run('systemctl', ['restart', 'club-agent.service'])
          },
          identity: (config) => readIdentity(config.deviceId),
          boxKey: (config) => loadOrCreateBoxKey(config.stateDir),
          out: (line) => console.log(line)
        }
      )
    } catch (err) {
      if (err instanceof SetupError) {
        console.error(`club-agent setup: ${err.message}`)
        return 1
      }
      throw err
    }
    return 0
  }
  let config
  try {
    config = loadAgentConfig(command.configPath)
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`club-agent: invalid configuration: ${err.message}`)
      return 1
    }
    throw err
  }
  if (command.kind === 'local-password') {
    // Only the password on stdout, so a script can take it; the explanation goes to stderr.
    const password = await new LocalPassword({ stateDir: config.stateDir }).rotate()
    console.error('A new password for the local API of this box. It is shown this once; the previous one and every session made with it stop working.')
    console.log(password)
    return 0
  }
  if (command.kind === 'install-update') {
    let publicKeyPem: string
    try {
      publicKeyPem = readFileSync(config.releaseKeyPath, 'utf8')
    } catch {
      console.error(`club-agent install-update: no release key at ${config.releaseKeyPath}`)
      return 1
    }
    const installer = new UpdateInstaller({
      stateDir: config.stateDir,
      // The unit's StateDirectory (root's, mode 0700), which systemd names in STATE_DIRECTORY.
      installerStateDir: process.env.STATE_DIRECTORY?.split(':')[0] || INSTALLER_STATE_DIR,
      // This installer is the installed package's own program: its version is the installed one.
      installedVersion: agentVersion(),
      publicKeyPem,
      packages: aptInstaller,
      clock: systemInstallerClock,
      log: (line) => console.log(line)
    })
    const record = await installer.run(command.version)
    return record ? 1 : 0
  }
  const log = createLogger(config.logLevel)
  const runner = new FfmpegRunner({ ffmpegPath: config.ffmpegPath, ffprobePath: config.ffprobePath })
  const missing = await runner.check()
  if (missing) {
    console.error(`club-agent: ${missing}`)
    return 1
  }
  const identity = await readIdentity(config.deviceId)
  // A match's ffmpeg at the lowest priority (nice 19, idle I/O): the recordings and players' replays first.
  const backgroundRunner = new FfmpegRunner({ ffmpegPath: config.ffmpegPath, ffprobePath: config.ffprobePath, lowestPriority: true })
  const agent = new Agent({ config, identity, runner, backgroundRunner, log })
  await agent.start()

  await new Promise<void>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      log.info({ signal }, 'stopping: closing every recording')
      resolve()
    }
    process.once('SIGTERM', onSignal)
    process.once('SIGINT', onSignal)
  })
  await agent.stop()
  log.info('stopped')
  return 0
}

main().then(
  (code) => {
    process.exitCode = code
  },
  (err) => {
    console.error(`club-agent: ${(err as Error).stack ?? err}`)
    process.exitCode = 1
  }
)
