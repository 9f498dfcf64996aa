// The agent's side of an update: fetches the package the server announces (with the box's access
// token, resuming a cut download from where it stopped), checks it against the release key, waits
// until the box is idle, then asks the privileged installer to install it (updateCommand). It never
// installs anything itself: the agent runs unprivileged.
import { spawn } from 'node:child_process'
import { createWriteStream, existsSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { PendingUpdate, ReleaseDownload } from '@club/contract'
import type { Clock } from '../clock.js'
import { serverCall } from '../control/client.js'
import type { Logger } from '../log.js'
import { nextStep, packageMismatch, recordAfterStart, safeUnitVersion, updateFiles, updateReport, type UpdateRecord } from './decide.js'
import { UpdateFiles } from './files.js'

export interface UpdaterOptions {
  stateDir: string
  running: string
  /** Where device routes are (the configuration's apiBaseUrl, else serverUrl). */
  baseUrl: () => string
  accessToken: () => string | undefined
  releaseKeyPath: string
  exportsRunning: () => number
  /**
   * Starts the installer for a version (updateCommand): settles when the command exits, rejecting
   * with why it could not start the installer.
   */
  trigger: (version: string) => Promise<void>
  clock: Clock
  log: Logger
  timeoutMs: number
}

/** A package refused: reported FAILED, not fetched again until the target changes. */
class Refused extends Error {}

export class Updater {
  private readonly files: UpdateFiles
  private running?: Promise<void>
  private triggered?: string

  constructor(private readonly options: UpdaterOptions) {
    this.files = new UpdateFiles(options.stateDir)
  }

  /** At start: an update of the version now running is over, whichever way it went. */
  started(): void {
    const record = this.files.record()
    const after = recordAfterStart(record, this.options.running)
    if (after !== record) this.files.saveRecord(after)
  }

  /** The poll's report of the update. */
  report() {
    return updateReport(this.files.record())
  }

  /** The box reached the server as the version it runs: what the installer waits for. */
  polled(): void {
    this.files.savePolled(this.options.running, this.options.clock.now())
  }

  /** One step towards the pending update; a step already under way is not started twice. */
  onPending(pending: PendingUpdate | undefined): Promise<void> {
    this.running ??= this.step(pending).finally(() => (this.running = undefined))
    return this.running
  }

  private async step(pending: PendingUpdate | undefined): Promise<void> {
    const { log, running } = this.options
    const record = this.files.record()
    const downloaded = pending && this.complete(pending.version) ? pending.version : undefined
    const step = nextStep({ pending, running, record, downloaded, exportsRunning: this.options.exportsRunning(), now: this.options.clock.now() })
    switch (step.action) {
      case 'none':
      case 'gave-up':
        return
      case 'wait':
        this.setRecord({ version: pending!.version, state: 'WAITING_FOR_IDLE' })
        log.info({ targetVersion: pending!.version, why: step.why }, 'update waits')
        return
      case 'download':
        this.setRecord({ version: step.release.version, state: 'DOWNLOADING' })
        try {
          await this.fetchChecked(step.release)
          if (pending!.rollback && pending!.rollback.version === running) await this.fetchChecked(pending!.rollback)
        } catch (err) {
          if (err instanceof Refused) {
            this.setRecord({ version: step.release.version, state: 'FAILED', reason: err.message })
            log.error({ targetVersion: step.release.version, reason: err.message }, 'update refused: the package is not what the server signed')
            return
          }
          // Cut or refused by the network: the next poll resumes from what arrived.
          log.warn({ targetVersion: step.release.version, err: (err as Error).message }, 'update download interrupted; resuming later')
          return
        }
        // Checked: go on at once (the next poll would too).
        return this.step(pending)
      case 'install': {
        if (this.triggered === step.release.version) return
        if (!safeUnitVersion(step.release.version)) {
          this.setRecord({ version: step.release.version, state: 'FAILED', reason: 'the version cannot name the installer unit' })
          return
        }
        const rollback = pending!.rollback && this.complete(pending!.rollback.version) ? pending!.rollback : undefined
        this.files.saveRequest({ release: step.release, ...(rollback ? { rollback } : {}) })
        this.setRecord({ version: step.release.version, state: 'INSTALLING' })
        this.triggered = step.release.version
        log.info({ targetVersion: step.release.version, rollback: rollback?.version }, 'update: starting the installer')
        try {
          await this.options.trigger(step.release.version)
        } catch (err) {
          // Refused by systemctl or polkit: no installer runs, so nothing else would end INSTALLING.
          this.triggered = undefined
          const reason = `the installer did not start: ${(err as Error).message}`
          this.setRecord({ version: step.release.version, state: 'FAILED', reason })
          log.error({ targetVersion: step.release.version, reason }, 'update failed')
        }
      }
    }
  }

  private setRecord(record: UpdateRecord): void {
    const old = this.files.record()
    if (old?.version === record.version && old.state === record.state && old.reason === record.reason) return
    this.files.saveRecord(record)
  }

  private complete(version: string): boolean {
    return existsSync(this.files.path(updateFiles.complete(version)))
  }

  /** Downloads a package into its partial file (resuming), checks it, and names it complete. */
  private async fetchChecked(release: ReleaseDownload): Promise<void> {
    const complete = this.files.path(updateFiles.complete(release.version))
    if (existsSync(complete)) return
    this.files.ensureDir()
    const partial = this.files.path(updateFiles.partial(release.version))
    let have = existsSync(partial) ? statSync(partial).size : 0
    if (have > release.size) {
      rmSync(partial)
      have = 0
    }
    if (have < release.size) await this.download(release, partial, have)
    let publicKey: string
    try {
      publicKey = readFileSync(this.options.releaseKeyPath, 'utf8')
    } catch {
      throw new Refused(`no release key at ${this.options.releaseKeyPath} (club-agent setup writes it)`)
    }
    const mismatch = packageMismatch(release, readFileSync(partial), publicKey)
    if (mismatch) {
      rmSync(partial, { force: true })
      throw new Refused(`club-agent ${release.version}: ${mismatch}`)
    }
    renameSync(partial, complete)
  }

  private async download(release: ReleaseDownload, partial: string, have: number): Promise<void> {
    const token = this.options.accessToken()
    if (!token) throw new Error('no access token yet')
    // A package takes longer than a poll: up to 10 minutes, body included.
    const server = { baseUrl: this.options.baseUrl(), timeoutMs: Math.max(this.options.timeoutMs, 10 * 60_000) }
    const res = await serverCall(server, release.path, {
      headers: { authorization: `Bearer ${token}`, ...(have > 0 ? { range: `bytes=${have}-` } : {}) }
    })
    if (res.status === 416) {
      // What is on disk is no prefix of the package: start over next time.
      rmSync(partial, { force: true })
      throw new Error('the server refused the range: starting over')
    }
    if (res.status !== 200 && res.status !== 206) throw new Error(`the download answered ${res.status}`)
    if (!res.body) throw new Error('the download has no body')
    // A 200 is the whole package: what was on disk is replaced.
    const append = res.status === 206 && have > 0
    await pipeline(Readable.fromWeb(res.body as never), createWriteStream(partial, { flags: append ? 'a' : 'w', mode: 0o600 }))
  }
}

/**
 * Runs updateCommand with the version as "$1" (never spliced into the shell text). A command that
 * does not name "$1" gets it appended, as before. Settles when it exits: an exit code other than 0
 * rejects with the first line of its stderr (all of it is logged). Detached (its own process group),
 * as before; the default command (systemctl --no-block) exits at once.
 */
export function runUpdateCommand(command: string, version: string, log: Logger): Promise<void> {
  const text = command.includes('$1') ? command : `${command} "$1"`
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', text, 'club-agent-update', version], { detached: true, stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < 8192) stderr += chunk
    })
    child.once('error', (err) => reject(new Error(`the update command could not run: ${err.message}`)))
    child.once('close', (code, signal) => {
      if (code === 0) return resolve()
      log.warn({ targetVersion: version, code, signal, stderr: stderr.trim() }, 'the update command failed')
      const first = stderr.trim().split('\n')[0]
      reject(new Error(first || `the update command exited with ${code ?? signal}`))
    })
  })
}
