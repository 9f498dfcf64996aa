// Packages (bundles of redeemable items issued from a PACKAGE template), their redemptions, the
// product catalogue, member discounts on products, and the areas' peak hours that a booking's
// session period is derived from.
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('packages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('restrict'))
    .addColumn('template_id', 'text', (c) => c.references('templates.id').onDelete('set null'))
    // The template's version the items were copied from.
    .addColumn('template_version', 'integer')
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('display_name_plural', 'text', (c) => c.notNull())
    // ACTIVE, EXHAUSTED, CANCELED as written; EXPIRED is derived at read time from expiration_date
    // and written by the expiry job only so a list can filter by it cheaply.
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('expiration_date', 'text', (c) => c.notNull())
    // STAFF, PURCHASE or MEMBERSHIP (a plan's monthly perk)
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('order_id', 'text', (c) => c.references('orders.id').onDelete('restrict'))
    // What this package's buyer paid for it (its share of the order line), for a pro-rata refund.
    .addColumn('paid_minor', 'integer', (c) => c.notNull())
    .addColumn('currency', 'text')
    // The membership grant that issued it: one package per grant, however often the job runs.
    .addColumn('grant_id', 'text', (c) => c.unique().references('membership_grants.id').onDelete('set null'))
    .addColumn('creator_id', 'text', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('canceled_at', 'text')
    .addColumn('refund_order_id', 'text', (c) => c.references('orders.id').onDelete('set null'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('packages_user').on('packages').columns(['user_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('packages_created').on('packages').columns(['created_at', 'id']).execute()
  await db.schema.createIndex('packages_expiry').on('packages').columns(['status', 'expiration_date']).execute()
  await db.schema.createIndex('packages_order').on('packages').column('order_id').execute()

  await db.schema
    .createTable('package_items')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('package_id', 'text', (c) => c.notNull().references('packages.id').onDelete('cascade'))
    // 1-based position in the package: a redemption's `item`.
    .addColumn('item', 'integer', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('display_name_plural', 'text', (c) => c.notNull())
    .addColumn('total_items', 'integer', (c) => c.notNull())
    .addColumn('remaining_items', 'integer', (c) => c.notNull())
    // JSON PackageItemConstraints, as the template had them when the package was issued
    .addColumn('constraints', 'text', (c) => c.notNull())
    .addUniqueConstraint('package_items_position', ['package_id', 'item'])
    // The database itself refuses a count below zero: the last line of defence against a double spend.
    .addCheckConstraint('package_items_remaining_range', sql`remaining_items >= 0 and remaining_items <= total_items`)
    .execute()
  await db.schema.createIndex('package_items_type').on('package_items').columns(['type', 'package_id']).execute()

  await db.schema
    .createTable('package_redemptions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('package_id', 'text', (c) => c.notNull().references('packages.id').onDelete('cascade'))
    .addColumn('item_id', 'text', (c) => c.notNull().references('package_items.id').onDelete('cascade'))
    .addColumn('item', 'integer', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    // Who used it (a family member, a guest's host); who asked for it.
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('restrict'))
    .addColumn('creator_id', 'text', (c) => c.notNull().references('users.id').onDelete('restrict'))
    // A canonical text of what was paid for: the same target twice is one redemption.
    .addColumn('target_key', 'text', (c) => c.notNull())
    // JSON of the target as resolved (event, booking, guest, series or replay)
    .addColumn('target', 'text', (c) => c.notNull())
    // When what was paid for starts (events, bookings), for the late-cancel window.
    .addColumn('target_start_at', 'text')
    .addColumn('order_id', 'text', (c) => c.notNull().references('orders.id').onDelete('restrict'))
    .addColumn('order_item_id', 'text', (c) => c.notNull())
    .addColumn('redemption_date', 'text', (c) => c.notNull())
    .addColumn('cancelation_date', 'text')
    // 1 when a late cancellation kept the item used.
    .addColumn('forfeited', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema.createIndex('package_redemptions_package').on('package_redemptions').columns(['package_id', 'redemption_date', 'id']).execute()
  await db.schema.createIndex('package_redemptions_date').on('package_redemptions').column('redemption_date').execute()
  // A retry is found by its target among the holder's packages, without reading their redemptions.
  await db.schema.createIndex('package_redemptions_target').on('package_redemptions').columns(['target_key', 'package_id']).execute()
  // A retried request finds the live redemption of its target instead of taking a second item.
  await db.schema
    .createIndex('package_redemptions_once_per_target')
    .on('package_redemptions')
    .columns(['item_id', 'target_key'])
    .unique()
    .where(sql.ref('cancelation_date'), 'is', null)
    .execute()

  await db.schema
    .createTable('products')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('sku', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    // PACKAGE, MEMBERSHIP, MERCHANDISE, SERVICE
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('price_minor', 'integer', (c) => c.notNull())
    .addColumn('tax_name', 'text')
    .addColumn('tax_basis_points', 'integer', (c) => c.notNull())
    .addColumn('tax_inclusive', 'integer', (c) => c.notNull())
    .addColumn('picture_small', 'text')
    .addColumn('picture_medium', 'text')
    .addColumn('picture_large', 'text')
    .addColumn('package_template_id', 'text', (c) => c.references('templates.id').onDelete('restrict'))
    .addColumn('membership_id', 'text', (c) => c.references('memberships.id').onDelete('restrict'))
    // ON_SALE, or WITHDRAWN (deleted from the catalogue; kept because orders name it)
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('products_status').on('products').columns(['status', 'name', 'id']).execute()

  await db.schema
    .createTable('product_categories')
    .addColumn('product_id', 'text', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('category', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('product_categories_pk', ['product_id', 'category'])
    .execute()
  await db.schema.createIndex('product_categories_category').on('product_categories').columns(['category', 'product_id']).execute()

  await db.schema
    .createTable('product_areas')
    .addColumn('product_id', 'text', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('area_id', 'text', (c) => c.notNull().references('areas.id').onDelete('restrict'))
    .addPrimaryKeyConstraint('product_areas_pk', ['product_id', 'area_id'])
    .execute()
  await db.schema.createIndex('product_areas_area').on('product_areas').columns(['area_id', 'product_id']).execute()

  // JSON [{categories, basisPoints, description}]: a plan's percentage off products of those categories.
  await db.schema.alterTable('memberships').addColumn('product_discounts', 'text', (c) => c.notNull().defaultTo('[]')).execute()
  // JSON {periods: [{type, days, start, end}]} in the area's timezone; null: every hour OFF PEAK.
  await db.schema.alterTable('areas').addColumn('session_periods', 'text').execute()
  await db.schema.alterTable('areas').addColumn('timezone', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('areas').dropColumn('timezone').execute()
  await db.schema.alterTable('areas').dropColumn('session_periods').execute()
  await db.schema.alterTable('memberships').dropColumn('product_discounts').execute()
  for (const table of ['product_areas', 'product_categories', 'products', 'package_redemptions', 'package_items', 'packages']) {
    await db.schema.dropTable(table).execute()
  }
}
