// The signed-in user's profile and default payment method (read with an API key or a Bearer token).
import Type, { type Static } from 'typebox'
import { DateTime, ErrorBody, Links, apiKeyOrBearerSecurity, defineRoutes, scopedSecurity } from './common.js'

/** Roles, least to most privileged. */
export const UserRole = Type.Enum(['member', 'staff', 'admin'])
export type UserRole = Static<typeof UserRole>

export const User = Type.Object({
  id: Type.String(),
  email: Type.String({ format: 'email' }),
  firstName: Type.Union([Type.String(), Type.Null()]),
  lastName: Type.Union([Type.String(), Type.Null()]),
  role: UserRole,
  createdDate: DateTime(),
  _links: Links
})
export type User = Static<typeof User>

/** What a payment provider returns about a card; the card number itself is never stored. */
export const PaymentMethod = Type.Object({
  id: Type.String(),
  brand: Type.String({ examples: ['visa', 'mastercard', 'amex'] }),
  last4: Type.String({ pattern: '^[0-9]{4}$' }),
  expMonth: Type.Integer({ minimum: 1, maximum: 12 }),
  expYear: Type.Integer({ minimum: 2000, maximum: 2100 }),
  _links: Links
})
export type PaymentMethod = Static<typeof PaymentMethod>

const limitHeaders = 'Requests with an `x-api-key` are limited to 300 per 60 seconds per client IP.'

export const userRoutes = defineRoutes({
  current: {
    method: 'GET',
    url: '/apis/v2/users/current',
    schema: {
      operationId: 'getCurrentUser',
      summary: 'The authenticated user',
      description: `Accepts an API key (\`x-api-key\`) or a Bearer token. ${limitHeaders}`,
      tags: ['users'],
      security: scopedSecurity('replays', 'profile'),
      response: { 200: User, 401: ErrorBody, 403: ErrorBody, 429: ErrorBody }
    }
  },
  currentPaymentMethod: {
    method: 'GET',
    url: '/apis/v2/users/current/payment-method',
    schema: {
      operationId: 'getCurrentUserPaymentMethod',
      summary: "The authenticated user's default payment method",
      description: `Accepts an API key (\`x-api-key\`) or a Bearer token. 404 when the user has none. ${limitHeaders}`,
      tags: ['users'],
      security: apiKeyOrBearerSecurity,
      response: { 200: PaymentMethod, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody }
    }
  }
})

// Account erasure (issue 14): asked for here, carried out by the users-cleanup job after the grace period.
export const UserDeletion = Type.Object({
  id: Type.String(),
  deletionRequestedDate: DateTime(),
  deletionDate: DateTime({ description: 'From then on the users-cleanup job erases the personal data' }),
  _links: Links
})
export type UserDeletion = Static<typeof UserDeletion>

export const userDeletionRoutes = defineRoutes({
  deleteCurrent: {
    method: 'DELETE',
    url: '/apis/v2/users/current',
    schema: {
      operationId: 'deleteCurrentUser',
      summary: "Schedule the authenticated user's account for erasure",
      description:
        `Accepts an API key (\`x-api-key\`) or a Bearer token. After USER_DELETION_GRACE_DAYS the users-cleanup job erases the name, ` +
        'e-mail, password and payment methods, ends the memberships and revokes every token and key; orders keep their amounts. ' +
        `Asking again answers the same dates. ${limitHeaders}`,
      tags: ['users'],
      security: apiKeyOrBearerSecurity,
      response: { 202: UserDeletion, 401: ErrorBody, 403: ErrorBody, 429: ErrorBody }
    }
  }
})
