// Firebase phone sign-in through the Identity Toolkit REST API: the browser's reCAPTCHA token goes
// with the send, Firebase makes and checks the code; its sessionInfo (the SDK's verificationId) is
// the reference. The API key travels in the x-goog-api-key header, so it never appears in a URL.
import type { FastifyBaseLogger } from 'fastify'
import { BadRequestError, TooManyRequestsError } from '../../errors.js'
import { postToProvider, providerFailure, type ProviderAnswer } from './http.js'
import type { CheckOutcome, CheckRequest, PhoneVerificationProvider, SendRequest } from './provider.js'

export interface FirebaseSettings {
  apiKey: string
  baseUrl: string
}

/** Google's error body: `{error: {code, message: "INVALID_CODE" or "INVALID_CODE : detail", errors, status}}`. */
function reasonOf(answer: ProviderAnswer): string | undefined {
  const message = (answer.body as { error?: { message?: unknown } } | null)?.error?.message
  return typeof message === 'string' ? message.split(' : ')[0]?.trim() : undefined
}

export class FirebasePhoneProvider implements PhoneVerificationProvider {
  readonly name = 'firebase'
  readonly ownsCode = true
  readonly requiresRecaptcha = true

  constructor(
    private readonly settings: FirebaseSettings,
    private readonly log: FastifyBaseLogger
  ) {}

  private post(operation: string, method: string, body: object, language?: string): Promise<ProviderAnswer> {
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-goog-api-key': this.settings.apiKey }
    if (language) headers['x-firebase-locale'] = language
    const base = this.settings.baseUrl.replace(/\/$/, '')
    return postToProvider(this.log, { provider: 'firebase', operation }, `${base}/v1/accounts:${method}`, {
      headers,
      body: JSON.stringify(body)
    })
  }

  async send(request: SendRequest): Promise<{ reference: string }> {
    if (!request.recaptchaToken) throw new BadRequestError('recaptchaToken is required to send a code')
    const answer = await this.post(
      'send',
      'sendVerificationCode',
      { phoneNumber: request.phoneNumber, recaptchaToken: request.recaptchaToken },
      request.language
    )
    if (answer.status === 200) {
      const sessionInfo = (answer.body as { sessionInfo?: unknown } | null)?.sessionInfo
      if (typeof sessionInfo === 'string' && sessionInfo) return { reference: sessionInfo }
      throw providerFailure(this.log, { provider: 'firebase', operation: 'send' }, answer, 'no sessionInfo')
    }
    const reason = reasonOf(answer)
    if (reason === 'INVALID_PHONE_NUMBER' || reason === 'MISSING_PHONE_NUMBER') {
      throw new BadRequestError('phoneNumber was refused by the SMS provider as not a valid number')
    }
    if (reason === 'CAPTCHA_CHECK_FAILED' || reason === 'INVALID_RECAPTCHA_TOKEN' || reason === 'MISSING_RECAPTCHA_TOKEN') {
      throw new BadRequestError('recaptchaToken was refused: solve the reCAPTCHA again')
    }
    if (reason === 'TOO_MANY_ATTEMPTS_TRY_LATER' || reason === 'QUOTA_EXCEEDED' || answer.status === 429) {
      throw new TooManyRequestsError('the SMS provider refuses more codes for now; try again later')
    }
    throw providerFailure(this.log, { provider: 'firebase', operation: 'send' }, answer, reason)
  }

  async check(request: CheckRequest): Promise<CheckOutcome> {
    const answer = await this.post('check', 'signInWithPhoneNumber', { sessionInfo: request.reference, code: request.code })
    if (answer.status === 200) {
      // The code proves the number Firebase sent it to; that must be the number claimed here.
      const verified = (answer.body as { phoneNumber?: unknown } | null)?.phoneNumber
      if (verified !== request.phoneNumber) throw new BadRequestError('the verification belongs to another phone number')
      return 'approved'
    }
    const reason = reasonOf(answer)
    if (reason === 'INVALID_CODE') return 'wrong_code'
    if (reason === 'SESSION_EXPIRED' || reason === 'CODE_EXPIRED') return 'expired'
    if (reason === 'INVALID_SESSION_INFO' || reason === 'MISSING_SESSION_INFO') {
      throw new BadRequestError('verificationId is not a verification the SMS provider knows')
    }
    if (reason === 'TOO_MANY_ATTEMPTS_TRY_LATER' || answer.status === 429) return 'max_attempts_reached'
    throw providerFailure(this.log, { provider: 'firebase', operation: 'check' }, answer, reason)
  }
}
