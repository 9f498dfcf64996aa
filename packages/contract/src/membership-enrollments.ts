// Membership enrollments: the members a subscription covers, and the invitation mail's link.
import Type, { type Static } from 'typebox'
import { Collection, DateTime, ErrorBody, IdParams, ItemRef, Nullable, PageQuery, PagedCollection, ValidationError, defineRoutes, apiKeyOrBearerSecurity, noSecurity } from './common.js'
import { MembershipType } from './memberships.js'

const signedIn = { tags: ['memberships'], security: apiKeyOrBearerSecurity }
const guarded = { 401: ErrorBody, 403: ErrorBody }
/** An amount in currency units, as the API shows money: at most the currency's decimals. */
const Amount = (description: string) => Type.Number({ minimum: 0, maximum: 1_000_000, description })

export const MembershipEnrollment = Type.Object({
  id: Type.String(),
  displayName: Type.String(),
  type: MembershipType,
  user: ItemRef,
  creatorUser: ItemRef,
  membership: ItemRef,
  membershipSubscription: ItemRef,
  isOwner: Nullable(Type.Boolean()),
  invitationStatus: Type.Optional(
    Type.Enum(['INVITED', 'ACCEPTED', 'DECLINED', 'WITHDRAWN'], {
      description:
        'Not in the reference. An enrollment the owner asks for is an invitation until the invited user accepts it; staff enrol directly (ACCEPTED). ' +
        'An invitation removed before it was answered is WITHDRAWN. Only an ACCEPTED enrollment has a startDate: an invitation (INVITED, DECLINED, ' +
        'WITHDRAWN) never began, and is named in errors (INVITATION_PENDING, INVITATION_DECLINED, INVITATION_WITHDRAWN); a declined or withdrawn ' +
        'one has the endDate when it was answered'
    })
  ),
  errors: Nullable(Type.Array(ValidationError)),
  customFee: Type.Number({ default: 0 }),
  createdDate: Type.Optional(DateTime()),
  startDate: Type.Optional(DateTime()),
  endDate: Type.Optional(DateTime()),
  _links: Type.Record(Type.String(), Type.Unknown())
})
export type MembershipEnrollment = Static<typeof MembershipEnrollment>

export const MembershipEnrollmentCollection = Collection(MembershipEnrollment)
export type MembershipEnrollmentCollection = Static<typeof MembershipEnrollmentCollection>

// Enrollments: the members a subscription covers (its owner, and those the owner or staff add).

export const MembershipEnrollmentRequest = Type.Object(
  {
    user: Type.Optional(ItemRef),
    email: Type.Optional(Type.String({ minLength: 3, maxLength: 320, description: 'The user to invite, by their e-mail, instead of user.id' })),
    customFee: Type.Optional(Amount('Staff only: added to each renewal besides the plan\'s additional member fee; default 0'))
  },
  { additionalProperties: false }
)
export type MembershipEnrollmentRequest = Static<typeof MembershipEnrollmentRequest>

export const MembershipEnrollmentParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100, description: 'The membership subscription' }),
  enrollmentId: Type.String({ minLength: 1, maxLength: 100 })
})
export type MembershipEnrollmentParams = Static<typeof MembershipEnrollmentParams>

export const MembershipEnrollmentAcceptance = Type.Object(
  { accept: Type.Boolean({ description: 'true accepts the invitation, false declines it' }) },
  { additionalProperties: false }
)
export type MembershipEnrollmentAcceptance = Static<typeof MembershipEnrollmentAcceptance>

export const MembershipEnrollmentListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false })
export type MembershipEnrollmentListQuery = Static<typeof MembershipEnrollmentListQuery>

