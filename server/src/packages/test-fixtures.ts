// A PACKAGE template and an issued package, for the packages tests.
import type { TestApp } from '../test-support/app.js'

export const tenBookings = {
  name: '10 court bookings',
  type: 'PACKAGE',
  status: 'PUBLISHED',
  data: {
    displayName: 'Court pass',
    displayNamePlural: 'Court passes',
    validityDays: 90,
    items: [
      { type: 'BOOKING', displayName: 'Court booking', displayNamePlural: 'Court bookings', totalItems: 10, constraints: { bookingSessionPeriodTypeMatchAny: ['OFF PEAK', 'REDUCED'] } },
      { type: 'GUEST_SIGNUP', displayName: 'Guest pass', displayNamePlural: 'Guest passes', totalItems: 2, constraints: { allowKids: false } }
    ]
  }
}

export const threeReplays = {
  name: '3 replays',
  type: 'PACKAGE',
  status: 'PUBLISHED',
  data: { validityDays: 30, items: [{ type: 'REPLAY', displayName: 'Replay', displayNamePlural: 'Replays', totalItems: 3 }] }
}

type Who = { authorization: string }

export function caller(ctx: TestApp) {
  return (method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, who?: Who, payload?: unknown) =>
    ctx.app.inject({
      method,
      url,
      headers: who ? { authorization: who.authorization } : {},
      ...(payload !== undefined ? { payload: payload as object } : {})
    })
}

/** A template made through the API, answering its id. */
export async function packageTemplate(ctx: TestApp, staff: Who, body: object = tenBookings): Promise<string> {
  const res = await caller(ctx)('POST', '/apis/v2/templates', staff, body)
  if (res.statusCode !== 201) throw new Error(`template: ${res.statusCode} ${res.body}`)
  return res.json().id
}

/** A package issued by staff through the API. */
export async function issued(ctx: TestApp, staff: Who, templateId: string, userId: string, extra: object = {}) {
  const res = await caller(ctx)('POST', '/apis/v2/packages', staff, { template: { id: templateId }, user: { id: userId }, ...extra })
  if (res.statusCode !== 201) throw new Error(`issue: ${res.statusCode} ${res.body}`)
  return res.json()
}
