// A club with a catalogue for the product tests: an admin, staff, a member, a small venue, a PACKAGE
// template, and helpers to add products and save cards.
import type { PaymentProvider, TestPaymentProvider } from '../payments/index.js'
import { testApp, userWithToken } from '../test-support/app.js'
import { testVenue } from '../test-support/venue.js'
import { setDefaultPaymentMethod } from '../users/payment-methods.js'

export type Who = { id: string; authorization: string }

export const picture = {
  small: { href: 'https://cdn.example.org/p/s.png' },
  medium: { href: 'https://cdn.example.org/p/m.png' },
  large: { href: 'https://cdn.example.org/p/l.png' }
}

let skus = 0

export async function productsSetup(t: Parameters<typeof testApp>[0], env: Record<string, string> = {}, paymentProvider?: PaymentProvider) {
  const ctx = await testApp(t, { CLUB_TIMEZONE: 'Europe/Madrid', ...env }, undefined, { paymentProvider })
  const admin = await userWithToken(ctx, 'admin')
  const staff = await userWithToken(ctx, 'staff')
  const member = await userWithToken(ctx, 'member')
  const venue = await testVenue(ctx)
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, who: Who | undefined, payload?: unknown, headers: Record<string, string> = {}) =>
    ctx.app.inject({
      method,
      url,
      headers: { ...(who ? { authorization: who.authorization } : {}), ...headers },
      ...(payload !== undefined ? { payload: payload as object } : {})
    })
  const created = async (res: Awaited<ReturnType<typeof call>>) => {
    if (res.statusCode !== 201) throw new Error(res.body)
    return res.json()
  }
  const template = await created(
    await call('POST', '/apis/v2/templates', staff, {
      name: 'Ten court bookings',
      type: 'PACKAGE',
      data: { validityDays: 90, items: [{ type: 'BOOKING', displayName: 'Court booking', displayNamePlural: 'Court bookings', totalItems: 10 }] }
    })
  )
  const product = async (body: Record<string, unknown> = {}) =>
    created(
      await call('POST', '/apis/v2/admin/products', admin, {
        sku: `SKU-${++skus}`,
        name: 'Ten court bookings',
        type: 'PACKAGE',
        categories: ['POD_SHOP'],
        price: 80,
        picture,
        packageTemplate: { id: template.id },
        ...body
      })
    )
  const card = (who: Who, last4: string) => setDefaultPaymentMethod(ctx.app.db, who.id, { brand: 'visa', last4, expMonth: 12, expYear: 2030 }, ctx.clock)
  return { ctx, admin, staff, member, venue, call, created, template, product, card, provider: ctx.app.paymentProvider as TestPaymentProvider }
}
