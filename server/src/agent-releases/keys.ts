// The release keys. The private half is made and used away from the server (`club agent-releases
// keygen` and `sign`, on the operator's own machine); the server holds only the public halves it
// trusts (AGENT_RELEASE_PUBLIC_KEYS), so neither a copy of its disk nor an admin's token can make a
// package every box installs as root. Several keys may be trusted at once, so a key can be rotated.
import { createHash, createPublicKey, generateKeyPairSync, verify, type KeyObject } from 'node:crypto'
import { existsSync, mkdirSync, realpathSync, writeFileSync } from 'node:fs'
import { dirname, relative, resolve, isAbsolute, sep } from 'node:path'
import type { AgentReleaseKey } from '@club/contract'

/** A trusted public key with the fingerprint that names it. */
export interface TrustedKey extends AgentReleaseKey {
  key: KeyObject
}

/**
 * A public key as a box takes it, with its fingerprint: the SHA-256 of its DER (SPKI) as hex, what
 * `openssl pkey -pubin -outform DER | sha256sum` prints, and what `club-agent setup` prints.
 */
export function publicHalf(publicKey: KeyObject): AgentReleaseKey {
  return {
    publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    fingerprint: createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex')
  }
}

/** A public key as AGENT_RELEASE_PUBLIC_KEYS lists it: its DER (SPKI) in base64, one short line. */
export function settingOf(publicKey: KeyObject): string {
  return publicKey.export({ type: 'spki', format: 'der' }).toString('base64')
}

/**
 * AGENT_RELEASE_PUBLIC_KEYS (comma-separated base64 SPKI DER, as keygen prints it) as keys, or an
 * Error naming the entry that is not an Ed25519 public key.
 */
export function parseTrustedKeys(value: string): TrustedKey[] {
  const entries = value.split(',').map((s) => s.trim()).filter(Boolean)
  return entries.map((entry, i) => {
    let key: KeyObject
    try {
      if (!/^[A-Za-z0-9+/]+=*$/.test(entry)) throw new Error('not base64')
      key = createPublicKey({ key: Buffer.from(entry, 'base64'), format: 'der', type: 'spki' })
    } catch {
      throw new Error(`entry ${i + 1} is not a public key (expected the publicKeySetting that club agent-releases keygen prints)`)
    }
    if (key.asymmetricKeyType !== 'ed25519') throw new Error(`entry ${i + 1} is a ${key.asymmetricKeyType} key, not Ed25519`)
    return { key, ...publicHalf(key) }
  })
}

/** The trusted key that made `signature` (base64) over `text`, or undefined. */
export function signerOf(keys: TrustedKey[], text: string, signature: string): TrustedKey | undefined {
  const bytes = Buffer.from(signature, 'base64')
  // An Ed25519 signature is 64 bytes; anything else is no signature (and verify would throw).
  if (bytes.length !== 64 || !/^[A-Za-z0-9+/]+=*$/.test(signature)) return undefined
  return keys.find((k) => verify(null, Buffer.from(text), k.key, bytes))
}

/** Whether `path` is `folder` or inside it, both resolved through the symbolic links that exist. */
function isInside(path: string, folder: string): boolean {
  const rel = relative(realOrResolved(folder), realOrResolved(path))
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel))
}

/** The real path of `path`, or of its nearest existing ancestor with the rest appended. */
function realOrResolved(path: string): string {
  const absolute = resolve(path)
  try {
    return realpathSync(absolute)
  } catch {
    const parent = dirname(absolute)
    return parent === absolute ? absolute : resolve(realOrResolved(parent), relative(parent, absolute))
  }
}

/**
 * Makes a release key: the private half written to `out` (mode 0600, never over an existing file),
 * the public half answered with its fingerprint and the line AGENT_RELEASE_PUBLIC_KEYS takes. A
 * path inside one of `serverFolders` (the server's data) is refused before anything is made: the key
 * belongs on the operator's machine, away from the server that hands releases out.
 */
export function makeReleaseKey(out: string, serverFolders: string[]): { keyFile: string; publicKeySetting: string } & AgentReleaseKey {
  const inside = serverFolders.find((folder) => isInside(out, folder))
  if (inside !== undefined) {
    throw new Error(`${out} is inside the server's data folder (${inside}): keep the release key on another machine, away from the server`)
  }
  const { privateKey, publicKey } = generateKeyPairSync('ed25519')
  mkdirSync(dirname(resolve(out)), { recursive: true, mode: 0o700 })
  try {
    writeFileSync(out, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new Error(`${out} already exists: a release key is never overwritten (boxes may trust it)`)
    throw err
  }
  return { keyFile: out, publicKeySetting: settingOf(publicKey), ...publicHalf(publicKey) }
}

/** Where the server kept its release key before keys went offline (the old AGENT_RELEASE_KEY_FILE's default). */
export const OLD_RELEASE_KEY_FILE = 'data/agent-release-key.pem'

/**
 * What is left of the time the server held a release key, one warning each: the old setting still
 * set, or a key file still where the server wrote it. Either means the key every box trusts may have
 * been copied with the server's disk: the upgrade is a rotation (docs/installing-a-box.md), not a move.
 */
export function leftoverReleaseKeyWarnings(env: Record<string, string | undefined>, cwd: string): string[] {
  const warnings: string[] = []
  const setting = env.AGENT_RELEASE_KEY_FILE
  if (setting) warnings.push(`AGENT_RELEASE_KEY_FILE is still set (${setting}): the server no longer reads it; rotate the release key (docs/installing-a-box.md, "Upgrading from a server that held the private key") and remove the setting`)
  for (const file of new Set([setting, OLD_RELEASE_KEY_FILE].filter((f): f is string => !!f).map((f) => resolve(cwd, f)))) {
    if (existsSync(file)) warnings.push(`a release key is still on the server at ${file}: boxes trust it until it is rotated out (docs/installing-a-box.md); delete it from this machine`)
  }
  return warnings
}
