// Signup phone verification: sessions that send a 6-digit code to an E.164 number and check it,
// with a 10-minute life, 5 checks, and limits against SMS pumping (cooldown, per-number and
// per-IP caps). Codes this server makes are kept only as HMAC(pepper, sessionId + code).
import { randomInt, randomUUID } from 'node:crypto'
import type { PhoneVerificationRequest, PhoneVerificationSession, ValidationError } from '@club/contract'
import { sql } from 'kysely'
import type { Clock } from '../clock.js'
import { hmacSha256Hex, safeEqual } from '../crypto.js'
import type { Db } from '../db/database.js'
import { least } from '../db/sql.js'
import type { PhoneVerificationsTable } from '../db/schema.js'
import { BadRequestError, NotFoundError, TooManyRequestsError, quote } from '../errors.js'
import type { CheckOutcome, PhoneVerificationProvider } from './providers/provider.js'

export const SESSION_TTL_MS = 10 * 60 * 1000
export const MAX_CHECKS = 5
const HOUR_MS = 3600 * 1000

export interface PhoneVerificationDeps {
  clock: Clock
  provider: PhoneVerificationProvider
  pepper: string
  resendCooldownSeconds: number
  sendsPerNumberPerHour: number
  sendsPerIpPerHour: number
}

/** The number in E.164, or a 400 naming the field. */
export async function parsePhoneNumber(raw: string | undefined): Promise<string> {
  if (raw === undefined || raw === '') throw new BadRequestError('phoneNumber is required')
  // libphonenumber-js and its metadata (over 100 modules) load on the first signup, not in every
  // process that builds the app (each CLI command, each test file).
  const parsed = /^\+[1-9]\d{1,14}$/.test(raw) ? (await import('libphonenumber-js')).parsePhoneNumberFromString(raw) : undefined
  if (!parsed || !parsed.isValid()) throw new BadRequestError('phoneNumber must be a valid phone number in E.164 form, e.g. +14155552671')
  return parsed.number
}

const codeHash = (pepper: string, sessionId: string, code: string) => hmacSha256Hex(pepper, `${sessionId}${code}`)

export function toPhoneVerificationSession(row: PhoneVerificationsTable, errors: ValidationError[] = []): PhoneVerificationSession {
  return {
    sessionId: row.id,
    phonePreview: row.phone_number.slice(-4),
    status: row.status,
    expiresAt: row.expires_at,
    remainingAttempts: row.remaining_attempts,
    errors
  }
}

/** A pending session with every attempt left, good for 10 minutes from `now`. */
function newSession(
  id: string,
  provider: PhoneVerificationsTable['provider'],
  phoneNumber: string,
  now: Date,
  secrets: { providerRef: string | null; codeHash: string | null }
): PhoneVerificationsTable {
  return {
    id,
    provider,
    phone_number: phoneNumber,
    provider_ref: secrets.providerRef,
    code_hash: secrets.codeHash,
    status: 'pending',
    remaining_attempts: MAX_CHECKS,
    expires_at: new Date(now.getTime() + SESSION_TTL_MS).toISOString(),
    created_at: now.toISOString(),
    updated_at: now.toISOString()
  }
}

const retryIn = (since: string, windowMs: number, now: Date) => (new Date(since).getTime() + windowMs - now.getTime()) / 1000

