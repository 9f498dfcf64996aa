// Forum single sign-on, provider side of DiscourseConnect: the forum sends a signed payload with a
// nonce and its return URL; the signed-in user's identity goes back in a payload signed the same way.
import type { ForumConnectAuthorization, ForumConnectRequest } from '@club/contract'
import type { Clock } from '../clock.js'
import { hmacSha256Hex, safeEqual, sha256Hex } from '../crypto.js'
import type { DbOrTx } from '../db/database.js'
import { BadRequestError, ForbiddenError, ServiceUnavailableError } from '../errors.js'
import type { UsersTable } from '../db/schema.js'
import { withQuery } from '../url.js'

/** DiscourseConnect nonces are good for 10 minutes; a nonce seen within that time is refused. */
const NONCE_TTL_MS = 10 * 60 * 1000
const SSO_CHARACTERS = /^[A-Za-z0-9=\r\n/+]+$/

export interface ForumConnectSettings {
  secret: string
  origin: string
}

export function forumConnectSettings(config: { FORUM_CONNECT_SECRET: string; FORUM_CONNECT_ORIGIN: string }): ForumConnectSettings | null {
  if (!config.FORUM_CONNECT_SECRET || !config.FORUM_CONNECT_ORIGIN) return null
  return { secret: config.FORUM_CONNECT_SECRET, origin: new URL(config.FORUM_CONNECT_ORIGIN).origin }
}

/** `sig` is the hex HMAC-SHA256 of the base64 text exactly as received, newlines included. */
export function verifySignature(secret: string, sso: string, sig: string): boolean {
  return safeEqual(hmacSha256Hex(secret, sso), sig.toLowerCase())
}

export function decodePayload(sso: string): URLSearchParams {
  return new URLSearchParams(Buffer.from(sso, 'base64').toString('utf8'))
}

export function encodePayload(params: Record<string, string>): string {
  // URLSearchParams writes "+" as %2B, so an address like a+b@x.org reaches the forum intact.
  return Buffer.from(new URLSearchParams(params).toString(), 'utf8').toString('base64')
}

/** A forum username: the e-mail's local part, in the characters Discourse allows. */
function forumUsername(email: string): string {
  const local = email.split('@')[0] ?? ''
  return local.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 60) || 'member'
}

export async function authorizeForum(
  db: DbOrTx,
  user: UsersTable,
  request: ForumConnectRequest,
  deps: { settings: ForumConnectSettings | null; clock: Clock }
): Promise<ForumConnectAuthorization> {
  const settings = deps.settings
  if (!settings) throw new ServiceUnavailableError('forum single sign-on is not configured on this server')
  if (!SSO_CHARACTERS.test(request.sso)) throw new BadRequestError('sso must be base64 text')
  if (!/^[0-9a-fA-F]{64}$/.test(request.sig)) throw new BadRequestError('sig must be 64 hexadecimal characters')
  if (!verifySignature(settings.secret, request.sso, request.sig)) {
    throw new ForbiddenError('sig does not match sso: the payload was not signed by the forum')
  }
  const incoming = decodePayload(request.sso)
  const nonce = incoming.get('nonce')
  if (!nonce) throw new BadRequestError('the sso payload has no nonce')
  const returnUrl = incoming.get('return_sso_url')
  if (!returnUrl) throw new BadRequestError('the sso payload has no return_sso_url')
  let parsed: URL
  try {
    parsed = new URL(returnUrl)
  } catch {
    throw new BadRequestError('return_sso_url in the sso payload is not an absolute URL')
  }
  if (parsed.origin !== settings.origin) throw new ForbiddenError("return_sso_url is not on the forum's origin")

  const now = deps.clock.now()
  await db.deleteFrom('forum_connect_nonces').where('expires_at', '<=', now.toISOString()).execute()
  const stored = await db
    .insertInto('forum_connect_nonces')
    .values({ nonce_hash: sha256Hex(nonce), user_id: user.id, expires_at: new Date(now.getTime() + NONCE_TTL_MS).toISOString() })
    .onConflict((oc) => oc.column('nonce_hash').doNothing())
    .executeTakeFirst()
  if (Number(stored.numInsertedOrUpdatedRows ?? 0n) !== 1) throw new BadRequestError('the sso nonce was already used')

  const username = forumUsername(user.email)
  const name = [user.first_name, user.last_name].filter(Boolean).join(' ')
  const sso = encodePayload({
    nonce,
    email: user.email,
    external_id: user.id,
    username,
    name: name || username,
    require_activation: 'false'
  })
  const sig = hmacSha256Hex(settings.secret, sso)
  return { type: 'FORUM_CONNECT', sso, sig, callbackUrl: withQuery(returnUrl, { sso, sig }) }
}
