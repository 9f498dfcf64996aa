// Enrollments: the members a subscription covers. The owner's is made when the subscription is
// confirmed; the owner or staff add members of the club, each adding the plan's additional member fee
// (and a custom fee staff set) to the renewals from the next one. A user holds at most one active
// enrollment per membership type; removing one ends it (end_date), it is never deleted.
import { randomUUID } from 'node:crypto'
import type {
  EventType,
  MembershipEnrollment,
  ValidationError,
  MembershipEnrollmentListQuery,
  MembershipEnrollmentRequest,
  MembershipEnrollmentsOfUserQuery
} from '@club/contract'
import { isStaff, type Actor } from '../actor.js'
import { randomToken, sha256Hex } from '../crypto.js'
import { currencyExponent, fromMinor } from '../billing/money.js'
import { requestMinor } from '../billing/request-money.js'
import type { Clock } from '../clock.js'
import type { MembershipType } from '@club/contract'
import { isUniqueViolation, type Db, type DbOrTx } from '../db/database.js'
import type { MembershipEnrollmentsTable } from '../db/schema.js'
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError } from '../errors.js'
import { recordEvent } from '../events/outbox.js'
import { pageRequest, paged } from '../paging.js'
import { activeEnrollmentOfType } from './enrollment-rows.js'
import { DRAFT_LIFETIME_MS, inForce, subscriptionPath, visibleRow } from './subscription-rows.js'
import { extendedStatusOf } from './subscription-view.js'

export interface EnrollmentDeps {
  clock: Clock
  /** Tells the invited user (the mail with the invitation and its link's token), after the invitation is written. */
  invite: (enrollment: MembershipEnrollment, token: string) => Promise<void>
}

export const enrollmentPath = (subscriptionId: string, id: string) => `${subscriptionPath(subscriptionId)}/enrollments/${id}`

/** An enrollment with what its answer shows from the plan (name) and the subscription (currency). */
export type EnrollmentRow = MembershipEnrollmentsTable & { display_name: string; currency: string }

export function enrollments(db: DbOrTx) {
  return db
    .selectFrom('membership_enrollments as e')
    .innerJoin('memberships as m', 'm.id', 'e.membership_id')
    .innerJoin('membership_subscriptions as s', 's.id', 'e.subscription_id')
}

export const selectEnrollment = (query: ReturnType<typeof enrollments>) => query.selectAll('e').select(['m.display_name', 's.currency'])

/**
 * Why an invitation is no member, in the reference's own `errors`, for an integrator who reads only
 * the reference's fields (issue 47): pending, declined or withdrawn, it never began.
 */
const INVITATION_ERRORS: Record<Exclude<EnrollmentRow['invitation_status'], 'ACCEPTED'>, ValidationError> = {
  INVITED: { code: 'INVITATION_PENDING', message: 'an invitation the user has not accepted yet: not a member until they accept (no startDate until then)', details: null },
  DECLINED: { code: 'INVITATION_DECLINED', message: 'an invitation the user declined: never a member (its endDate is when it was declined)', details: null },
  WITHDRAWN: { code: 'INVITATION_WITHDRAWN', message: 'an invitation withdrawn before it was answered: never a member (its endDate is when it was withdrawn)', details: null }
}

export function toEnrollment(row: EnrollmentRow): MembershipEnrollment {
  const status = row.invitation_status
  const begun = status === 'ACCEPTED'
  return {
    id: row.id,
    displayName: row.display_name,
    type: row.membership_type,
    user: { id: row.user_id },
    creatorUser: { id: row.creator_id },
    membership: { id: row.membership_id },
    membershipSubscription: { id: row.subscription_id },
    isOwner: row.is_owner === 1,
    invitationStatus: row.invitation_status,
    errors: status === 'ACCEPTED' ? null : [INVITATION_ERRORS[status]],
    customFee: fromMinor(row.custom_fee_minor, currencyExponent(row.currency)),
    createdDate: row.created_at,
    // The reference has no null here: an invitation (pending, declined, withdrawn) never began, so it
    // has no startDate; an enrollment without an end has no endDate, nor has a pending invitation. A
    // declined or withdrawn one has ended: whoever counts members by the dates never counts it.
    ...(begun ? { startDate: row.start_date } : {}),
    ...(row.end_date === null || row.invitation_status === 'INVITED' ? {} : { endDate: row.end_date }),
    _links: {
      self: { href: enrollmentPath(row.subscription_id, row.id) },
      membershipSubscription: { href: subscriptionPath(row.subscription_id) }
    }
  }
}

