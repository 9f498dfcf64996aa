// A test app with a staff user, a small venue and helpers to call the template routes.
import { testApp, userWithToken, type TestApp } from './app.js'
import { testVenue } from './venue.js'

export async function templateTestContext(t: { teardown(fn: () => unknown): void }) {
  const ctx = await testApp(t)
  const staff = await userWithToken(ctx, 'staff')
  const venue = await testVenue(ctx)
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object, headers: Record<string, string> = {}) =>
    ctx.app.inject({ method, url, payload, headers: { authorization: staff.authorization, ...headers } })
  const create = async (body: object = {}) => {
    const res = await call('POST', '/apis/v2/templates', { name: 'Open play', type: 'EVENT', data: { subtype: 'OPEN_PLAY' }, ...body })
    if (res.statusCode !== 201) throw new Error(res.body)
    return res.json()
  }
  /** Calls as a new admin user (the venue and event endpoints are admin-only). */
  const asAdmin = async () => {
    const admin = await userWithToken(ctx, 'admin')
    return (method: 'POST' | 'DELETE', url: string, payload?: object) =>
      ctx.app.inject({ method, url, payload, headers: { authorization: admin.authorization } })
  }
  return { ctx, staff, venue, call, create, asAdmin }
}

export type TemplateTestContext = Awaited<ReturnType<typeof templateTestContext>>
export type { TestApp }
