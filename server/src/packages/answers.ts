// A package and its redemptions as GET answers them, and the events that carry those answers (written
// in the change's transaction). Below service.ts, issue.ts and redemptions.ts, which all answer and
// record: issuing a package records its event without importing the service that issues it (a circle).
import type { EventType, Package, PackageItemConstraints, PackageItemRedemption, PackageStatus } from '@club/contract'
import type { DbOrTx } from '../db/database.js'
import type { PackageItemsTable, PackageRedemptionsTable, PackagesTable } from '../db/schema.js'
import { recordEvent } from '../events/outbox.js'
import { orderPath } from '../orders/service.js'

export const packagePath = (id: string) => `/apis/v2/packages/${id}`
export const redemptionPath = (packageId: string, id: string) => `${packagePath(packageId)}/redemptions/${id}`

/** The status a reader sees: EXPIRED once the expiration date has passed, whatever was last written. */
export function statusOf(row: Pick<PackagesTable, 'status' | 'expiration_date'>, now: Date): PackageStatus {
  if (row.status === 'CANCELED') return 'CANCELED'
  if (row.expiration_date <= now.toISOString()) return 'EXPIRED'
  return row.status === 'EXHAUSTED' ? 'EXHAUSTED' : 'ACTIVE'
}

export function toRedemption(row: PackageRedemptionsTable): PackageItemRedemption {
  return {
    id: row.id,
    redemptionDate: row.redemption_date,
    item: row.item,
    user: { id: row.user_id },
    order: { id: row.order_id },
    orderItem: { id: row.order_item_id },
    cancelationDate: row.cancelation_date,
    ...(row.given_back_by === null ? {} : { givenBackBy: { id: row.given_back_by }, givenBackReason: row.given_back_reason ?? '' }),
    _links: { self: { href: redemptionPath(row.package_id, row.id) }, package: { href: packagePath(row.package_id) }, order: { href: orderPath(row.order_id) } }
  }
}

/** A package's redemptions as a collection: inside the package's answer, and at its own `redemptions` link. */
export function redemptionCollection(packageId: string, rows: PackageRedemptionsTable[]) {
  return { items: rows.map(toRedemption), _total: rows.length, _links: { self: { href: `${packagePath(packageId)}/redemptions` } } }
}

function toPackage(row: PackagesTable, items: PackageItemsTable[], redemptions: PackageRedemptionsTable[], now: Date): Package {
  const self = packagePath(row.id)
  const links: Record<string, { href: string }> = { self: { href: self }, redemptions: { href: `${self}/redemptions` } }
  if (row.order_id) links.order = { href: orderPath(row.order_id) }
  if (row.refund_order_id) links.refund = { href: orderPath(row.refund_order_id) }
  return {
    id: row.id,
    displayName: row.display_name,
    displayNamePlural: row.display_name_plural,
    status: statusOf(row, now),
    createdDate: row.created_at,
    expirationDate: row.expiration_date,
    items: {
      items: items.map((item) => ({
        id: item.id,
        type: item.type as Package['items']['items'][number]['type'],
        displayName: item.display_name,
        displayNamePlural: item.display_name_plural,
        totalItems: item.total_items,
        constraints: JSON.parse(item.constraints) as PackageItemConstraints,
        remainingItems: item.remaining_items
      })),
      _total: items.length,
      _links: { self: { href: self } }
    },
    redemptions: redemptionCollection(row.id, redemptions),
    template: row.template_id === null ? null : { id: row.template_id },
    order: row.order_id === null ? null : { id: row.order_id },
    _links: links
  }
}

/** The packages with their items and redemptions, in the order given. */
export async function answerAll(db: DbOrTx, rows: PackagesTable[], now: Date): Promise<Package[]> {
  if (rows.length === 0) return []
  const ids = rows.map((r) => r.id)
  const [items, redemptions] = await Promise.all([
    db.selectFrom('package_items').selectAll().where('package_id', 'in', ids).orderBy('package_id').orderBy('item').execute(),
    db.selectFrom('package_redemptions').selectAll().where('package_id', 'in', ids).orderBy('redemption_date').orderBy('id').execute()
  ])
  return rows.map((row) =>
    toPackage(
      row,
      items.filter((i) => i.package_id === row.id),
      redemptions.filter((r) => r.package_id === row.id),
      now
    )
  )
}

export async function answerPackage(db: DbOrTx, row: PackagesTable, now: Date): Promise<Package> {
  return (await answerAll(db, [row], now))[0]!
}

/** A package event with the package as GET answers it, written in the change's transaction. */
export async function recordPackageEvent(tx: DbOrTx, id: string, type: Extract<EventType, `package.${string}`>, now: Date): Promise<void> {
  const row = await tx.selectFrom('packages').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  await recordEvent(tx, { type, resourceId: id, data: await answerPackage(tx, row, now) }, now)
}

/** A redemption event with the redemption as GET answers it, written in the change's transaction. */
export async function recordRedemptionEvent(tx: DbOrTx, redemption: PackageRedemptionsTable, type: Extract<EventType, `package_redemption.${string}`>, now: Date): Promise<void> {
  await recordEvent(tx, { type, resourceId: redemption.id, data: toRedemption(redemption) }, now)
}
