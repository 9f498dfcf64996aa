// `club products create|list`: the catalogue from a shell. A product is given as a JSON file
// (--file, the body of POST /apis/v2/admin/products) or with flags for the usual fields.
import { ProductCreate, ProductListQuery } from '@club/contract'
import { flags, integer, UsageError, type Command, type CommandContext } from '../cli/args.js'
import { systemClock } from '../clock.js'
import { amount, jsonFile, rate } from '../memberships/cli.js'
import { valueValidator } from '../plugins/validation.js'
import { createProduct, listProducts } from './catalogue.js'

const checkProduct = valueValidator(ProductCreate, 'product')
const checkQuery = valueValidator(ProductListQuery, 'query')

function productFromFlags(args: string[]): unknown {
  const { values } = flags(args, {
    file: { type: 'string' },
    sku: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    type: { type: 'string' },
    category: { type: 'string', multiple: true },
    price: { type: 'string' },
    picture: { type: 'string' },
    'picture-small': { type: 'string' },
    'picture-medium': { type: 'string' },
    'picture-large': { type: 'string' },
    tax: { type: 'string' },
    area: { type: 'string', multiple: true },
    'package-template': { type: 'string' },
    membership: { type: 'string' }
  })
  if (values.file !== undefined) return jsonFile(values.file, args, 'product')
  for (const required of ['sku', 'name', 'type', 'category', 'price'] as const) {
    if (values[required] === undefined) throw new UsageError(`missing required flag --${required} (or --file product.json)`)
  }
  // --picture gives every size; --picture-small|medium|large one each.
  const picture = (size: 'small' | 'medium' | 'large') => {
    const href = values[`picture-${size}`] ?? values.picture
    if (href === undefined) throw new UsageError(`missing --picture (every size) or --picture-${size}`)
    return { href }
  }
  const product = {
    sku: values.sku,
    name: values.name,
    description: values.description,
    type: values.type,
    categories: values.category,
    price: amount(values.price, 'price'),
    picture: { small: picture('small'), medium: picture('medium'), large: picture('large') },
    tax: values.tax === undefined ? undefined : rate(values.tax, 'tax'),
    areas: values.area === undefined ? undefined : { items: values.area.map((id) => ({ id })) },
    packageTemplate: values['package-template'] === undefined ? undefined : { id: values['package-template'] },
    membership: values.membership === undefined ? undefined : { id: values.membership }
  }
  return Object.fromEntries(Object.entries(product).filter(([, v]) => v !== undefined))
}

const deps = (ctx: CommandContext) => ({ clock: systemClock, currency: ctx.config.CURRENCY })

export const productCommands: Record<string, Command> = {
  async 'products create'(ctx) {
    return createProduct(ctx.db, checkProduct(productFromFlags(ctx.args)), deps(ctx))
  },

  async 'products list'(ctx) {
    const { values } = flags(ctx.args, {
      category: { type: 'string', multiple: true },
      area: { type: 'string' },
      type: { type: 'string' },
      status: { type: 'string' },
      page: { type: 'string' },
      ipp: { type: 'string' }
    })
    const query = Object.fromEntries(
      Object.entries({
        category: values.category,
        area: values.area,
        type: values.type,
        status: values.status,
        page: integer(values.page, 'page'),
        ipp: integer(values.ipp, 'ipp')
      }).filter(([, v]) => v !== undefined)
    )
    return listProducts(ctx.db, checkQuery(query), false, '/apis/v2/admin/products')
  }
}
