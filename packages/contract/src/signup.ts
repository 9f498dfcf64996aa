// Signup phone verification: one endpoint, two modes (send a code, or verify one).
import Type, { type Static } from 'typebox'
import { DateTime, ErrorBody, ValidationError, defineRoutes, noSecurity } from './common.js'

export const PhoneVerificationStatus = Type.Enum(['pending', 'approved', 'expired', 'max_attempts_reached', 'canceled'])
export type PhoneVerificationStatus = Static<typeof PhoneVerificationStatus>

export const PhoneVerificationRequest = Type.Object(
  {
    phoneNumber: Type.Optional(Type.String({ maxLength: 32, description: 'E.164, e.g. +14155552671' })),
    recaptchaToken: Type.Optional(Type.String({ maxLength: 4096, description: 'Required by the browser-SDK provider' })),
    language: Type.Optional(Type.String({ maxLength: 35, description: 'Preferred SMS language tag' })),
    sessionId: Type.Optional(Type.String({ maxLength: 200 })),
    verificationCode: Type.Optional(Type.String({ maxLength: 32, description: '6 digits; its presence selects verify mode' })),
    verificationId: Type.Optional(Type.String({ maxLength: 4096, writeOnly: true }))
  },
  { additionalProperties: false }
)
export type PhoneVerificationRequest = Static<typeof PhoneVerificationRequest>

export const PhoneVerificationSession = Type.Object({
  sessionId: Type.String(),
  phonePreview: Type.String({ description: 'Last 4 digits' }),
  status: PhoneVerificationStatus,
  expiresAt: DateTime(),
  remainingAttempts: Type.Integer({ minimum: 0 }),
  errors: Type.Array(ValidationError)
})
export type PhoneVerificationSession = Static<typeof PhoneVerificationSession>

export const signupRoutes = defineRoutes({
  phoneVerifications: {
    method: 'POST',
    url: '/apis/v2/signup/phone-verifications',
    schema: {
      operationId: 'createPhoneVerification',
      summary: 'Send or verify a signup phone verification code',
      description: [
        'No authorization. A body with `verificationCode` verifies; otherwise a code is sent to `phoneNumber` (E.164).',
        'A wrong code answers 201 with `status` still `pending`, `remainingAttempts` one lower and an entry in `errors`.',
        'A session lives 10 minutes and allows 5 checks. Sends are limited by a per-number cooldown and per-number',
        'and per-client hourly caps (429 naming the limit). 502: the SMS provider failed.'
      ].join(' '),
      tags: ['signup'],
      security: noSecurity,
      body: PhoneVerificationRequest,
      response: { 201: PhoneVerificationSession, 400: ErrorBody, 404: ErrorBody, 429: ErrorBody, 502: ErrorBody }
    }
  }
})
