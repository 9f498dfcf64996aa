// What every SMS verification provider offers the signup service. A provider either delivers a code
// this server made (ownsCode false: the server stores its hash and checks it) or makes, sends and
// checks its own codes (ownsCode true: the server keeps the provider's reference).

import type { Config } from '../../config.js'

/** The providers by name: the values PHONE_VERIFICATION_PROVIDER takes. */
export type PhoneProviderName = Config['PHONE_VERIFICATION_PROVIDER']

export interface SendRequest {
  sessionId: string
  /** E.164 */
  phoneNumber: string
  /** The code to deliver; null for providers that make their own. */
  code: string | null
  language?: string
  recaptchaToken?: string
}

export interface CheckRequest {
  /** What `send` answered (or the SDK's verificationId). */
  reference: string
  phoneNumber: string
  code: string
}

/** How a provider judged a code. `expired`: the provider no longer knows the verification. */
export type CheckOutcome = 'approved' | 'wrong_code' | 'expired' | 'max_attempts_reached'

export interface PhoneVerificationProvider {
  readonly name: PhoneProviderName
  readonly ownsCode: boolean
  /** The browser-SDK provider needs a reCAPTCHA token with every send. */
  readonly requiresRecaptcha: boolean
  /** Sends a code; answers the provider's reference for the verification, if it has one. */
  send(request: SendRequest): Promise<{ reference: string | null }>
  /** Checks a code with a provider that owns its codes. */
  check(request: CheckRequest): Promise<CheckOutcome>
}
