// A test payment provider whose next answer can be lost after it charged (a timeout), as happens
// to a real provider's HTTP call: the caller sees PaymentProviderError, the charge stands.
import { PaymentProviderError, TestPaymentProvider, type ChargeInput } from '../payments/index.js'

export function lossyProvider() {
  const real = new TestPaymentProvider()
  const control = { loseNextAnswer: false }
  const provider = Object.assign(Object.create(real) as TestPaymentProvider, {
    charge: async (input: ChargeInput) => {
      const result = await real.charge(input)
      if (control.loseNextAnswer) {
        control.loseNextAnswer = false
        throw new PaymentProviderError('timed out')
      }
      return result
    }
  })
  return { provider, real, control }
}
