// An update's decisions, without a file, a socket or a process: what to do with the server's
// pendingUpdate, whether the box is idle enough to install, whether a package is the one the server
// signed, and what a poll reports. The shell (updater.ts, installer.ts) only looks and acts.
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto'
import { releaseSignedText, type PendingUpdate, type ReleaseDownload, type ReplayServerStatusQuery, type UpdateState } from '@club/contract'

/** No update from this long before an event on the box's courts until it ends. */
const BUSY_MARGIN_MS = 15 * 60_000
/** How long a new version has to poll the server with its new version before it is put back. */
export const HEALTHY_WITHIN_MS = 5 * 60_000

/** What the box remembers of its update (stateDir/update.json), and reports with each poll. */
export interface UpdateRecord {
  version: string
  state: UpdateState
  reason?: string
}

export type UpdateStep =
  | { action: 'none' }
  /** The server's target already came back ROLLED_BACK or FAILED here: not again until the target changes. */
  | { action: 'gave-up' }
  | { action: 'download'; release: ReleaseDownload }
  | { action: 'wait'; why: string }
  | { action: 'install'; release: ReleaseDownload }

/**
 * The next step for a pendingUpdate. `downloaded` is the version whose package is on disk, checked;
 * `running` the version this process is.
 */
export function nextStep(input: {
  pending: PendingUpdate | undefined
  running: string
  record: UpdateRecord | undefined
  downloaded: string | undefined
  exportsRunning: number
  now: Date
}): UpdateStep {
  const { pending, running, record } = input
  if (!pending || pending.version === running) return { action: 'none' }
  if (record && record.version === pending.version && (record.state === 'ROLLED_BACK' || record.state === 'FAILED')) return { action: 'gave-up' }
  const release = pending.release
  if (!release) return { action: 'wait', why: `the server holds no package of ${pending.version} for this box` }
  if (input.downloaded !== release.version) return { action: 'download', release }
  const busy = busyReason(pending, input.exportsRunning, input.now)
  return busy ? { action: 'wait', why: busy } : { action: 'install', release }
}

/**
 * Why the box must not install now, or undefined: a clip export runs; with an update window, it is
 * not open; without one, an event on its courts is under way or starts within 15 minutes.
 */
export function busyReason(pending: Pick<PendingUpdate, 'busy' | 'window'>, exportsRunning: number, now: Date): string | undefined {
  if (exportsRunning > 0) return `${exportsRunning} clip export(s) running`
  const t = now.getTime()
  if (pending.window) {
    const open = Date.parse(pending.window.start) <= t && t < Date.parse(pending.window.end)
    return open ? undefined : `the update window opens at ${pending.window.start}`
  }
  const event = (pending.busy ?? []).find((b) => Date.parse(b.start) - BUSY_MARGIN_MS <= t && t < Date.parse(b.end))
  return event ? `an event on its courts runs ${event.start} to ${event.end}` : undefined
}

/** Every public key in a PEM text (the pinned release keys: one or more blocks, as setup writes them). */
export function publicKeysOf(pemText: string): KeyObject[] {
  const blocks = pemText.match(/-----BEGIN PUBLIC KEY-----[\s\S]*?-----END PUBLIC KEY-----/g) ?? []
  return blocks.map((block) => createPublicKey(block))
}

/**
 * Whether a downloaded package is one the club signed: its size, its SHA-256 and the Ed25519
 * signature, under one of the release keys pinned at setup, of its version, architecture and SHA-256
 * (releaseSignedText), so the bytes of one release never pass as another version. Answers the
 * mismatch, or undefined.
 */
export function packageMismatch(release: Omit<ReleaseDownload, 'path'>, bytes: Buffer, publicKeyPem: string): string | undefined {
  if (bytes.length !== release.size) return `size ${bytes.length} is not the announced ${release.size}`
  const sha256 = createHash('sha256').update(bytes).digest('hex')
  if (sha256 !== release.sha256) return `SHA-256 ${sha256} is not the announced ${release.sha256}`
  let valid = false
  try {
    const keys = publicKeysOf(publicKeyPem)
    if (keys.length === 0) return 'the signature cannot be checked: no release key is pinned'
    const signed = Buffer.from(releaseSignedText(release))
    const signature = Buffer.from(release.signature, 'base64')
    valid = keys.some((key) => verify(null, signed, key, signature))
  } catch (err) {
    return `the signature cannot be checked: ${(err as Error).message}`
  }
  return valid ? undefined : `the signature is not a release key's for club-agent ${release.version} (${release.architecture}) with this SHA-256`
}