async function enrollmentRow(db: DbOrTx, subscriptionId: string, id: string): Promise<EnrollmentRow> {
  const row = await selectEnrollment(enrollments(db)).where('e.id', '=', id).where('e.subscription_id', '=', subscriptionId).executeTakeFirst()
  if (!row) throw new NotFoundError(`enrollment ${id.slice(0, 100)} not found in membership subscription ${subscriptionId.slice(0, 100)}`)
  return row
}

/** The user an enrollment request names: by id, or by the e-mail they signed up with. */
async function invitedUser(tx: DbOrTx, request: MembershipEnrollmentRequest): Promise<string> {
  if ((request.user === undefined) === (request.email === undefined)) throw new BadRequestError('body: name the user by exactly one of user.id or email')
  if (request.user !== undefined) {
    if (!(await tx.selectFrom('users').select('id').where('id', '=', request.user.id).executeTakeFirst())) {
      throw new BadRequestError(`user.id: no user ${request.user.id.slice(0, 100)}`)
    }
    return request.user.id
  }
  const email = request.email!.trim().toLowerCase()
  const user = await tx.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()
  if (!user) throw new BadRequestError(`email: no member of the club signed up with ${JSON.stringify(email.slice(0, 100))}`)
  return user.id
}

/**
 * Whether `userId` may hold an active enrollment of `type` now: not while they hold one (here or in
 * another subscription), nor while they are buying a membership of that type themselves.
 */
async function refuseSecondOfType(tx: DbOrTx, userId: string, subscriptionId: string, type: MembershipType, now: Date): Promise<void> {
  const at = now.toISOString()
  const existing = await activeEnrollmentOfType(tx, userId, type, at)
  if (existing) {
    throw new ConflictError(
      existing.subscription_id === subscriptionId
        ? `the user is already enrolled in this membership (enrollment ${existing.id})`
        : `the user already holds an active ${type} enrollment (enrollment ${existing.id} in membership subscription ${existing.subscription_id})`
    )
  }
  // A user in the middle of buying a membership of this type (not yet confirmed, so no enrollment
  // yet) would hold two once it is confirmed.
  const buying = await tx
    .selectFrom('membership_subscriptions as s')
    .innerJoin('memberships as m', 'm.id', 's.membership_id')
    .select(['s.id', 's.status'])
    .where('s.member_id', '=', userId)
    .where('m.type', '=', type)
    .where((eb) =>
      eb.or([
        eb('s.status', '=', 'REQUIRES_AUTHENTICATION'),
        eb.and([eb('s.status', '=', 'DRAFT'), eb('s.created_at', '>', new Date(now.getTime() - DRAFT_LIFETIME_MS).toISOString())])
      ])
    )
    .executeTakeFirst()
  if (buying) throw new ConflictError(`the user is buying a ${type} membership of their own (membership subscription ${buying.id}, ${buying.status})`)
}

/**
 * A plan's maxEnrollments: the members a subscription covers (active ones, the owner included), and
 * with `pending` the invitations not yet answered, since each may still be accepted.
 */
async function refuseOverCap(tx: DbOrTx, subscriptionId: string, max: number | null, at: string, pending: boolean): Promise<void> {
  if (max === null) return
  const counted = await tx
    .selectFrom('membership_enrollments')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('subscription_id', '=', subscriptionId)
    .where((eb) =>
      eb.or([
        eb.and([eb('invitation_status', '=', 'ACCEPTED'), eb.or([eb('end_date', 'is', null), eb('end_date', '>', at)])]),
        ...(pending ? [eb('invitation_status', '=', 'INVITED')] : [])
      ])
    )
    .executeTakeFirstOrThrow()
  if (Number(counted.n) >= max) {
    throw new ConflictError(`this plan covers at most ${max} members per subscription (maxEnrollments), and ${Number(counted.n)} are enrolled${pending ? ' or invited' : ''}`)
  }
}

