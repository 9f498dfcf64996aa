// Password reset (OWASP Forgot Password cheat sheet): a random single-use token, stored hashed,
// good for one hour, mailed as a link built from PUBLIC_BASE_URL; presenting it sets a new password
// and signs the user out everywhere (tokens and API keys).
import { randomUUID } from 'node:crypto'
import type { Clock } from '../clock.js'
import { hashPassword, randomToken, sha256Hex } from '../crypto.js'
import type { Db, DbOrTx } from '../db/database.js'
import type { UsersTable } from '../db/schema.js'
import { revokeUserApiKeys } from '../api-keys/service.js'
import { BadRequestError } from '../errors.js'
import { revokeUserTokens } from '../oauth2/tokens.js'
import { pageLink } from '../url.js'
import { checkPasswordPolicy, findUserByEmail, type PasswordDeps } from '../users/service.js'
import { sendMail, type Mailer } from './mailer.js'

export const RESET_TOKEN_TTL_MS = 60 * 60 * 1000

export interface MailDeps {
  clock: Clock
  mailer: Mailer
  publicBaseUrl: string
}

/** The page of the web front end where a user chooses the new password. */
export const resetLink = (publicBaseUrl: string, token: string) => pageLink(publicBaseUrl, 'password-reset', token)

/**
 * Starts a reset for the account with this address, if there is one; does nothing otherwise.
 * Meant to run after the request has been answered, so the answer says nothing about the address.
 */
export async function startPasswordReset(db: Db, email: string, deps: MailDeps): Promise<void> {
  const user = await findUserByEmail(db, email)
  if (!user) return
  const token = randomToken()
  const now = deps.clock.now()
  await db.transaction().execute(async (tx) => {
    // A new token replaces any earlier one: only the latest mail's link works.
    await tx.deleteFrom('password_reset_tokens').where('user_id', '=', user.id).execute()
    await tx
      .insertInto('password_reset_tokens')
      .values({
        id: randomUUID(),
        user_id: user.id,
        token_hash: sha256Hex(token),
        expires_at: new Date(now.getTime() + RESET_TOKEN_TTL_MS).toISOString(),
        used_at: null,
        created_at: now.toISOString()
      })
      .execute()
  })
  const text = [
    'Someone asked to reset the password of your club account.',
    '',
    `To choose a new password, open this link within one hour: ${resetLink(deps.publicBaseUrl, token)}`,
    '',
    'Resetting signs you out on every device and revokes the API keys of your account.',
    '',
    'If it was not you, ignore this message: your password stays as it is.'
  ].join('\n')
  await sendMail(db, deps.mailer, 'password_reset', { to: user.email, subject: 'Reset your club password', text }, deps.clock)
}

/** The user of a usable reset token, or a 400 saying why it is not usable. */
async function userOfResetToken(db: DbOrTx, token: string, now: string) {
  const row = await db
    .selectFrom('password_reset_tokens')
    .innerJoin('users', 'users.id', 'password_reset_tokens.user_id')
    .selectAll('users')
    .select(['password_reset_tokens.id as token_id', 'password_reset_tokens.expires_at as token_expires_at', 'password_reset_tokens.used_at'])
    .where('password_reset_tokens.token_hash', '=', sha256Hex(token))
    .executeTakeFirst()
  if (!row) throw new BadRequestError('token is not a valid password reset token')
  if (row.used_at !== null) throw new BadRequestError('token was already used; request a new password reset')
  if (row.token_expires_at <= now) throw new BadRequestError('token has expired; request a new password reset')
  const { token_id: tokenId, token_expires_at: _expires, used_at: _used, ...user } = row
  return { tokenId, user }
}

/** Sets the new password of the token's user and revokes all of the user's tokens and API keys; answers the user. */
export async function resetPassword(db: Db, input: { token: string; password: string }, deps: PasswordDeps): Promise<UsersTable> {
  checkPasswordPolicy(input.password)
  await userOfResetToken(db, input.token, deps.clock.now().toISOString())
  // scrypt runs before the transaction: inside it, it would hold the one SQLite connection and
  // every other request would wait for the hash.
  const passwordHash = await hashPassword(input.password, deps.passwordHashCost)
  return db.transaction().execute(async (tx) => {
    const now = deps.clock.now().toISOString()
    // Checked again inside the transaction: a parallel reset with the same token may have won.
    const { tokenId, user } = await userOfResetToken(tx, input.token, now)
    await tx.updateTable('password_reset_tokens').set({ used_at: now }).where('id', '=', tokenId).execute()
    await tx.updateTable('users').set({ password_hash: passwordHash, updated_at: now }).where('id', '=', user.id).execute()
    await revokeUserTokens(tx, user.id, deps.clock)
    // Whoever knew the old password may have made a key with it; the reset ends those too.
    await revokeUserApiKeys(tx, user.id, now)
    return user
  })
}

/** OWASP: tell the user their password changed, so an unexpected change does not go unnoticed. */
export async function sendPasswordChangedMail(db: DbOrTx, user: UsersTable, deps: MailDeps): Promise<void> {
  const text = [
    'The password of your club account was just changed: every device was signed out and every API key of the account',
    'was revoked. Make new keys for the integrations that still need one.',
    '',
    'If it was not you, reset your password again at once and tell the club.'
  ].join('\n')
  await sendMail(db, deps.mailer, 'password_changed', { to: user.email, subject: 'Your club password was changed', text }, deps.clock)
}
