import t from 'tap'
import * as contract from '@club/contract'
import type { RouteContract } from '@club/contract'
import { testApp } from '../test-support/app.js'

// Every route group the contract declares (`…Routes` exports).
const groups = Object.entries(contract).filter(([name]) => /Routes$/.test(name)) as Array<[string, Record<string, RouteContract>]>

t.test('every served contract route is in /documentation/json with its schemas', async (t) => {
  const ctx = await testApp(t)
  const res = await ctx.app.inject({ url: '/documentation/json' })
  t.equal(res.statusCode, 200)
  const doc = res.json()
  let served = 0
  for (const [group, routes] of groups) {
    for (const [name, route] of Object.entries(routes)) {
      if (!ctx.app.hasRoute({ method: route.method, url: route.url })) continue
      served++
      const path = route.url.replace(/:(\w+)/g, '{$1}')
      const operation = doc.paths[path]?.[route.method.toLowerCase()]
      t.ok(operation, `${group}.${name}: ${route.method} ${path} is documented`)
      if (!operation) continue
      for (const status of Object.keys(route.schema.response)) {
        t.ok(operation.responses[status], `${group}.${name} documents its ${status} answer`)
      }
      if (route.schema.body) t.ok(operation.requestBody, `${group}.${name} documents its body`)
    }
  }
  t.ok(served >= 3, `${served} contract routes are served`)
  const ui = await ctx.app.inject({ url: '/documentation/' })
  t.equal(ui.statusCode, 200)
})
