// Chooses the payment provider from the configuration (PAYMENT_PROVIDER).
import { ConfigError, type Config } from '../config.js'
import type { PaymentProvider } from './provider.js'
import { StripePaymentProvider } from './stripe-provider.js'
import { TestPaymentProvider } from './test-provider.js'

export * from './provider.js'
export { StripePaymentProvider, type StripeSettings } from './stripe-provider.js'
export { TEST_CARDS, TEST_CARDS_HELP, TestPaymentProvider, type TestCharge } from './test-provider.js'

export function createPaymentProvider(config: Pick<Config, 'PAYMENT_PROVIDER' | 'STRIPE_SECRET_KEY' | 'STRIPE_API_BASE_URL'>): PaymentProvider {
  switch (config.PAYMENT_PROVIDER) {
    case 'stripe':
      // loadConfig already refuses this; a config built another way (tests, overrides) is checked too.
      if (!config.STRIPE_SECRET_KEY) throw new ConfigError('STRIPE_SECRET_KEY is required with PAYMENT_PROVIDER=stripe')
      return new StripePaymentProvider({ secretKey: config.STRIPE_SECRET_KEY, apiBaseUrl: config.STRIPE_API_BASE_URL })
    default:
      return new TestPaymentProvider()
  }
}
