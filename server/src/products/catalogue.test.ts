import t from 'tap'
import { runCli } from '../cli.js'
import { monthlyPlan } from '../memberships/test-fixtures.js'
import { errorOf } from '../test-support/app.js'
import { picture, productsSetup } from './test-fixtures.js'

const PRODUCTS = '/apis/v2/admin/products'
const ON_SALE = '/apis/v2/products'

t.test('admins add and change products; staff read the catalogue; members and strangers are refused', async (t) => {
  const { call, admin, staff, member, venue, template, product } = await productsSetup(t)
  const created = await product({ sku: 'PKG-10', description: 'Ten bookings', tax: { name: 'VAT', percentage: 21 }, areas: { items: [{ id: venue.hall.id }] } })
  t.match(created, {
    sku: 'PKG-10',
    type: 'PACKAGE',
    categories: ['POD_SHOP'],
    price: 80,
    currency: 'EUR',
    picture,
    areas: { items: [{ id: venue.hall.id }], _total: 1 },
    tax: { name: 'VAT', percentage: 21, inclusive: false },
    packageTemplate: { id: template.id },
    membership: null,
    status: 'ON_SALE',
    _links: { self: { href: `${PRODUCTS}/${created.id}` } }
  })
  t.same((await call('GET', `${PRODUCTS}/${created.id}`, staff)).json(), created, 'staff read it as created')

  const patched = await call('PATCH', `${PRODUCTS}/${created.id}`, admin, { price: 75.5, categories: ['POD_SHOP', 'EQUIPMENT'], tax: null })
  t.equal(patched.statusCode, 200)
  t.match(patched.json(), { price: 75.5, categories: ['EQUIPMENT', 'POD_SHOP'], tax: null, sku: 'PKG-10', areas: { _total: 1 } })

  const item = `${PRODUCTS}/${created.id}`
  for (const [method, url, body] of [
    ['POST', PRODUCTS, { sku: 'X' }],
    ['GET', PRODUCTS, undefined],
    ['GET', item, undefined],
    ['PATCH', item, { price: 1 }],
    ['DELETE', item, undefined]
  ] as const) {
    t.equal((await call(method, url, undefined, body)).statusCode, 401, `${method} ${url} without a credential`)
    t.equal((await call(method, url, member, body)).statusCode, 403, `${method} ${url} as a member`)
  }
  for (const [method, body] of [['POST', undefined], ['PATCH', { price: 1 }], ['DELETE', undefined]] as const) {
    t.equal((await call(method, method === 'POST' ? PRODUCTS : item, staff, body ?? { sku: 'Y' })).statusCode, 403, `${method} as staff: admins only`)
  }
  for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
    const res = await call(method, `${PRODUCTS}/nope`, admin, method === 'PATCH' ? { price: 1 } : undefined)
    t.equal(res.statusCode, 404, `${method} of an unknown product`)
    t.equal(errorOf(res).message, 'product nope not found')
  }
})

t.test('bad products are a 400 naming the field; a sku already used is a 409', async (t) => {
  const { call, admin, staff, product, template } = await productsSetup(t)
  const event = await call('POST', '/apis/v2/templates', staff, { name: 'Open play', type: 'EVENT', data: { subtype: 'OPEN_PLAY' } })
  await product({ sku: 'TAKEN' })
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ packageTemplate: { id: event.json().id } }, /packageTemplate\.id: template .* is a EVENT template, not a PACKAGE template/],
    [{ packageTemplate: null }, /packageTemplate is required for a PACKAGE product/],
    [{ packageTemplate: { id: 'nope' } }, /packageTemplate\.id: no template nope/],
    [{ type: 'MERCHANDISE', packageTemplate: { id: template.id } }, /packageTemplate applies only to PACKAGE products/],
    [{ type: 'MEMBERSHIP', packageTemplate: null }, /membership is required for a MEMBERSHIP product/],
    [{ type: 'MEMBERSHIP', packageTemplate: null, membership: { id: 'nope' } }, /membership\.id: no membership nope/],
    [{ picture: { ...picture, small: { href: 'https://' } } }, /picture\.small\.href: .* is not an absolute URL/],
    [{ picture: { ...picture, large: { href: 'ftp://cdn.example.org/x.png' } } }, /picture\.large\.href/],
    [{ price: 1.005 }, /price: 1\.005 has more than 2 decimal/],
    [{ price: -1 }, /price/],
    [{ tax: { name: 'VAT', percentage: 21.001 } }, /tax\.percentage/],
    [{ categories: [] }, /categories/],
    [{ categories: ['pod shop'] }, /categories/],
    [{ areas: { items: [{ id: 'nope' }] } }, /areas\/items\/0\/id: no area nope/],
    [{ sku: 'has space' }, /sku/],
    [{ colour: 'red' }, /colour/]
  ]
  for (const [i, [body, message]] of cases.entries()) {
    const res = await call('POST', '/apis/v2/admin/products', admin, { sku: `S-${i}`, name: 'X', type: 'PACKAGE', categories: ['POD_SHOP'], price: 1, picture, packageTemplate: { id: template.id }, ...body })
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.match(errorOf(res).message, message)
  }
  const duplicate = await call('POST', '/apis/v2/admin/products', admin, { sku: 'TAKEN', name: 'Other', type: 'SERVICE', categories: ['LESSONS'], price: 1, picture })
  t.equal(duplicate.statusCode, 409)
  t.equal(errorOf(duplicate).message, 'a product with sku TAKEN already exists')
})

