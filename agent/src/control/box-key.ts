// The box key: an Ed25519 key pair made at first start and kept in the state folder (private key
// mode 0600). The server keeps its public half with the box's record; a registration signed with it
// replaces the box's serverId without an admin, so a reinstalled agent or a lost serverId heals
// itself while a stranger who only knows the deviceId gets no more than a pending claim.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import { chmodSync, linkSync, mkdirSync, readFileSync, statSync, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { writePrivateTemporary } from './state.js'
import { boxHealthSignatureText, boxKeyAdoptionText, boxKeyProofText, type BoxKeyProof } from '@club/contract'

export const BOX_KEY_FILE = 'box-key.pem'

export interface BoxKey {
  /** The raw Ed25519 public key, base64, as the registration sends it. */
  publicKey: string
  /** SHA256:<base64>, as the admin's console shows it: what an installer compares. */
  fingerprint: string
  privateKey: KeyObject
}

/** OpenSSH's form: SHA256: and the unpadded base64 of the SHA-256 of the raw key. */
export function keyFingerprint(publicKey: string): string {
  return `SHA256:${createHash('sha256').update(Buffer.from(publicKey, 'base64')).digest('base64').replace(/=+$/, '')}`
}

/** The box key held in a PKCS#8 PEM text; an error when it is not an Ed25519 private key. */
export function boxKeyOf(pem: string): BoxKey {
  const privateKey = createPrivateKey(pem)
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error(`the box key is a ${privateKey.asymmetricKeyType} key, not Ed25519`)
  const x = createPublicKey(privateKey).export({ format: 'jwk' }).x!
  const publicKey = Buffer.from(x, 'base64url').toString('base64')
  return { publicKey, fingerprint: keyFingerprint(publicKey), privateKey }
}

/**
 * The registration fields that prove the box key: the key and a signature of boxKeyProofText made
 * now, for the server at `audience` (the origin of the URL the box registers with). A proof is good
 * once and for two minutes (the server refuses a replayed or stale one), so a fresh one goes with
 * every registration.
 */
export function keyProofFor(
  key: BoxKey,
  registration: { deviceId: string; serverUrl?: string; audience: string },
  now: Date
): { publicKey: string; keyProof: BoxKeyProof } {
  const timestamp = now.toISOString()
  const text = boxKeyProofText({ ...registration, publicKey: key.publicKey, timestamp })
  return { publicKey: key.publicKey, keyProof: { timestamp, signature: sign(null, Buffer.from(text), key.privateKey).toString('base64') } }
}

/**
 * The status query fields that let a record made before the box had a key adopt it: the key and a
 * signature of boxKeyAdoptionText over the poll's serverId, made now. The box cannot see whether its
 * record holds a key, so every poll carries them (one signature; the server checks it only to adopt).
 */
export function keyAdoptionFor(key: BoxKey, serverId: string, now: Date): { publicKey: string; keyTimestamp: string; keySignature: string } {
  const keyTimestamp = now.toISOString()
  const text = boxKeyAdoptionText({ serverId, publicKey: key.publicKey, timestamp: keyTimestamp })
  return { publicKey: key.publicKey, keyTimestamp, keySignature: sign(null, Buffer.from(text), key.privateKey).toString('base64') }
}

/** The signature of a poll's health report, with the poll's keyTimestamp: the server keeps a report only when it is signed. */
export function healthSignatureFor(key: BoxKey, serverId: string, keyTimestamp: string, health: string): string {
  return sign(null, Buffer.from(boxHealthSignatureText({ serverId, timestamp: keyTimestamp, health })), key.privateKey).toString('base64')
}

/**
 * The box key in `stateDir`, made there on first use. A file readable by others is narrowed to 0600.
 * Made by root (club-agent setup), it is given the state folder's owner, the agent's user.
 */
export function loadOrCreateBoxKey(stateDir: string): BoxKey {
  const path = join(stateDir, BOX_KEY_FILE)
  let pem: string
  try {
    pem = readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    const { privateKey } = generateKeyPairSync('ed25519')
    mkdirSync(stateDir, { recursive: true, mode: 0o700 })
    pem = createOnce(path, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), ownerForRoot(stateDir))
    return boxKeyOf(pem)
  }
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600)
  return boxKeyOf(pem)
}

/**
 * Writes `text` to `path` unless a file is there already, and answers what `path` holds then. The
 * setup (root) and the running agent may both make a key at first start: a rename would let the last
 * one win, after the first had registered with its own. A link fails on an existing name instead, so
 * the first key written is the one both keep. Written whole to a fresh temporary file first, so a
 * reader never meets half a key.
 */
export function createOnce(path: string, text: string, owner?: { uid: number; gid: number }): string {
  const temporary = writePrivateTemporary(path, text, owner)
  try {
    linkSync(temporary, path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    return readFileSync(path, 'utf8')
  } finally {
    unlinkSync(temporary)
  }
  return text
}

function ownerForRoot(dir: string): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const { uid, gid } = statSync(dir)
  return { uid, gid }
}
