// Guests of the court page (REPLAYS_GUEST): a player without an account gets an opaque token, kept on
// their phone, that owns the replays made with it. Only its hash is stored; it is never logged (the
// request log writes no Authorization header). A guest's token is told apart from an access token by
// its prefix: `.` is not in the base64url alphabet access tokens are made of.
import { randomUUID } from 'node:crypto'
import type { ReplayGuestSession } from '@club/contract'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import { randomToken, sha256Hex } from '../crypto.js'
import type { Db } from '../db/database.js'
import { ForbiddenError, UnauthorizedError } from '../errors.js'
import { checkPlace } from '../venue/places.js'

const GUEST_TOKEN_PREFIX = 'guest.'

export interface GuestSettings {
  enabled: boolean
  ttlSeconds: number
}

/** The guest settings of the server's configuration. */
export function guestSettings(config: Pick<Config, 'REPLAYS_GUEST' | 'REPLAY_GUEST_SESSION_TTL_SECONDS'>): GuestSettings {
  return { enabled: config.REPLAYS_GUEST, ttlSeconds: config.REPLAY_GUEST_SESSION_TTL_SECONDS }
}

export function isGuestToken(token: string): boolean {
  return token.startsWith(GUEST_TOKEN_PREFIX)
}

function guestsOff(): ForbiddenError {
  return new ForbiddenError('this club does not let guests ask for replays (REPLAYS_GUEST): sign in with your account')
}

/** A new guest of the court page of `courtId` (checked to exist: a page for no court makes no guest), bound to that court. */
export async function createGuestSession(db: Db, courtId: string, clock: Clock, settings: GuestSettings): Promise<ReplayGuestSession> {
  if (!settings.enabled) throw guestsOff()
  await checkPlace(db, 'courts', courtId, 'body.court.id')
  const token = `${GUEST_TOKEN_PREFIX}${randomToken(32)}`
  const now = clock.now()
  const expiresAt = new Date(now.getTime() + settings.ttlSeconds * 1000).toISOString()
  // Bound to this court: the token asks for no other court's footage (createReplay).
  await db
    .insertInto('replay_guests')
    .values({ id: randomUUID(), token_hash: sha256Hex(token), court_id: courtId, created_at: now.toISOString(), expires_at: expiresAt })
    .execute()
  return { token, expiresAt }
}

/** The guest a token names, while guests are let in and the token has not expired. */
export async function authenticateGuest(db: Db, token: string, clock: Clock, settings: GuestSettings): Promise<string> {
  if (!settings.enabled) throw guestsOff()
  const row = await db.selectFrom('replay_guests').select(['id', 'expires_at']).where('token_hash', '=', sha256Hex(token)).executeTakeFirst()
  if (!row || row.expires_at <= clock.now().toISOString()) {
    throw new UnauthorizedError('this guest token is not valid or has expired: open the court page again', 'Bearer error="invalid_token"')
  }
  return row.id
}
