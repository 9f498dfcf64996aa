// Twilio Verify (REST API v2): Twilio makes, sends and checks the code; the verification SID is the
// reference. A verification is gone (404) once approved, expired or out of attempts.
import type { FastifyBaseLogger } from 'fastify'
import { BadRequestError, TooManyRequestsError } from '../../errors.js'
import { postToProvider, providerFailure, type ProviderAnswer } from './http.js'
import type { CheckOutcome, CheckRequest, PhoneVerificationProvider, SendRequest } from './provider.js'

export interface TwilioSettings {
  accountSid: string
  authToken: string
  serviceSid: string
  baseUrl: string
}

/** Twilio's error body: `{code, message, more_info, status}`. */
interface TwilioError {
  code?: number
  message?: string
}

interface TwilioVerification {
  sid?: string
  status?: string
}

const codeOf = (answer: ProviderAnswer) => (answer.body as TwilioError | null)?.code

export class TwilioPhoneProvider implements PhoneVerificationProvider {
  readonly name = 'twilio'
  readonly ownsCode = true
  readonly requiresRecaptcha = false

  constructor(
    private readonly settings: TwilioSettings,
    private readonly log: FastifyBaseLogger
  ) {}

  private post(operation: string, path: string, form: Record<string, string>): Promise<ProviderAnswer> {
    const base = this.settings.baseUrl.replace(/\/$/, '')
    const service = encodeURIComponent(this.settings.serviceSid)
    const credentials = Buffer.from(`${this.settings.accountSid}:${this.settings.authToken}`).toString('base64')
    return postToProvider(this.log, { provider: 'twilio', operation }, `${base}/v2/Services/${service}/${path}`, {
      headers: { authorization: `Basic ${credentials}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(form).toString()
    })
  }

  async send(request: SendRequest): Promise<{ reference: string }> {
    const form: Record<string, string> = { To: request.phoneNumber, Channel: 'sms' }
    if (request.language) form.Locale = request.language
    const answer = await this.post('send', 'Verifications', form)
    const verification = answer.body as TwilioVerification | null
    if (answer.status === 200 || answer.status === 201) {
      if (typeof verification?.sid === 'string' && verification.sid) return { reference: verification.sid }
      throw providerFailure(this.log, { provider: 'twilio', operation: 'send' }, answer, 'no sid')
    }
    const code = codeOf(answer)
    // 60200 invalid parameter, 21211/21614 not a valid (mobile) number, 60205 SMS not supported by a landline.
    if (code === 60200 || code === 21211 || code === 21614 || code === 60205) {
      throw new BadRequestError('phoneNumber was refused by the SMS provider: it cannot receive SMS codes')
    }
    if (code === 60410 || code === 60605) throw new BadRequestError('the SMS provider does not send codes to this number or country')
    if (code === 60203 || answer.status === 429) {
      throw new TooManyRequestsError('the SMS provider refuses more codes to this number for now; try again in 10 minutes', 600)
    }
    throw providerFailure(this.log, { provider: 'twilio', operation: 'send' }, answer, code)
  }

  async check(request: CheckRequest): Promise<CheckOutcome> {
    const answer = await this.post('check', 'VerificationCheck', { VerificationSid: request.reference, Code: request.code })
    if (answer.status === 200) {
      const status = (answer.body as TwilioVerification | null)?.status
      if (status === 'approved') return 'approved'
      if (status === 'pending') return 'wrong_code'
      if (status === 'max_attempts_reached') return 'max_attempts_reached'
      return 'expired'
    }
    const code = codeOf(answer)
    if (answer.status === 404) return 'expired'
    if (code === 60202) return 'max_attempts_reached'
    throw providerFailure(this.log, { provider: 'twilio', operation: 'check' }, answer, code)
  }
}
