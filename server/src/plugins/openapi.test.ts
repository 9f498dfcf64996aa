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
  const unserved: string[] = []
  const declared = new Set<string>()
  for (const [group, routes] of groups) {
    for (const [name, route] of Object.entries(routes)) {
      declared.add(`${route.method} ${route.url.replace(/:(\w+)/g, '{$1}')}`)
      if (!ctx.app.hasRoute({ method: route.method, url: route.url })) {
        unserved.push(`${group}.${name}`)
        continue
      }
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
  // The deprecated product-offering list is declared but has no issue yet; nothing else may be missing.
  t.same(unserved, ['productOfferingRoutes.list'], 'every other contract route is served')

  // And the other way: every API operation in the document comes from the contract.
  for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    if (!path.startsWith('/apis/v2/')) continue
    for (const method of Object.keys(operations)) {
      t.ok(declared.has(`${method.toUpperCase()} ${path}`), `${method.toUpperCase()} ${path} is declared in the contract`)
    }
  }
  const ui = await ctx.app.inject({ url: '/documentation/' })
  t.equal(ui.statusCode, 200)
})