/**
 * Adds a member to a subscription. The owner invites (INVITED: nothing changes for the invited user
 * until they accept: no fee on the owner's order, no discount, no 409 on their own purchase); staff
 * enrol directly (a front desk adding a child). Every rule is checked, and the row written, in one
 * IMMEDIATE transaction, so two requests (or two processes) enrolling the same user queue and the
 * second sees the first; the partial unique index backs that up for open-ended enrollments.
 */
export async function createEnrollment(
  db: Db,
  subscriptionId: string,
  request: MembershipEnrollmentRequest,
  actor: Actor,
  deps: EnrollmentDeps
): Promise<MembershipEnrollment> {
  const now = deps.clock.now()
  const at = now.toISOString()
  const created = await db.transaction().execute(async (tx) => {
    const subscription = await visibleRow(tx, subscriptionId, actor)
    if ((request.customFee ?? 0) !== 0 && !isStaff(actor)) throw new ForbiddenError('only staff may set a customFee')
    if (!inForce(subscription, now)) throw new ConflictError(`the subscription is not in force (${extendedStatusOf(subscription, now)}); no one can be added to it`)
    const plan = await tx.selectFrom('memberships').select(['type', 'display_name', 'max_enrollments']).where('id', '=', subscription.membership_id).executeTakeFirstOrThrow()
    const fee = requestMinor(request.customFee ?? 0, 'customFee', currencyExponent(subscription.currency))
    if (fee > 0 && (subscription.charge_type === 'FREE' || subscription.charge_type === 'NON_RECURRING')) {
      throw new BadRequestError(`customFee: a ${subscription.charge_type} membership is not renewed, so a custom fee would never be charged`)
    }
    const userId = await invitedUser(tx, request)
    const direct = isStaff(actor)
    // The mail's link answers the invitation without signing in: only its hash is kept.
    const token = direct ? null : randomToken()
    if (direct) await refuseSecondOfType(tx, userId, subscription.id, plan.type, now)
    else {
      const open = await tx
        .selectFrom('membership_enrollments')
        .select('id')
        .where('subscription_id', '=', subscription.id)
        .where('user_id', '=', userId)
        .where('invitation_status', '=', 'INVITED')
        .executeTakeFirst()
      if (open) throw new ConflictError(`the user is already invited to this membership (enrollment ${open.id})`)
      const active = await activeEnrollmentOfType(tx, userId, plan.type, at)
      if (active?.subscription_id === subscription.id) throw new ConflictError(`the user is already enrolled in this membership (enrollment ${active.id})`)
    }
    await refuseOverCap(tx, subscription.id, plan.max_enrollments, at, true)

    const row: MembershipEnrollmentsTable = {
      id: randomUUID(),
      subscription_id: subscription.id,
      membership_id: subscription.membership_id,
      membership_type: plan.type,
      user_id: userId,
      creator_id: actor.id,
      is_owner: 0,
      custom_fee_minor: fee,
      start_date: at,
      // It ends with its subscription: when a cancellation is pending, or a NON_RECURRING one runs out.
      // An invitation is no enrollment yet: it ends as it starts, so nothing counts it as active.
      end_date: direct ? subscription.end_date : at,
      created_at: at,
      invitation_status: direct ? 'ACCEPTED' : 'INVITED',
      invitation_token_hash: token === null ? null : sha256Hex(token)
    }
    try {
      await tx.insertInto('membership_enrollments').values(row).execute()
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConflictError(`the user already holds an active ${plan.type} enrollment`)
      throw err
    }
    const enrollment = toEnrollment({ ...row, display_name: plan.display_name, currency: subscription.currency })
    await recordEnrollmentEvent(tx, enrollment, 'membership_enrollment.created', now)
    return { enrollment, token }
  })
  if (created.token !== null) await deps.invite(created.enrollment, created.token)
  return created.enrollment
}

