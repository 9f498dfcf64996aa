// Secrets at rest: random tokens stored as SHA-256 (they carry 256 bits, so a fast hash is enough),
// passwords as scrypt with a per-user salt (they carry little entropy, so the hash must be slow).
import { createHash, createHmac, randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto'

/** An opaque random string of `bytes` bytes (256 bits by default), base64url. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url')
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex')
}

export function hmacSha256Hex(key: string | Buffer, value: string): string {
  return createHmac('sha256', key).update(value).digest('hex')
}

/** Constant-time string comparison; unequal lengths compare as false without leaking where they differ. */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  if (left.length !== right.length) {
    timingSafeEqual(left, left)
    return false
  }
  return timingSafeEqual(left, right)
}

function scryptAsync(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key)))
  )
}

const KEY_LENGTH = 32
const BLOCK_SIZE = 8

/** `scrypt$N$r$p$salt$hash`: the parameters travel with the hash, so the cost can rise later. */
export async function hashPassword(password: string, cost: number): Promise<string> {
  const salt = randomBytes(16)
  const key = await scryptAsync(password, salt, KEY_LENGTH, { N: cost, r: BLOCK_SIZE, p: 1, maxmem: 256 * cost * BLOCK_SIZE })
  return ['scrypt', cost, BLOCK_SIZE, 1, salt.toString('base64url'), key.toString('base64url')].join('$')
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$')
  if (scheme !== 'scrypt' || !salt || !hash) return false
  const N = Number(n)
  const R = Number(r)
  const expected = Buffer.from(hash, 'base64url')
  const key = await scryptAsync(password, Buffer.from(salt, 'base64url'), expected.length, {
    N,
    r: R,
    p: Number(p),
    maxmem: 256 * N * R
  })
  return timingSafeEqual(key, expected)
}
