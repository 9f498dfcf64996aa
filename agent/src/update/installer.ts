// The privileged half of an update (`club-agent install-update VERSION`, run as root by the unit
// club-agent-update@VERSION.service that the agent starts). It trusts nothing the agent's user
// wrote: both packages are checked again against the release key in /etc/club-agent (root's), and
// the control file of what is installed must name the version and architecture that were signed. Then
// it installs the new one, waits up to 5 minutes for the new version to reach the server, and
// otherwise puts the previous one back and records ROLLED_BACK with the reason, which the agent
// reports at its next poll. It never goes back to an older version than the installed one unless it
// is the version it replaced itself, as recorded in its own root-owned folder (installerStateDir):
// the agent's user asks, but cannot choose an old signed release with known bugs. Files in the
// agent's folder are read without following symbolic links.
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { promisify } from 'node:util'
import { ReleaseDownload } from '@club/contract'
import { Value } from 'typebox/value'
import { writeFileAtomically } from '../control/state.js'
import { HEALTHY_WITHIN_MS, downgradeRefusal, installedRecords, packageMismatch, updateFiles, type InstalledRecord, type UpdateRecord } from './decide.js'
import { UpdateFiles, assertRealDirectory, readPlainFile } from './files.js'

const run = promisify(execFile)

/** Installs a package and (re)starts what it installed. */
export interface PackageInstaller {
  install(file: string): Promise<void>
}

export interface InstallerClock {
  now(): Date
  sleep(ms: number): Promise<void>
}

/** The installer's own folder in the package (club-agent-update@.service's StateDirectory). */
export const INSTALLER_STATE_DIR = '/var/lib/club-agent-installer'

export type { InstalledRecord }

export interface InstallerOptions {
  /** The agent's state folder (its user writes it): the request and the packages. */
  stateDir: string
  /** The installer's own folder, root's only (the unit's StateDirectory): its InstalledRecord. */
  installerStateDir: string
  /** The version installed now (the package this installer itself comes from). */
  installedVersion: string
  publicKeyPem: string
  packages: PackageInstaller
  clock: InstallerClock
  log: (message: string) => void
  /** How often the new version's word is looked for. */
  checkEveryMs?: number
}

export class UpdateInstaller {
  private readonly files: UpdateFiles

  constructor(private readonly options: InstallerOptions) {
    this.files = new UpdateFiles(options.stateDir)
  }

  /**
   * Installs `version` as the agent asked; answers the record left for the agent. What is installed
   * is a copy of the bytes checked, in a folder only root can write: the agent's user owns the state
   * folder and could otherwise swap a file between the check and the install.
   */
  async run(version: string): Promise<UpdateRecord | undefined> {
    const copies = mkdtempSync(join(tmpdir(), 'club-agent-install-'))
    try {
      return await this.install(version, copies)
    } finally {
      rmSync(copies, { recursive: true, force: true })
    }
  }

  private async install(version: string, copies: string): Promise<UpdateRecord | undefined> {
    const { log, clock } = this.options
    // The folder first: the request is read only from the agent's own folder, not through a link.
    try {
      assertRealDirectory(this.files.dir)
    } catch (err) {
      return this.finish({ version, state: 'FAILED', reason: `${this.files.dir} is not a folder of its own (${(err as Error).message})` })
    }
    const request = this.files.request()
    const wellFormed = request && Value.Check(ReleaseDownload, request.release) && (!request.rollback || Value.Check(ReleaseDownload, request.rollback))
    if (!wellFormed || request.release.version !== version) return this.finish({ version, state: 'FAILED', reason: `no request to install ${version}` })
    const installed = this.options.installedVersion
    const earlier = this.installedRecord()
    const refusal = downgradeRefusal(version, installed, earlier?.previous)
    if (refusal) return this.finish({ version, state: 'FAILED', reason: refusal })
    const checked = await this.checkedCopy(request.release, copies)
    if ('refused' in checked) return this.finish({ version, state: 'FAILED', reason: checked.refused })
    // Only the installed version is put back: the request names it, but the agent's user wrote it.
    const rollback =
      request.rollback?.version === installed ? await this.checkedCopy(request.rollback, copies) : { refused: `no package of the installed ${installed} to put back` }
    const rollbackFile = 'file' in rollback ? rollback.file : undefined
    const records = installedRecords(earlier, installed, version)
    const since = clock.now()
    // Only a word written after this install counts: the file is gone until the new version writes it.
    this.files.forgetPolled()
    // Before the install: a crash from here on still finds the version to go back to.
    this.saveInstalledRecord(records.during)
    const putBack = { file: rollbackFile, record: records.afterRollback }
    log(`installing club-agent ${version}`)
    try {
      await this.options.packages.install(checked.file)
    } catch (err) {
      return this.rollBack(version, `the package did not install: ${firstLine(err)}`, putBack)
    }
    const deadline = since.getTime() + HEALTHY_WITHIN_MS
    for (;;) {
      const polled = this.files.polled()
      if (polled && polled.version === version) {
        log(`club-agent ${version} reached the server: the update is done`)
        return this.finish(undefined)
      }
      if (clock.now().getTime() >= deadline) break
      await clock.sleep(this.options.checkEveryMs ?? 2000)
    }
    return this.rollBack(version, `club-agent ${version} did not reach the server within 5 minutes of its install`, putBack)
  }