/**
 * The invited user (only they) accepts or declines. Accepting checks again what staff's direct
 * enrolment checks (one active enrollment per type, no purchase of their own under way, the plan's
 * cap) and starts the enrollment now; declining leaves it as it is, never active.
 */
export async function answerInvitation(db: Db, subscriptionId: string, id: string, accept: boolean, actor: Actor, clock: Clock): Promise<MembershipEnrollment> {
  return db.transaction().execute(async (tx) => {
    const row = await enrollmentRow(tx, subscriptionId, id)
    if (row.user_id !== actor.id) {
      if (isStaff(actor)) throw new ForbiddenError('only the invited user may accept or decline an invitation')
      throw new NotFoundError(`enrollment ${id.slice(0, 100)} not found in membership subscription ${subscriptionId.slice(0, 100)}`)
    }
    return toEnrollment(await settleInvitation(tx, row, accept, clock.now()))
  })
}

/** An enrollment event with the enrollment as GET answers it, written in the change's transaction. */
async function recordEnrollmentEvent(tx: DbOrTx, enrollment: MembershipEnrollment, type: Extract<EventType, `membership_enrollment.${string}`>, now: Date): Promise<void> {
  await recordEvent(tx, { type, resourceId: enrollment.id, data: enrollment }, now)
}

/** Why an invitation that is no longer INVITED cannot be answered, in words. */
export function answeredInvitation(status: EnrollmentRow['invitation_status']): ConflictError {
  return new ConflictError(
    status === 'WITHDRAWN' ? 'the invitation was withdrawn; it can no longer be answered' : `the invitation was already answered (${status})`
  )
}

/**
 * Accepts or declines an invitation, inside the caller's transaction; the signed-in answer and the
 * mail's link both come here, so both follow the same rules. The row is written only while it is
 * still INVITED, so of two answers racing (two tabs, two processes) the second gets the 409.
 */
export async function settleInvitation(tx: DbOrTx, row: EnrollmentRow, accept: boolean, now: Date): Promise<EnrollmentRow> {
  const at = now.toISOString()
  if (row.invitation_status !== 'INVITED') throw answeredInvitation(row.invitation_status)
  const write = async (values: Partial<MembershipEnrollmentsTable>) => {
    const result = await tx.updateTable('membership_enrollments').set(values).where('id', '=', row.id).where('invitation_status', '=', 'INVITED').executeTakeFirst()
    if (Number(result.numUpdatedRows) !== 1) throw new ConflictError('the invitation was answered meanwhile')
    return { ...row, ...values }
  }
  // Declined: it ends now, and begins then too, so that no period counts it (chargedMembers).
  if (!accept) return write({ invitation_status: 'DECLINED', start_date: at, end_date: at })
  const subscription = await tx.selectFrom('membership_subscriptions').selectAll().where('id', '=', row.subscription_id).executeTakeFirstOrThrow()
  if (!inForce(subscription, now)) throw new ConflictError(`the subscription is not in force (${extendedStatusOf(subscription, now)}); the invitation can no longer be accepted`)
  const plan = await tx.selectFrom('memberships').select('max_enrollments').where('id', '=', subscription.membership_id).executeTakeFirstOrThrow()
  await refuseSecondOfType(tx, row.user_id, row.subscription_id, row.membership_type, now)
  await refuseOverCap(tx, row.subscription_id, plan.max_enrollments, at, false)
  try {
    const accepted = await write({ invitation_status: 'ACCEPTED', start_date: at, end_date: subscription.end_date })
    await recordEnrollmentEvent(tx, toEnrollment(accepted), 'membership_enrollment.accepted', now)
    return accepted
  } catch (err) {
    if (isUniqueViolation(err)) throw new ConflictError(`the user already holds an active ${row.membership_type} enrollment`)
    throw err
  }
}

/**
 * The owner or staff end a member's enrollment now, and so may the enrolled member themself (they
 * were added by the owner, and must be able to leave); it no longer adds a fee. The owner's own
 * cannot be ended this way.
 */