t.test('members list what is on sale, filtered by category, area and type, paged; DELETE withdraws what orders name', async (t) => {
  const { call, admin, staff, member, venue, product, card } = await productsSetup(t)
  await product({ name: 'A bundle', areas: { items: [{ id: venue.hall.id }] } })
  const shirt = await product({ name: 'B shirt', type: 'MERCHANDISE', categories: ['APPAREL'], packageTemplate: null })
  const racket = await product({ name: 'C racket', type: 'MERCHANDISE', categories: ['EQUIPMENT', 'POD_SHOP'], packageTemplate: null, areas: { items: [{ id: venue.field.id }] } })
  const names = async (query: string) => (await call('GET', `${ON_SALE}${query}`, member)).json().items.map((p: { name: string }) => p.name)
  t.same(await names(''), ['A bundle', 'B shirt', 'C racket'])
  t.same(await names('?category=POD_SHOP'), ['A bundle', 'C racket'])
  t.same(await names('?category=APPAREL&category=EQUIPMENT'), ['B shirt', 'C racket'])
  t.same(await names(`?area=${venue.hall.id}`), ['A bundle', 'B shirt'], 'a product without areas is sold everywhere')
  t.same(await names('?type=PACKAGE'), ['A bundle'])
  const page = (await call('GET', `${ON_SALE}?category=POD_SHOP&category=APPAREL&ipp=1`, member)).json()
  t.same(page._links.next, { href: `${ON_SALE}?category=POD_SHOP&category=APPAREL&page=2&ipp=1` }, 'a repeated filter is repeated in the links')
  t.equal(page._total, 3)
  t.equal((await call('GET', ON_SALE, undefined)).statusCode, 401)
  t.equal((await call('GET', `${ON_SALE}?type=FOOD`, member)).statusCode, 400)

  t.equal((await call('DELETE', `${PRODUCTS}/${shirt.id}`, admin)).statusCode, 204, 'never ordered: deleted')
  t.equal((await call('GET', `${PRODUCTS}/${shirt.id}`, staff)).statusCode, 404)
  await card(member, '4242')
  t.equal((await call('POST', '/apis/v2/orders', member, { mode: 'ORDER', items: [{ product: { id: racket.id }, quantity: 1 }] })).statusCode, 201)
  const withdrawn = await call('DELETE', `${PRODUCTS}/${racket.id}`, admin)
  t.equal(withdrawn.statusCode, 200)
  t.equal(withdrawn.json().status, 'WITHDRAWN')
  t.same(await names(''), ['A bundle'], 'no longer listed')
  t.equal((await call('GET', `${PRODUCTS}?status=WITHDRAWN`, staff)).json().items[0].id, racket.id, 'staff still find it')
  t.equal((await call('PATCH', `${PRODUCTS}/${racket.id}`, admin, { price: 1 })).statusCode, 409)
})

