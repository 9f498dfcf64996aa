// The invitation mail and its link (PUBLIC_BASE_URL/enrollment-invitation?token=…): the page behind
// it reads the invitation and answers it with the mail's token as its only credential. The token is
// random, kept only as its hash, answers its own invitation once, and lapses with the invitation:
// answered, withdrawn, or its subscription no longer in force. Answering goes through the same
// settleInvitation as the signed-in …/acceptance.
import type { EnrollmentInvitation, MembershipEnrollment } from '@club/contract'
import type { Clock } from '../clock.js'
import { sha256Hex } from '../crypto.js'
import type { Db, DbOrTx } from '../db/database.js'
import { BadRequestError, ConflictError } from '../errors.js'
import { sendMail, type Mailer } from '../password-reset/mailer.js'
import { pageLink } from '../url.js'
import { memberName } from './enrollment-rows.js'
import { answeredInvitation, enrollments, selectEnrollment, settleInvitation, type EnrollmentRow } from './enrollments.js'
import { inForce } from './subscription-rows.js'
import { extendedStatusOf } from './subscription-view.js'

export const INVITATION_PAGE = 'enrollment-invitation'

/**
 * The invitation of a token that may still be answered, with its inviter's name; a 400 for a token
 * no invitation has, a 409 saying why one can no longer be answered.
 */
async function invitationOfToken(db: DbOrTx, token: string, now: Date): Promise<{ row: EnrollmentRow; inviter: string }> {
  const row = await selectEnrollment(enrollments(db))
    .innerJoin('users as inviter', 'inviter.id', 'e.creator_id')
    .select(['inviter.first_name', 'inviter.last_name', 'inviter.email'])
    .where('e.invitation_token_hash', '=', sha256Hex(token))
    .executeTakeFirst()
  if (!row) throw new BadRequestError('token is not a valid invitation token')
  if (row.invitation_status !== 'INVITED') throw answeredInvitation(row.invitation_status)
  const subscription = await db.selectFrom('membership_subscriptions').selectAll().where('id', '=', row.subscription_id).executeTakeFirstOrThrow()
  if (!inForce(subscription, now)) {
    throw new ConflictError(`the invitation has expired: the membership subscription is no longer in force (${extendedStatusOf(subscription, now)})`)
  }
  const { first_name, last_name, email, ...enrollment } = row
  return { row: enrollment, inviter: memberName({ first_name, last_name, email }) }
}

/** Only what the invited user needs to decide: never ids, addresses or the subscription's terms. */
function toInvitation(row: EnrollmentRow, inviter: string): EnrollmentInvitation {
  return { inviter: { name: inviter }, membership: { displayName: row.display_name }, invitationStatus: row.invitation_status as EnrollmentInvitation['invitationStatus'] }
}

export async function lookupInvitation(db: Db, token: string, clock: Clock): Promise<EnrollmentInvitation> {
  const { row, inviter } = await invitationOfToken(db, token, clock.now())
  return toInvitation(row, inviter)
}

/** Accepts or declines the token's invitation, as its invited user would signed in; once. */
export async function answerInvitationByToken(db: Db, input: { token: string; accept: boolean }, clock: Clock): Promise<EnrollmentInvitation> {
  return db.transaction().execute(async (tx) => {
    const now = clock.now()
    const { row, inviter } = await invitationOfToken(tx, input.token, now)
    return toInvitation(await settleInvitation(tx, row, input.accept, now), inviter)
  })
}

/** The invited user's mail: who invited them to what, and the link that answers it. */
export async function mailInvitation(
  db: Db,
  enrollment: MembershipEnrollment,
  token: string,
  deps: { clock: Clock; mailer: Mailer; publicBaseUrl: string }
): Promise<void> {
  const people = await db
    .selectFrom('users')
    .select(['id', 'email', 'first_name', 'last_name'])
    .where('id', 'in', [enrollment.user.id, enrollment.creatorUser.id])
    .execute()
  const invited = people.find((p) => p.id === enrollment.user.id)
  const owner = people.find((p) => p.id === enrollment.creatorUser.id)
  if (!invited || !owner) return
  const text = [
    `${memberName(owner)} invited you to share their membership "${enrollment.displayName}".`,
    '',
    'Nothing changes for you until you accept. To accept or decline, open this link (it works once):',
    pageLink(deps.publicBaseUrl, INVITATION_PAGE, token),
    '',
    'You may also answer signed in to the club. If you do not know this person, decline it or ignore this mail.'
  ].join('\n')
  await sendMail(db, deps.mailer, 'enrollment_invitation', { to: invited.email, subject: `An invitation to the membership "${enrollment.displayName}"`, text }, deps.clock)
}