export const MembershipEnrollmentsOfUserQuery = Type.Object(
  { ...PageQuery, userId: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Staff only; default: the caller' })) },
  { additionalProperties: false }
)
export type MembershipEnrollmentsOfUserQuery = Static<typeof MembershipEnrollmentsOfUserQuery>

export const membershipEnrollmentRoutes = defineRoutes({
  list: {
    method: 'GET',
    url: '/apis/v2/membership-subscriptions/:id/enrollments',
    schema: {
      ...signedIn,
      operationId: 'listMembershipSubscriptionEnrollments',
      summary: 'The members a subscription covers',
      description:
        "The subscription's owner or staff; anyone else gets 404. The owner's enrollment (isOwner true) and every member " +
        'added, ended ones too (with endDate). Newest first.',
      params: IdParams,
      querystring: MembershipEnrollmentListQuery,
      response: { 200: PagedCollection(MembershipEnrollment), 400: ErrorBody, ...guarded, 404: ErrorBody }
    }
  },
  create: {
    method: 'POST',
    url: '/apis/v2/membership-subscriptions/:id/enrollments',
    schema: {
      ...signedIn,
      operationId: 'createMembershipEnrollment',
      summary: 'Add a member of the club to a membership',
      description:
        "The subscription's owner or staff, while it is in force; the user by `user.id` or by `email`. The owner invites: " +
        'the enrollment is INVITED, the user is told by mail, and nothing changes for them (no fee on the order, no ' +
        'discount, no refusal of their own purchase) until they accept it (…/acceptance). Staff enrol directly. The ' +
        "plan's additionalMemberFee (and the customFee, which only staff may set) is charged from the next renewal on, one " +
        'order line each. A user holds at most one active enrollment per membership type: a second is a 409 naming the ' +
        "first; past the plan's maxEnrollments (invitations not yet answered included) a 409 too.",
      params: IdParams,
      body: MembershipEnrollmentRequest,
      response: { 201: MembershipEnrollment, 400: ErrorBody, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  },
  answer: {
    method: 'POST',
    url: '/apis/v2/membership-subscriptions/:id/enrollments/:enrollmentId/acceptance',
    schema: {
      ...signedIn,
      operationId: 'createMembershipEnrollmentAcceptance',
      summary: 'Accept or decline an invitation',
      description:
        'The invited user only (staff 403, anyone else 404). Accepting starts the enrollment now, under the same rules as ' +
        "staff's direct enrolment: 409 when the user holds an active enrollment of the plan's type or is buying one, or " +
        "when the plan's maxEnrollments is reached. An invitation already answered or withdrawn is a 409. The invitation " +
        "mail's link answers the same way without signing in (createMembershipEnrollmentInvitationAnswer).",
      params: MembershipEnrollmentParams,
      body: MembershipEnrollmentAcceptance,
      response: { 200: MembershipEnrollment, 400: ErrorBody, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  },
  get: {
    method: 'GET',
    url: '/apis/v2/membership-subscriptions/:id/enrollments/:enrollmentId',
    schema: {
      ...signedIn,
      operationId: 'getMembershipEnrollment',
      summary: 'An enrollment',
      description: "The enrolled member, the subscription's owner or staff; anyone else gets 404.",
      params: MembershipEnrollmentParams,
      response: { 200: MembershipEnrollment, ...guarded, 404: ErrorBody }
    }
  },
  delete: {
    method: 'DELETE',
    url: '/apis/v2/membership-subscriptions/:id/enrollments/:enrollmentId',
    schema: {
      ...signedIn,
      operationId: 'deleteMembershipEnrollment',
      summary: 'Remove a member from a membership',
      description:
        "The subscription's owner or staff. The enrollment is ended now (its endDate set; it stays in the history) and " +
        "adds no fee to later renewals; one already ended is answered as it is. The owner's own enrollment cannot be " +
        'removed (409): cancel the subscription instead. An invitation not yet answered is withdrawn instead ' +
        '(invitationStatus WITHDRAWN; declined when the invited user removes it), and can no longer be accepted.',
      params: MembershipEnrollmentParams,
      response: { 200: MembershipEnrollment, ...guarded, 404: ErrorBody, 409: ErrorBody }
    }
  },
  listOfUser: {
    method: 'GET',
    url: '/apis/v2/membership-enrollments',
    schema: {
      ...signedIn,
      operationId: 'listMembershipEnrollments',
      summary: 'The memberships a member belongs to',
      description: "A member's own enrollments, as owner or added member; staff see everyone's and may filter by userId. Newest first.",
      querystring: MembershipEnrollmentsOfUserQuery,
      response: { 200: PagedCollection(MembershipEnrollment), 400: ErrorBody, ...guarded }
    }
  }
})

// The invitation mail's link: the page it opens reads and answers the invitation with the mail's
// token as its only credential (no account needed to be signed in on that device).

const InvitationToken = Type.String({ minLength: 1, maxLength: 200, writeOnly: true, description: "The token of the invitation mail's link" })

export const EnrollmentInvitationLookup = Type.Object({ token: InvitationToken }, { additionalProperties: false })
export type EnrollmentInvitationLookup = Static<typeof EnrollmentInvitationLookup>

export const EnrollmentInvitationAnswer = Type.Object(
  { token: InvitationToken, accept: Type.Boolean({ description: 'true accepts the invitation, false declines it' }) },
  { additionalProperties: false }
)
export type EnrollmentInvitationAnswer = Static<typeof EnrollmentInvitationAnswer>

/** Only what the invited user needs to decide: who invites them, to which membership, and where it stands. */
export const EnrollmentInvitation = Type.Object({
  inviter: Type.Object({ name: Type.String({ description: "The inviting member's name, else their e-mail" }) }),
  membership: Type.Object({ displayName: Type.String({ description: "The plan's name" }) }),
  invitationStatus: Type.Enum(['INVITED', 'ACCEPTED', 'DECLINED'])
})
export type EnrollmentInvitation = Static<typeof EnrollmentInvitation>

const byLink = { tags: ['memberships'], security: noSecurity }
const linkErrors =
  'An unknown token is a 400; an invitation already answered, withdrawn, or whose subscription is no longer in force ' +
  '(the invitation expired with it) is a 409 saying which. Limited per client IP (429).'

export const enrollmentInvitationRoutes = defineRoutes({
  read: {
    method: 'POST',
    url: '/apis/v2/membership-enrollment-invitations/lookup',
    schema: {
      ...byLink,
      operationId: 'getMembershipEnrollmentInvitationByToken',
      summary: "An invitation, by its mail's token",
      description:
        'Not in the reference. What the page behind the invitation mail shows: who invites, to which membership. The token ' +
        `travels in the body, never in an address. ${linkErrors}`,
      body: EnrollmentInvitationLookup,
      response: { 200: EnrollmentInvitation, 400: ErrorBody, 409: ErrorBody, 429: ErrorBody }
    }
  },
  answer: {
    method: 'POST',
    url: '/apis/v2/membership-enrollment-invitations/answer',
    schema: {
      ...byLink,
      operationId: 'createMembershipEnrollmentInvitationAnswer',
      summary: "Accept or decline an invitation with its mail's token",
      description:
        'Not in the reference. The same as the invited user\'s …/acceptance: accepting re-checks the one active enrollment ' +
        "per type, a purchase of their own under way and the plan's maxEnrollments (409 naming the rule), and an " +
        `invitation is answered once. Credentials sent along change nothing: the token alone says whose invitation it is. ${linkErrors}`,
      body: EnrollmentInvitationAnswer,
      response: { 200: EnrollmentInvitation, 400: ErrorBody, 409: ErrorBody, 429: ErrorBody }
    }
  }
})
