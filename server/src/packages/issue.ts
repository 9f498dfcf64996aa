// Issuing a package: its items copied from the PACKAGE template as it is now, so a later edit of the
// template changes no package already held. Called by staff, by a purchase and by a membership's
// monthly perk, each inside its own transaction.
import { randomUUID } from 'node:crypto'
import { anchorAt, daysAfter } from '../billing/calendar.js'
import type { DbOrTx } from '../db/database.js'
import type { PackageSource } from '../db/schema.js'
import { BadRequestError, quote } from '../errors.js'
import { recordPackageEvent } from './answers.js'
import { parsePackageTemplateData } from './template-data.js'

export interface IssueInput {
  templateId: string
  userId: string
  /** Who issued it (staff, the buyer); null for a membership's perk. */
  creatorId: string | null
  source: PackageSource
  /** From; the template's validityDays count from here, as local calendar days in `timezone`. */
  issuedAt: Date
  timezone: string
  /** Overrides the template's validity (staff only). */
  expirationDate?: Date
  orderId?: string
  /** Its share of the order line it was bought on, in minor units of `currency`. */
  paidMinor?: number
  currency?: string
  /** The membership grant that issued it. */
  grantId?: string
  /** Names the field in a 400 when the template is not a usable PACKAGE template. */
  field?: string
}

/** Issues one package and answers its id; a template that is missing or not a PACKAGE is a 400. */
export async function issuePackage(tx: DbOrTx, input: IssueInput): Promise<string> {
  const field = input.field ?? 'template.id'
  const template = await tx.selectFrom('templates').select(['id', 'type', 'name', 'version', 'data']).where('id', '=', input.templateId).executeTakeFirst()
  if (!template) throw new BadRequestError(`${field}: no template ${quote(input.templateId)}`)
  if (template.type !== 'PACKAGE') throw new BadRequestError(`${field}: template ${quote(input.templateId)} is of type ${template.type}, not PACKAGE`)
  const data = parsePackageTemplateData(JSON.parse(template.data), `template ${template.id} data`)
  const id = randomUUID()
  const now = input.issuedAt.toISOString()
  const expiration = input.expirationDate ?? daysAfter(anchorAt(input.issuedAt, input.timezone), data.validityDays)
  await tx
    .insertInto('packages')
    .values({
      id,
      user_id: input.userId,
      template_id: template.id,
      template_version: template.version,
      display_name: data.displayName ?? template.name,
      display_name_plural: data.displayNamePlural ?? data.displayName ?? template.name,
      status: 'ACTIVE',
      expiration_date: expiration.toISOString(),
      source: input.source,
      order_id: input.orderId ?? null,
      paid_minor: input.paidMinor ?? 0,
      currency: input.currency ?? null,
      grant_id: input.grantId ?? null,
      creator_id: input.creatorId,
      canceled_at: null,
      refund_order_id: null,
      created_at: now,
      updated_at: now
    })
    .execute()
  await tx
    .insertInto('package_items')
    .values(
      data.items.map((item, i) => ({
        id: randomUUID(),
        package_id: id,
        item: i + 1,
        type: item.type,
        display_name: item.displayName,
        display_name_plural: item.displayNamePlural,
        total_items: item.totalItems,
        remaining_items: item.totalItems,
        constraints: JSON.stringify(item.constraints)
      }))
    )
    .execute()
  await recordPackageEvent(tx, id, 'package.issued', input.issuedAt)
  return id
}
