// The installer's local password: made by `club-agent local-password`, shown once, kept only as an
// scrypt hash in the state folder. Each new password has a new generation, and a session is valid only
// under the generation it was signed in with: running the command again ends every session, in the
// running agent too, because the agent re-reads the file whenever it changed on disk.
import { randomInt, randomUUID, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomically } from '../control/state.js'
import type { Clock } from '../clock.js'
import { systemClock } from '../clock.js'

export interface PasswordRecord {
  algorithm: 'scrypt'
  N: number
  r: number
  p: number
  salt: string
  hash: string
  /** Changes with every new password; sessions carry the one they were made under. */
  generation: string
  createdAt: string
}

export type Verification = { ok: true; generation: string } | { ok: false }

/** No 0/o, 1/l/i: read off a terminal and typed on a phone. 20 of 31 symbols: about 99 bits. */
const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789'
const KEY_LENGTH = 32
/** scrypt's cost: 2^14 takes about 50 ms and 16 MB, scrypt's own interactive recommendation. */
export const DEFAULT_SCRYPT_COST = 16384

function scrypt(password: string, salt: Buffer, N: number, r: number, p: number): Promise<Buffer> {
  const options: ScryptOptions = { N, r, p, maxmem: 256 * N * r }
  return new Promise((resolve, reject) =>
    scryptCallback(password.normalize('NFC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key)))
  )
}

export function newPassword(): string {
  const symbols = Array.from({ length: 20 }, () => ALPHABET[randomInt(ALPHABET.length)])
  return [0, 5, 10, 15].map((i) => symbols.slice(i, i + 5).join('')).join('-')
}

export interface LocalPasswordOptions {
  stateDir: string
  /** scrypt N; tests lower it. Kept in the file, so a verification uses the cost the hash was made with. */
  cost?: number
  clock?: Clock
}

export class LocalPassword {
  readonly path: string
  private cached?: { stamp: string; record: PasswordRecord | null }

  constructor(private readonly options: LocalPasswordOptions) {
    this.path = join(options.stateDir, 'local-password.json')
  }

  /** A new random password, stored as its hash. The answer is the only place it ever exists in clear. */
  async rotate(): Promise<string> {
    const password = newPassword()
    const salt = Buffer.from(randomUUID().replace(/-/g, ''), 'hex')
    const N = this.options.cost ?? DEFAULT_SCRYPT_COST
    const hash = await scrypt(password, salt, N, 8, 1)
    const record: PasswordRecord = {
      algorithm: 'scrypt', N, r: 8, p: 1,
      salt: salt.toString('base64'),
      hash: hash.toString('base64'),
      generation: randomUUID(),
      createdAt: (this.options.clock ?? systemClock).now().toISOString()
    }
    // Run with sudo, the command must leave a file the agent's own user can read: that of the folder.
    const owner = process.getuid?.() === 0 ? statOrUndefined(this.options.stateDir) : undefined
    writeFileAtomically(this.options.stateDir, this.path, JSON.stringify(record, null, 2), owner)
    return password
  }

  /**
   * The stored record, read again whenever the file's identity or time changed: the CLI replaces it
   * (a new inode, by rename) while the agent runs. One stat per call, which a sign-in or a cookie check can afford.
   */
  current(): PasswordRecord | null {
    let stamp: string
    try {
      const s = statSync(this.path)
      stamp = `${s.ino}:${s.mtimeMs}:${s.size}`
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw err
    }
    if (this.cached?.stamp !== stamp) {
      const parsed = JSON.parse(readFileSync(this.path, 'utf8')) as PasswordRecord
      this.cached = { stamp, record: parsed.algorithm === 'scrypt' ? parsed : null }
    }
    return this.cached.record
  }

  async verify(password: string): Promise<Verification> {
    const record = this.current()
    if (!record) return { ok: false }
    const expected = Buffer.from(record.hash, 'base64')
    const actual = await scrypt(password, Buffer.from(record.salt, 'base64'), record.N, record.r, record.p)
    return actual.length === expected.length && timingSafeEqual(actual, expected) ? { ok: true, generation: record.generation } : { ok: false }
  }
}

function statOrUndefined(path: string): { uid: number; gid: number } | undefined {
  try {
    return statSync(path)
  } catch {
    return undefined
  }
}