export async function deleteEnrollment(db: Db, subscriptionId: string, id: string, actor: Actor, clock: Clock): Promise<MembershipEnrollment> {
  const now = clock.now()
  const at = now.toISOString()
  return db.transaction().execute(async (tx) => {
    const removed = async (enrollment: MembershipEnrollment) => {
      await recordEnrollmentEvent(tx, enrollment, 'membership_enrollment.removed', now)
      return enrollment
    }
    const own = await tx
      .selectFrom('membership_enrollments')
      .select('id')
      .where('id', '=', id)
      .where('subscription_id', '=', subscriptionId)
      .where('user_id', '=', actor.id)
      .executeTakeFirst()
    if (!own) await visibleRow(tx, subscriptionId, actor)
    const row = await enrollmentRow(tx, subscriptionId, id)
    if (row.is_owner === 1) throw new ConflictError("the owner's enrollment cannot be removed; cancel the membership subscription instead")
    // An invitation not yet answered never began: removing it withdraws it (the invited user
    // removing it declines it), so neither its link nor …/acceptance can accept it afterwards.
    if (row.invitation_status === 'INVITED') {
      const invitationStatus = own ? 'DECLINED' : 'WITHDRAWN'
      // It ends now, and begins then too, so that no period counts it (chargedMembers).
      const ended = { invitation_status: invitationStatus, start_date: at, end_date: at } as const
      await tx.updateTable('membership_enrollments').set(ended).where('id', '=', id).where('invitation_status', '=', 'INVITED').execute()
      return removed(toEnrollment({ ...row, ...ended }))
    }
    // Already ended (removed before, or its subscription ended): a repeated DELETE answers it as it is.
    if (row.end_date !== null && row.end_date <= at) return toEnrollment(row)
    await tx.updateTable('membership_enrollments').set({ end_date: at }).where('id', '=', id).execute()
    return removed(toEnrollment({ ...row, end_date: at }))
  })
}

/** The enrolled user, the subscription's owner or staff; anyone else is told it does not exist. */
export async function getEnrollment(db: DbOrTx, subscriptionId: string, id: string, actor: Actor): Promise<MembershipEnrollment> {
  const row = await enrollmentRow(db, subscriptionId, id)
  if (row.user_id === actor.id || isStaff(actor)) return toEnrollment(row)
  const subscription = await db.selectFrom('membership_subscriptions').select('member_id').where('id', '=', subscriptionId).executeTakeFirstOrThrow()
  if (subscription.member_id !== actor.id) {
    throw new NotFoundError(`enrollment ${id.slice(0, 100)} not found in membership subscription ${subscriptionId.slice(0, 100)}`)
  }
  return toEnrollment(row)
}

/** The members a subscription covers, ended ones too; its owner or staff. Newest first. */
export async function listSubscriptionEnrollments(db: DbOrTx, subscriptionId: string, query: MembershipEnrollmentListQuery, actor: Actor, path: string) {
  await visibleRow(db, subscriptionId, actor)
  const base = enrollments(db).where('e.subscription_id', '=', subscriptionId)
  return page(base, query, path)
}

/** What a member belongs to (their own); staff see everyone's and may filter by user. Newest first. */
export async function listEnrollmentsOfUser(db: DbOrTx, query: MembershipEnrollmentsOfUserQuery, actor: Actor, path: string) {
  if (query.userId !== undefined && query.userId !== actor.id && !isStaff(actor)) {
    throw new ForbiddenError("only staff may list another member's enrollments")
  }
  const userId = isStaff(actor) ? query.userId : actor.id
  let base = enrollments(db)
  if (userId !== undefined) base = base.where('e.user_id', '=', userId)
  return page(base, query, path)
}

async function page(base: ReturnType<typeof enrollments>, query: { page?: number; ipp?: number }, path: string) {
  const request = pageRequest(query)
  const [rows, count] = await Promise.all([
    selectEnrollment(base).orderBy('e.created_at', 'desc').orderBy('e.id', 'desc').limit(request.ipp).offset(request.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  ])
  return paged(rows.map(toEnrollment), Number(count.n), request, path, query)
}
