// Development provider: the code goes to the log with its session id instead of to a phone.
import type { FastifyBaseLogger } from 'fastify'
import type { CheckOutcome, PhoneVerificationProvider, SendRequest } from './provider.js'

export class LogPhoneProvider implements PhoneVerificationProvider {
  readonly name = 'log'
  readonly ownsCode = false
  readonly requiresRecaptcha = false

  constructor(private readonly log: FastifyBaseLogger) {
    log.warn('PHONE_VERIFICATION_PROVIDER=log: signup SMS codes are written to the log, not sent. This is for development only')
  }

  async send(request: SendRequest): Promise<{ reference: null }> {
    this.log.info(
      { sessionId: request.sessionId, phoneNumber: request.phoneNumber, smsCode: request.code },
      'signup SMS code (development log provider)'
    )
    return { reference: null }
  }

  async check(): Promise<CheckOutcome> {
    throw new Error('the log provider does not check codes: the server does')
  }
}
