// A test payment provider that fails as a real provider's HTTP call does: `down` refuses every
// charge before it is made (unreachable), `loseNextAnswer` charges and then loses the answer (a
// timeout). Either way the caller sees PaymentProviderError.
import { PaymentProviderError, TestPaymentProvider, type ChargeInput } from '../payments/index.js'

export function lossyProvider() {
  const real = new TestPaymentProvider()
  const control = { down: false, loseNextAnswer: false }
  const provider = Object.assign(Object.create(real) as TestPaymentProvider, {
    charge: async (input: ChargeInput) => {
      if (control.down) throw new PaymentProviderError('connection refused')
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