  /** Puts the previous package back, then the installer's record as it was before; a failure keeps `during`. */
  private async rollBack(version: string, reason: string, rollback: { file: string | undefined; record: InstalledRecord | undefined }): Promise<UpdateRecord> {
    const rollbackFile = rollback.file
    if (!rollbackFile) return this.finish({ version, state: 'FAILED', reason: `${reason}; nothing to put back` })
    this.options.log(`${reason}: putting the previous version back`)
    try {
      await this.options.packages.install(rollbackFile)
    } catch (err) {
      return this.finish({ version, state: 'FAILED', reason: `${reason}; putting the previous version back failed too: ${firstLine(err)}` })
    }
    this.saveInstalledRecord(rollback.record)
    return this.finish({ version, state: 'ROLLED_BACK', reason })
  }

  /**
   * The package checked against the release key, copied into `copies` as read, its control file
   * naming what was signed; or why it was refused.
   */
  private async checkedCopy(release: ReleaseDownload, copies: string): Promise<{ file: string } | { refused: string }> {
    const file = this.files.path(updateFiles.complete(release.version))
    let bytes: Buffer
    try {
      assertRealDirectory(this.files.dir)
      bytes = readPlainFile(file, { size: release.size })
      // Checked again after the open: a folder swapped for a link meanwhile is refused.
      assertRealDirectory(this.files.dir)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT') return { refused: `the package of ${release.version} is not in ${this.files.dir}` }
      return { refused: `the package of ${release.version} is not a plain file of ${this.files.dir} (${code === 'ELOOP' ? 'a symbolic link' : (err as Error).message})` }
    }
    const mismatch = packageMismatch(release, bytes, this.options.publicKeyPem)
    if (mismatch) return { refused: `club-agent ${release.version}: ${mismatch}` }
    const copy = join(copies, basename(file))
    writeFileSync(copy, bytes, { mode: 0o600, flag: 'wx' })
    const named = await controlMismatch(copy, release)
    return named ? { refused: `club-agent ${release.version}: ${named}` } : { file: copy }
  }

  private installedRecordPath(): string {
    return join(this.options.installerStateDir, 'installed.json')
  }

  /** The installer's own record, when it is for the installed version (a package installed by hand since makes it stale). */
  private installedRecord(): InstalledRecord | undefined {
    try {
      const record = JSON.parse(readPlainFile(this.installedRecordPath()).toString('utf8')) as InstalledRecord
      return record.installed === this.options.installedVersion ? record : undefined
    } catch {
      return undefined
    }
  }

  private saveInstalledRecord(record: InstalledRecord | undefined): void {
    if (!record) return rmSync(this.installedRecordPath(), { force: true })
    mkdirSync(this.options.installerStateDir, { recursive: true, mode: 0o700 })
    writeFileAtomically(this.options.installerStateDir, this.installedRecordPath(), JSON.stringify(record, null, 2))
  }

  private finish<R extends UpdateRecord | undefined>(record: R): R {
    this.files.saveRecord(record)
    if (record) this.options.log(`update of ${record.version}: ${record.state}${record.reason ? ` (${record.reason})` : ''}`)
    return record
  }
}

/**
 * Whether the package's control file names what was signed: club-agent, its version and its
 * architecture (the signature covers them, the package is what apt-get believes). Answers the
 * mismatch, or undefined.
 */
async function controlMismatch(file: string, release: Pick<ReleaseDownload, 'version' | 'architecture'>): Promise<string | undefined> {
  let stdout: string
  try {
    ;({ stdout } = await run('dpkg-deb', ['--field', file, 'Package', 'Version', 'Architecture'], { maxBuffer: 1 << 20 }))
  } catch (err) {
    return `dpkg-deb cannot read its control file: ${firstLine(err)}`
  }
  const field = (name: string) => new RegExp(`^${name}: *(.*)$`, 'm').exec(stdout)?.[1]?.trim() ?? ''
  const found = `${field('Package')} ${field('Version')} (${field('Architecture')})`
  const signed = `club-agent ${release.version} (${release.architecture})`
  return found === signed ? undefined : `the package is ${found}, not the signed ${signed}`
}

function firstLine(err: unknown): string {
  const e = err as { stderr?: string; message?: string }
  return (e.stderr?.trim().split('\n').pop() ?? e.message ?? String(err)).slice(0, 300)
}

/**
 * Debian's way: apt-get installs the package (and what it depends on) from the file; the package's
 * postinst restarts the agent. Downgrades are allowed: putting the previous version back is one.
 */
export const aptInstaller: PackageInstaller = {
  async install(file) {
    await run('apt-get', ['install', '-y', '--allow-downgrades', '-o', 'Dpkg::Options::=--force-confold', file], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      maxBuffer: 16 << 20
    })
  }
}

export const systemInstallerClock: InstallerClock = {
  now: () => new Date(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms))
}
