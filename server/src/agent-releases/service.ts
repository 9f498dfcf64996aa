// Releases of the recording box's software. A release is a Debian package kept as a file in
// AGENT_RELEASES_DIR with its version, architecture, size, SHA-256 and an Ed25519 signature of the
// four (releaseSignedText), made offline with the club's release key (signReleaseFile, `club
// agent-releases sign`). The server never holds a private key: it stores a release only when its
// signature is by a key AGENT_RELEASE_PUBLIC_KEYS trusts (see keys.ts).
import { execFile } from 'node:child_process'
import { createHash, createPrivateKey, createPublicKey, randomUUID, sign, type KeyObject } from 'node:crypto'
import { constants, copyFileSync, createReadStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { SemverPattern, agentReleaseRoutes, releaseSignedText, type AgentRelease, type AgentReleaseKeys, type AgentReleaseList, type ReleaseDownload } from '@club/contract'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import { isUniqueViolation, type Db, type DbOrTx } from '../db/database.js'
import type { AgentReleasesTable } from '../db/schema.js'
import { BadRequestError, ConflictError, NotFoundError, quote } from '../errors.js'
import { parseTrustedKeys, publicHalf, signerOf } from './keys.js'
import { collection } from '../paging.js'

const run = promisify(execFile)

export type ReleaseSettings = Pick<Config, 'AGENT_RELEASES_DIR' | 'AGENT_RELEASE_PUBLIC_KEYS'>

const NO_KEYS = 'the server trusts no release key: set AGENT_RELEASE_PUBLIC_KEYS to the publicKeySetting club agent-releases keygen printed'

/** The public keys the server trusts (the route boxes read at setup answers them), or a 404 saying how to add one. */
export function trustedReleaseKeys(settings: Pick<ReleaseSettings, 'AGENT_RELEASE_PUBLIC_KEYS'>): AgentReleaseKeys {
  const keys = parseTrustedKeys(settings.AGENT_RELEASE_PUBLIC_KEYS).map(({ publicKey, fingerprint }) => ({ publicKey, fingerprint }))
  if (keys.length === 0) throw new NotFoundError(NO_KEYS)
  return { ...keys[0]!, keys }
}

/**
 * Signs a package offline (`club agent-releases sign`): its name, version and architecture from its
 * control file with its SHA-256, by the private key in `keyFile`. Needs no setting and no database.
 */
export async function signReleaseFile(
  file: string,
  keyFile: string
): Promise<{ version: string; architecture: string; sha256: string; signature: string; fingerprint: string }> {
  let key: KeyObject
  try {
    key = createPrivateKey(readFileSync(keyFile, 'utf8'))
  } catch (err) {
    throw new BadRequestError(`${keyFile} is not a readable private key: ${(err as Error).message}`)
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new BadRequestError(`${keyFile} is a ${key.asymmetricKeyType} key, not an Ed25519 release key`)
  const { version, architecture } = await readPackageControl(file)
  const sha256 = await sha256OfFile(file)
  const signature = sign(null, Buffer.from(releaseSignedText({ version, architecture, sha256 })), key).toString('base64')
  return { version, architecture, sha256, signature, fingerprint: publicHalf(createPublicKey(key)).fingerprint }
}

/**
 * Refuses a version with build metadata (`1.2.0+build.5`): the box's installer unit is named after
 * the version (club-agent-update@VERSION.service) and systemd's unit names, like the polkit rule that
 * lets the agent start it, have no `+`. `what` names the version in the message.
 */
export function refuseBuildMetadata(version: string, what: string): void {
  if (version.includes('+')) {
    throw new BadRequestError(`${what} ${quote(version)} carries build metadata (+…), which a box cannot install: its installer unit is named after the version and systemd allows no + there`)
  }
}

/** The fields of a package's control file that name it, read with dpkg-deb. */
async function readPackageControl(file: string): Promise<{ package: string; version: string; architecture: string }> {
  let stdout: string
  try {
    ;({ stdout } = await run('dpkg-deb', ['--field', file, 'Package', 'Version', 'Architecture'], { maxBuffer: 1 << 20 }))
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw new Error('dpkg-deb is needed to read agent packages: apt-get install dpkg')
    throw new BadRequestError('the file is not a Debian package (dpkg-deb cannot read its control file)')
  }
  const fields = Object.fromEntries(
    stdout
      .split('\n')
      .map((line) => /^([A-Za-z-]+):\s*(.*)$/.exec(line))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => [m[1]!.toLowerCase(), m[2]!.trim()])
  )
  const found = { package: fields.package ?? '', version: fields.version ?? '', architecture: fields.architecture ?? '' }
  if (found.package !== 'club-agent') throw new BadRequestError(`the package is ${quote(found.package)}, not club-agent`)
  if (!new RegExp(SemverPattern).test(found.version)) throw new BadRequestError(`the package's version ${quote(found.version)} is not a semantic version`)
  refuseBuildMetadata(found.version, "the package's version")
  if (!/^[a-z0-9][a-z0-9-]*$/.test(found.architecture)) throw new BadRequestError(`the package's architecture ${quote(found.architecture)} is not one`)
  return found
}

function downloadPath(version: string, architecture: string): string {
  return agentReleaseRoutes.download.url.replace(':version', encodeURIComponent(version)).replace(':architecture', encodeURIComponent(architecture))
}

function toAgentRelease(row: AgentReleasesTable): AgentRelease {
  return {
    version: row.version,
    architecture: row.architecture,
    size: row.size,
    sha256: row.sha256,
    signature: row.signature,
    path: downloadPath(row.version, row.architecture),
    createdDate: row.created_at
  }
}

export function toReleaseDownload(row: AgentReleasesTable): ReleaseDownload {
  const { version, architecture, path, size, sha256, signature } = toAgentRelease(row)
  return { version, architecture, path, size, sha256, signature }
}

/** Stores a package given as a file with its signature (`club agent-releases add`): a copy is staged, then added as an upload. */
export async function addAgentRelease(db: Db, file: string, signature: string, settings: ReleaseSettings, clock: Clock): Promise<AgentRelease> {
  return addStagedRelease(db, settings, signature, clock, (staged) => copyFileSync(file, staged, constants.COPYFILE_EXCL))
}

/** The upload route's body, written once into AGENT_RELEASES_DIR (dpkg-deb reads files), then added. */
export async function addAgentReleaseBytes(db: Db, body: Buffer, signature: string, settings: ReleaseSettings, clock: Clock): Promise<AgentRelease> {
  return addStagedRelease(db, settings, signature, clock, (staged) => writeFileSync(staged, body, { flag: 'wx' }))
}

/**
 * Stores a package: `stage` writes it to a temporary file beside the releases (so that storing it
 * is a rename), its name is read from its control file, and it is stored as below. The temporary
 * file is gone afterwards, whatever happened.
 */
async function addStagedRelease(db: Db, settings: ReleaseSettings, signature: string, clock: Clock, stage: (staged: string) => void): Promise<AgentRelease> {
  mkdirSync(settings.AGENT_RELEASES_DIR, { recursive: true })
  const staged = join(settings.AGENT_RELEASES_DIR, `.upload-${randomUUID()}.tmp`)
  try {
    stage(staged)
    const control = await readPackageControl(staged)
    return toAgentRelease(await storeReleaseFile(db, settings, staged, { ...control, signature }, clock.now().toISOString()))
  } finally {
    rmSync(staged, { force: true })
  }
}

/**
 * Makes a file staged in AGENT_RELEASES_DIR, signed offline, the release club-agent `version` for
 * `architecture` (the upload, the CLI and the tests' releases all come here). The signature must be
 * by a trusted key over what the file is (releaseSignedText): otherwise a 400 naming what is wrong,
 * and nothing is stored. The row is inserted and the file renamed into place in one transaction, so
 * a failed rename leaves no release without its file. The same version and architecture twice is a
 * 409 from the unique index (two uploads at once included), raised before the rename: a box that
 * fetched the first must never meet other bytes under the same name, and the stored file is never replaced.
 */
export async function storeReleaseFile(
  db: Db,
  settings: ReleaseSettings,
  staged: string,
  named: { version: string; architecture: string; signature: string },
  createdAt: string
): Promise<AgentReleasesTable> {
  const { version, architecture } = named
  const signature = named.signature.trim()
  const keys = parseTrustedKeys(settings.AGENT_RELEASE_PUBLIC_KEYS)
  if (keys.length === 0) throw new BadRequestError(NO_KEYS)
  if (signature === '') throw new BadRequestError('the package comes without its signature: sign it offline with club agent-releases sign and send the signature too')
  const sha256 = await sha256OfFile(staged)
  if (!signerOf(keys, releaseSignedText({ version, architecture, sha256 }), signature)) {
    throw new BadRequestError(
      `the signature is not one of a trusted release key (AGENT_RELEASE_PUBLIC_KEYS: ${keys.map((k) => k.fingerprint.slice(0, 16)).join(', ')}) over club-agent ${version} for ${architecture} with SHA-256 ${sha256}`
    )
  }
  const row: AgentReleasesTable = {
    id: randomUUID(),
    version,
    architecture,
    size: statSync(staged).size,
    sha256,
    signature,
    file: `club-agent_${version}_${architecture}.deb`,
    created_at: createdAt
  }
  try {
    await db.transaction().execute(async (tx) => {
      await tx.insertInto('agent_releases').values(row).execute()
      renameSync(staged, join(settings.AGENT_RELEASES_DIR, row.file))
    })
  } catch (err) {
    if (isUniqueViolation(err)) throw new ConflictError(`club-agent ${version} for ${architecture} is already a release`)
    throw err
  }
  return row
}

export async function listAgentReleases(db: Db): Promise<AgentReleaseList> {
  const rows = await db.selectFrom('agent_releases').selectAll().orderBy('created_at', 'desc').orderBy('version', 'desc').execute()
  return collection(rows.map(toAgentRelease), agentReleaseRoutes.list.url)
}

/**
 * The release of a version for an architecture; an `all` package serves every architecture. For a
 * box that has not reported its architecture (null), a release for any.
 */
export async function findRelease(db: DbOrTx, version: string, architecture: string | null): Promise<AgentReleasesTable | undefined> {
  const ofVersion = db.selectFrom('agent_releases').selectAll().where('version', '=', version)
  return (architecture === null ? ofVersion : ofVersion.where((eb) => eb.or([eb('architecture', '=', architecture), eb('architecture', '=', 'all')])))
    // The box's own architecture before `all`, should both exist.
    .orderBy((eb) => eb.case().when('architecture', '=', 'all').then(1).else(0).end())
    .executeTakeFirst()
}

/** The stored file of a release, for the download route. */
export async function releaseFile(db: Db, version: string, architecture: string, settings: ReleaseSettings): Promise<{ path: string; size: number }> {
  const row = await db.selectFrom('agent_releases').selectAll().where('version', '=', version).where('architecture', '=', architecture).executeTakeFirst()
  if (!row) throw new NotFoundError(`no release club-agent ${quote(version)} for ${quote(architecture)}`)
  const path = join(settings.AGENT_RELEASES_DIR, row.file)
  // Removed from AGENT_RELEASES_DIR by hand: a 404 the admin can read, not a stream that fails.
  if (!existsSync(path)) throw new NotFoundError(`the file of club-agent ${quote(version)} for ${quote(architecture)} is missing from AGENT_RELEASES_DIR`)
  return { path, size: row.size }
}

function sha256OfFile(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256')
    createReadStream(file)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')))
  })
}

/** A Range header's single byte range against a file of `size` bytes: the span to send, or 'unsatisfiable'. */
export function byteRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  // Several ranges or another unit: the whole file (RFC 9110 allows ignoring Range).
  if (!m || (m[1] === '' && m[2] === '')) return undefined
  if (m[1] === '') {
    const suffix = Number(m[2])
    if (suffix === 0) return 'unsatisfiable'
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(m[1])
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1)
  if (start >= size || end < start) return 'unsatisfiable'
  return { start, end }
}