/** Send mode: checks the abuse limits, sends a code and answers a new pending session. */
export async function sendVerificationCode(
  db: Db,
  request: PhoneVerificationRequest,
  clientIp: string,
  deps: PhoneVerificationDeps
): Promise<PhoneVerificationSession> {
  const phoneNumber = await parsePhoneNumber(request.phoneNumber)
  if (deps.provider.requiresRecaptcha && !request.recaptchaToken) throw new BadRequestError('recaptchaToken is required to send a code')
  const now = deps.clock.now()
  const hourAgo = new Date(now.getTime() - HOUR_MS).toISOString()

  // Check the limits and count this send in one transaction, so parallel sends cannot all slip past.
  const sendId = await db.transaction().execute(async (tx) => {
    // Sends older than the longest window count for nothing any more.
    await tx.deleteFrom('phone_verification_sends').where('created_at', '<=', hourAgo).execute()
    const toNumber = await tx
      .selectFrom('phone_verification_sends')
      .select(['created_at'])
      .where('phone_number', '=', phoneNumber)
      .where('created_at', '>', hourAgo)
      .orderBy('created_at', 'desc')
      .execute()
    const last = toNumber[0]
    const cooldownMs = deps.resendCooldownSeconds * 1000
    if (last && new Date(last.created_at).getTime() + cooldownMs > now.getTime()) {
      const wait = Math.ceil(retryIn(last.created_at, cooldownMs, now))
      throw new TooManyRequestsError(`a code was just sent to this number; wait ${wait} seconds before asking for another`, wait)
    }
    if (toNumber.length >= deps.sendsPerNumberPerHour) {
      const oldest = toNumber[toNumber.length - 1]!.created_at
      throw new TooManyRequestsError(
        `at most ${deps.sendsPerNumberPerHour} codes per hour are sent to one number; try again later`,
        retryIn(oldest, HOUR_MS, now)
      )
    }
    const fromIp = await tx
      .selectFrom('phone_verification_sends')
      .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.min('created_at').as('oldest')])
      .where('client_ip', '=', clientIp)
      .where('created_at', '>', hourAgo)
      .executeTakeFirstOrThrow()
    if (Number(fromIp.count) >= deps.sendsPerIpPerHour) {
      throw new TooManyRequestsError(
        `at most ${deps.sendsPerIpPerHour} codes per hour are sent for one client address; try again later`,
        retryIn(String(fromIp.oldest), HOUR_MS, now)
      )
    }
    const id = randomUUID()
    await tx.insertInto('phone_verification_sends').values({ id, phone_number: phoneNumber, client_ip: clientIp, created_at: now.toISOString() }).execute()
    return id
  })

  const sessionId = randomUUID()
  const code = deps.provider.ownsCode ? null : String(randomInt(0, 1_000_000)).padStart(6, '0')
  let reference: string | null
  try {
    ;({ reference } = await deps.provider.send({
      sessionId,
      phoneNumber,
      code,
      language: request.language,
      recaptchaToken: request.recaptchaToken
    }))
  } catch (err) {
    // Nothing was sent, so this attempt does not count against the caller.
    await db.deleteFrom('phone_verification_sends').where('id', '=', sendId).execute()
    throw err
  }

  const row = newSession(sessionId, deps.provider.name, phoneNumber, now, {
    providerRef: reference,
    codeHash: code === null ? null : codeHash(deps.pepper, sessionId, code)
  })
  await db.transaction().execute(async (tx) => {
    // A new code replaces the ones sent before: only the latest session can be verified.
    await tx
      .updateTable('phone_verifications')
      .set({ status: 'canceled', updated_at: now.toISOString() })
      .where('phone_number', '=', phoneNumber)
      .where('status', '=', 'pending')
      .execute()
    await tx.insertInto('phone_verifications').values(row).execute()
  })
  return toPhoneVerificationSession(row)
}

const notPendingMessages: Record<Exclude<PhoneVerificationsTable['status'], 'pending'>, string> = {
  approved: 'this session is already verified',
  expired: 'this session has expired; ask for a new code',
  max_attempts_reached: 'this session has no attempts left; ask for a new code',
  canceled: 'a newer code was sent to this number; use the latest session'
}

function notPendingError(status: PhoneVerificationsTable['status']): ValidationError {
  if (status === 'pending') throw new Error('a pending session has no such error')
  return { code: `session_${status}`, message: notPendingMessages[status], details: null }
}

/** The session a verify request names: by sessionId, or (browser-SDK provider) by verificationId. */
async function sessionToVerify(db: Db, request: PhoneVerificationRequest, deps: PhoneVerificationDeps): Promise<PhoneVerificationsTable> {
  if (request.sessionId !== undefined) {
    const row = await db.selectFrom('phone_verifications').selectAll().where('id', '=', request.sessionId).executeTakeFirst()
    if (!row) throw new NotFoundError(`phone verification session ${quote(request.sessionId)} not found`)
    return row
  }
  if (request.verificationId === undefined) {
    throw new BadRequestError('verificationCode needs a sessionId, or a verificationId with the phoneNumber')
  }
  if (deps.provider.name !== 'firebase') throw new BadRequestError('verificationId is accepted only when the browser-SDK provider is configured')
  const phoneNumber = await parsePhoneNumber(request.phoneNumber)
  const existing = await db
    .selectFrom('phone_verifications')
    .selectAll()
    .where('provider', '=', 'firebase')
    .where('provider_ref', '=', request.verificationId)
    .executeTakeFirst()
  if (existing) {
    if (existing.phone_number !== phoneNumber) throw new BadRequestError('phoneNumber is not the number of this verification')
    return existing
  }
  // The SDK sent the code itself; this server first hears of the verification now.
  const row = newSession(randomUUID(), 'firebase', phoneNumber, deps.clock.now(), { providerRef: request.verificationId, codeHash: null })
  // A parallel call may have created it first (unique per Firebase verification): then use that one.
  await db.insertInto('phone_verifications').values(row).onConflict((oc) => oc.doNothing()).execute()
  const session = await db
    .selectFrom('phone_verifications')
    .selectAll()
    .where('provider', '=', 'firebase')
    .where('provider_ref', '=', request.verificationId)
    .executeTakeFirstOrThrow()
  if (session.phone_number !== phoneNumber) throw new BadRequestError('phoneNumber is not the number of this verification')
  return session
}

