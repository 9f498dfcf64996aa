// Chooses the phone verification provider from the tenant's configuration.
import type { FastifyBaseLogger } from 'fastify'
import { ConfigError, type Config } from '../../config.js'
import { FirebasePhoneProvider } from './firebase.js'
import { LogPhoneProvider } from './log.js'
import type { PhoneVerificationProvider } from './provider.js'
import { TwilioPhoneProvider } from './twilio.js'

function required(config: Config, names: Array<keyof Config>): void {
  const missing = names.filter((name) => !config[name])
  if (missing.length > 0) {
    throw new ConfigError(`PHONE_VERIFICATION_PROVIDER=${config.PHONE_VERIFICATION_PROVIDER} needs ${missing.join(', ')}`)
  }
}

export function createPhoneProvider(config: Config, log: FastifyBaseLogger): PhoneVerificationProvider {
  switch (config.PHONE_VERIFICATION_PROVIDER) {
    case 'twilio':
      required(config, ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN', 'TWILIO_VERIFY_SERVICE_SID'])
      return new TwilioPhoneProvider(
        {
          accountSid: config.TWILIO_ACCOUNT_SID,
          authToken: config.TWILIO_AUTH_TOKEN,
          serviceSid: config.TWILIO_VERIFY_SERVICE_SID,
          baseUrl: config.TWILIO_VERIFY_BASE_URL
        },
        log
      )
    case 'firebase':
      required(config, ['FIREBASE_API_KEY'])
      return new FirebasePhoneProvider({ apiKey: config.FIREBASE_API_KEY, baseUrl: config.FIREBASE_IDENTITY_TOOLKIT_BASE_URL }, log)
    default:
      return new LogPhoneProvider(log)
  }
}