t.test('a plan or a PACKAGE template a product names is not deleted from under it', async (t) => {
  const { call, admin, staff, member, template, product, card } = await productsSetup(t)
  const plan = (await call('POST', '/apis/v2/admin/memberships', admin, monthlyPlan)).json()
  const offer = await product({ sku: 'CLUB', type: 'MEMBERSHIP', categories: ['MEMBERSHIPS'], packageTemplate: null, membership: { id: plan.id } })
  const archived = await call('DELETE', `/apis/v2/admin/memberships/${plan.id}`, admin)
  t.equal(archived.statusCode, 200, 'no one subscribed, but a product sells it: archived')
  t.match(archived.json(), { id: plan.id, status: 'ARCHIVED' })
  t.match((await call('GET', `${PRODUCTS}/${offer.id}`, staff)).json(), { membership: { id: plan.id }, status: 'ON_SALE' }, 'the product keeps its plan')
  await card(member, '4242')
  const buy = await call('POST', '/apis/v2/orders', member, { mode: 'ORDER', items: [{ product: { id: offer.id }, quantity: 1 }] })
  t.equal(buy.statusCode, 409)
  t.equal(errorOf(buy).message, `the membership ${plan.id} is no longer on sale`)

  const pack = await product({ sku: 'PACK-10' })
  const onSale = await call('DELETE', `/apis/v2/templates/${template.id}`, staff)
  t.equal(onSale.statusCode, 409)
  t.equal(errorOf(onSale).message, 'product PACK-10 issues this PACKAGE template: point it at another template or delete it first, or archive the template (status ARCHIVED) instead of deleting it')
  t.equal((await call('POST', '/apis/v2/orders', member, { mode: 'ORDER', items: [{ product: { id: pack.id }, quantity: 1 }] })).statusCode, 201)
  t.equal((await call('DELETE', `${PRODUCTS}/${pack.id}`, admin)).json().status, 'WITHDRAWN')
  const withdrawn = await call('DELETE', `/apis/v2/templates/${template.id}`, staff)
  t.equal(withdrawn.statusCode, 409)
  t.equal(errorOf(withdrawn).message, 'product PACK-10 issues this PACKAGE template: orders name that withdrawn product, so archive the template (status ARCHIVED) instead of deleting it')
  t.equal((await call('GET', `/apis/v2/templates/${template.id}`, staff)).statusCode, 200, 'still there')
  t.equal((await call('PATCH', `/apis/v2/templates/${template.id}`, staff, { status: 'ARCHIVED' })).statusCode, 200, 'archiving is the way out')
})

t.test('club products create|list', async (t) => {
  const { ctx, template } = await productsSetup(t)
  const env = { DATABASE_URL: ctx.config.DATABASE_URL }
  const run = async (...argv: string[]) => {
    const out: string[] = []
    const err: string[] = []
    const code = await runCli(argv, env, (s) => out.push(s), (s) => err.push(s))
    return { code, out: out.join('\n'), err: err.join('\n') }
  }
  const created = await run(
    'products', 'create', '--sku', 'CLI-1', '--name', 'Five bookings', '--type', 'PACKAGE', '--category', 'POD_SHOP', '--category', 'EQUIPMENT',
    '--price', '42.50', '--picture', 'https://cdn.example.org/five.png', '--tax', 'VAT:21:inclusive', '--package-template', template.id
  )
  t.equal(created.code, 0, created.err)
  t.match(JSON.parse(created.out), {
    sku: 'CLI-1',
    price: 42.5,
    categories: ['EQUIPMENT', 'POD_SHOP'],
    tax: { name: 'VAT', percentage: 21, inclusive: true },
    picture: { small: { href: 'https://cdn.example.org/five.png' }, large: { href: 'https://cdn.example.org/five.png' } },
    packageTemplate: { id: template.id }
  })
  const listed = await run('products', 'list', '--category', 'EQUIPMENT')
  t.equal(listed.code, 0, listed.err)
  t.same(JSON.parse(listed.out).items.map((p: { sku: string }) => p.sku), ['CLI-1'])
  const again = await run('products', 'create', '--sku', 'CLI-1', '--name', 'X', '--type', 'SERVICE', '--category', 'LESSONS', '--price', '1', '--picture', 'https://x.example.org/a.png')
  t.same([again.code, again.err], [1, 'club products create: a product with sku CLI-1 already exists'])
  t.equal((await run('products', 'create', '--sku', 'CLI-2', '--name', 'X')).code, 2, 'missing flags are a usage error')
  const noPicture = await run('products', 'create', '--sku', 'CLI-2', '--name', 'X', '--type', 'SERVICE', '--category', 'LESSONS', '--price', '1')
  t.same([noPicture.code, noPicture.err], [2, 'club products create: missing --picture (every size) or --picture-small'])
  const help = await run('products', 'create', '--help')
  t.match(help.out, /--package-template/)
})