/**
 * Orders two semantic versions (major.minor.patch[-pre.release], build metadata ignored): negative
 * when `a` is older, 0 when equal, positive when newer. A pre-release is older than its release.
 */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const [core = '', pre] = v.split('+')[0]!.split(/-(.*)/s)
    return { core: core.split('.').map(Number), pre: pre === undefined || pre === '' ? [] : pre.split('.') }
  }
  const x = parse(a)
  const y = parse(b)
  for (let i = 0; i < 3; i++) {
    const d = (x.core[i] ?? 0) - (y.core[i] ?? 0)
    if (d !== 0) return Math.sign(d)
  }
  if (x.pre.length === 0 || y.pre.length === 0) return Math.sign(y.pre.length - x.pre.length)
  for (let i = 0; i < Math.max(x.pre.length, y.pre.length); i++) {
    const p = x.pre[i]
    const q = y.pre[i]
    if (p === undefined) return -1
    if (q === undefined) return 1
    if (p === q) continue
    const pn = /^\d+$/.test(p)
    const qn = /^\d+$/.test(q)
    if (pn && qn) return Math.sign(Number(p) - Number(q))
    if (pn !== qn) return pn ? -1 : 1
    return p < q ? -1 : 1
  }
  return 0
}

/**
 * Why the installer refuses to install `requested` over `installed`, or undefined. An older version
 * only when it is the one it replaced itself (`recordedPrevious`, from root's own record): otherwise
 * whoever can write the agent's state folder could bring back any old signed release, known bugs and all.
 */
export function downgradeRefusal(requested: string, installed: string, recordedPrevious: string | undefined): string | undefined {
  if (compareVersions(requested, installed) >= 0 || requested === recordedPrevious) return undefined
  return `club-agent ${requested} is older than the installed ${installed}, and not the version this installer replaced (${recordedPrevious ?? 'none recorded'})`
}

/** What the installer remembers itself (installerStateDir): the version it installed and the one that one replaced. */
export interface InstalledRecord {
  installed: string
  previous?: string
}

/**
 * The installer's own records around installing `version` over `installed`: `during` is written
 * before the package manager runs, so a power cut or crash mid-install leaves a record that still lets
 * the installer go back to `installed`; `afterRollback` (the record as it was, undefined: none) is
 * written once `installed` is back. Installing the same version again changes nothing.
 */
export function installedRecords(
  earlier: InstalledRecord | undefined,
  installed: string,
  version: string
): { during: InstalledRecord | undefined; afterRollback: InstalledRecord | undefined } {
  if (version === installed) return { during: earlier, afterRollback: earlier }
  return { during: { installed: version, previous: installed }, afterRollback: earlier }
}

/** What a poll reports of the update (the status query's updateState, updateVersion, updateReason). */
export function updateReport(record: UpdateRecord | undefined): Pick<ReplayServerStatusQuery, 'updateState' | 'updateVersion' | 'updateReason'> {
  if (!record) return {}
  return { updateState: record.state, updateVersion: record.version, ...(record.reason ? { updateReason: record.reason.slice(0, 500) } : {}) }
}

/** The record after a successful start of `running`: an update of it is over, whatever it said. */
export function recordAfterStart(record: UpdateRecord | undefined, running: string): UpdateRecord | undefined {
  if (!record) return undefined
  if (record.version === running) return undefined
  // Still INSTALLING another version means the installer never came back: the running one stands.
  return record.state === 'ROLLED_BACK' || record.state === 'FAILED' ? record : undefined
}

/** `node`'s process.arch as Debian names it, when `dpkg --print-architecture` cannot say. */
export function debianArchitecture(nodeArch: string): string {
  return ({ x64: 'amd64', arm64: 'arm64', arm: 'armhf', ia32: 'i386', riscv64: 'riscv64', ppc64: 'ppc64el', s390x: 's390x' } as Record<string, string>)[nodeArch] ?? nodeArch
}

/** Versions a systemd instance name carries as they are: the installer unit is started with it. */
export function safeUnitVersion(version: string): boolean {
  return /^[0-9A-Za-z.~-]{1,100}$/.test(version)
}

/** Files of an update in the state folder's updates/ (the agent's user writes, the installer reads). */
export const updateFiles = {
  dir: 'updates',
  partial: (version: string) => `club-agent_${version}.deb.part`,
  complete: (version: string) => `club-agent_${version}.deb`,
  /** What the agent asks the installer for: both packages with what the server said of them. */
  request: 'request.json',
  /** The running agent's word that it reached the server: written at its first answered poll. */
  polled: 'polled.json',
  record: 'update.json'
}

/** The installer's request: the new package and the one to put back, as the server announced them. */
export interface InstallRequest {
  release: ReleaseDownload
  rollback?: ReleaseDownload
}