/**
 * Verify mode. A wrong code is an ordinary outcome: the session comes back pending with one
 * attempt fewer and an entry in `errors`. After expiry or the last attempt no code succeeds.
 */
export async function verifyCode(db: Db, request: PhoneVerificationRequest, deps: PhoneVerificationDeps): Promise<PhoneVerificationSession> {
  const code = request.verificationCode ?? ''
  if (!/^\d{6}$/.test(code)) throw new BadRequestError('verificationCode must be 6 digits')
  const session = await sessionToVerify(db, request, deps)

  // Take one attempt before checking, atomically, so parallel guesses cannot exceed the limit.
  const taken = await db.transaction().execute(async (tx) => {
    const now = deps.clock.now().toISOString()
    const row = await tx.selectFrom('phone_verifications').selectAll().where('id', '=', session.id).executeTakeFirstOrThrow()
    if (row.status === 'pending' && row.expires_at <= now) {
      await tx.updateTable('phone_verifications').set({ status: 'expired', updated_at: now }).where('id', '=', row.id).execute()
      return { ...row, status: 'expired' as const }
    }
    if (row.status !== 'pending') return row
    // The last attempt may be taken and its outcome not yet written (a parallel check, perhaps in
    // another process): nothing is left to take. The row stays as it is, so that check's outcome,
    // an approval included, is still the one recorded.
    if (row.remaining_attempts <= 0) return { ...row, status: 'max_attempts_reached' as const }
    await tx
      .updateTable('phone_verifications')
      .set({ remaining_attempts: row.remaining_attempts - 1, updated_at: now })
      .where('id', '=', row.id)
      .execute()
    return { ...row, remaining_attempts: row.remaining_attempts - 1 }
  })
  if (taken.status !== 'pending') return toPhoneVerificationSession(taken, [notPendingError(taken.status)])

  let outcome: CheckOutcome
  if (taken.code_hash !== null) {
    outcome = safeEqual(codeHash(deps.pepper, taken.id, code), taken.code_hash) ? 'approved' : 'wrong_code'
  } else {
    try {
      outcome = await deps.provider.check({ reference: taken.provider_ref ?? '', phoneNumber: taken.phone_number, code })
    } catch (err) {
      // The provider did not judge the code, so the attempt is given back.
      await db
        .updateTable('phone_verifications')
        .set((eb) => ({ remaining_attempts: eb('remaining_attempts', '+', 1) }))
        .where('id', '=', taken.id)
        .where('status', '=', 'pending')
        .execute()
      throw err
    }
  }
  return recordOutcome(db, taken, outcome, deps.clock)
}

async function recordOutcome(db: Db, row: PhoneVerificationsTable, outcome: CheckOutcome, clock: Clock): Promise<PhoneVerificationSession> {
  const now = clock.now().toISOString()
  let status = row.status
  let remaining = row.remaining_attempts
  const errors: ValidationError[] = []
  if (outcome === 'approved') status = 'approved'
  else if (outcome === 'expired') status = 'expired'
  else if (outcome === 'max_attempts_reached' || remaining <= 0) {
    status = 'max_attempts_reached'
    remaining = 0
  }
  if (outcome === 'wrong_code') {
    errors.push({
      code: 'invalid_code',
      message: remaining > 0 ? `the verification code is wrong; ${remaining} attempt(s) left` : 'the verification code is wrong; no attempts left',
      details: { remainingAttempts: remaining }
    })
  } else if (status !== 'approved') {
    errors.push(notPendingError(status))
  }
  // Only a session still pending changes: a parallel check that finished first keeps its outcome.
  // The count only ever goes down here: a parallel check that took its attempt later and finished
  // earlier must not be undone by this one's older copy of the row.
  await db
    .updateTable('phone_verifications')
    .set({ status, remaining_attempts: least<number>(db, sql.ref('remaining_attempts'), sql.val(remaining)), updated_at: now })
    .where('id', '=', row.id)
    .where('status', '=', 'pending')
    .execute()
  const current = await db.selectFrom('phone_verifications').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow()
  return toPhoneVerificationSession(current, errors)
}
