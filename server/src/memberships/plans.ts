// Membership plans: what a club sells (price, charge period, taxes and fees, pause policy, grace
// and hold, perks). Kept in minor units and basis points; shown in currency units and percentages.
import { randomUUID } from 'node:crypto'
import type {
  ChargeType,
  Membership,
  MembershipCreate,
  MembershipListQuery,
  MembershipPatch,
  MembershipsOnSaleQuery,
  MembershipType
} from '@club/contract'
import type { Clock } from '../clock.js'
import type { DbOrTx } from '../db/database.js'
import type { MembershipsTable } from '../db/schema.js'
import { BadRequestError, ConflictError, NotFoundError } from '../errors.js'
import { currencyExponent, toPercentage, unitsOf, type BasisPoints, type Minor } from '../billing/money.js'
import { requestBasisPoints, requestMinor } from '../billing/request-money.js'
import type { FeeRate, TaxRate } from '../billing/pricing.js'
import { pageRequest, paged } from '../paging.js'

export interface PlanDeps {
  clock: Clock
  /** The club's currency (CURRENCY). */
  currency: string
}

export interface PausePolicy {
  minimumWeeks: number
  maximumWeeks: number
  pausesPerYear: number
  pauseFeeMinor: Minor
}

/** A plan as the rules read it: money in minor units, rates in basis points. */
export interface Plan {
  id: string
  displayName: string
  type: MembershipType
  chargeType: ChargeType
  currency: string
  priceMinor: Minor
  initiationFeeMinor: Minor
  additionalMemberFeeMinor: Minor
  durationDays: number | null
  taxes: TaxRate[]
  fees: FeeRate[]
  areaId: string | null
  pausePolicy: PausePolicy | null
  graceDays: number
  holdDays: number
  selfService: boolean
  perkTemplateId: string | null
  productDiscounts: ProductDiscount[]
  status: MembershipsTable['status']
}

/** A plan's percentage off products of some categories (products/pricing.ts picks the best). */
export interface ProductDiscount {
  categories: string[]
  rate: BasisPoints
  description: string
}

/** The stored JSON of memberships.product_discounts. */
export function parseProductDiscounts(json: string): ProductDiscount[] {
  return (JSON.parse(json) as Array<{ categories: string[]; basisPoints: BasisPoints; description: string }>).map((d) => ({
    categories: d.categories,
    rate: d.basisPoints,
    description: d.description
  }))
}

export const membershipPath = (id: string) => `/apis/v2/admin/memberships/${id}`

export function toPlan(row: MembershipsTable): Plan {
  return {
    id: row.id,
    displayName: row.display_name,
    type: row.type,
    chargeType: row.charge_type,
    currency: row.currency,
    priceMinor: row.price_minor,
    initiationFeeMinor: row.initiation_fee_minor,
    additionalMemberFeeMinor: row.additional_member_fee_minor,
    durationDays: row.duration_days,
    taxes: (JSON.parse(row.taxes) as Array<{ name: string; basisPoints: BasisPoints; inclusive: boolean }>).map((t) => ({
      name: t.name,
      rate: t.basisPoints,
      inclusive: t.inclusive
    })),
    fees: (JSON.parse(row.fees) as Array<{ name: string; basisPoints: BasisPoints }>).map((f) => ({ name: f.name, rate: f.basisPoints })),
    areaId: row.area_id,
    pausePolicy: row.pause_policy === null ? null : (JSON.parse(row.pause_policy) as PausePolicy),
    graceDays: row.grace_days,
    holdDays: row.hold_days,
    selfService: row.self_service === 1,
    perkTemplateId: row.perk_template_id,
    productDiscounts: parseProductDiscounts(row.product_discounts),
    status: row.status
  }
}

export function toMembership(row: MembershipsTable): Membership {
  const plan = toPlan(row)
  const units = unitsOf(row.currency)
  return {
    id: row.id,
    displayName: row.display_name,
    description: row.description,
    type: row.type,
    chargeType: row.charge_type,
    currency: row.currency,
    price: units(row.price_minor),
    initiationFee: units(row.initiation_fee_minor),
    additionalMemberFee: units(row.additional_member_fee_minor),
    maxEnrollments: row.max_enrollments,
    durationDays: row.duration_days,
    taxes: plan.taxes.map((t) => ({ name: t.name, percentage: toPercentage(t.rate), inclusive: t.inclusive })),
    fees: plan.fees.map((f) => ({ name: f.name, percentage: toPercentage(f.rate) })),
    area: row.area_id === null ? null : { id: row.area_id },
    pausePolicy:
      plan.pausePolicy === null
        ? null
        : {
            minimumWeeks: plan.pausePolicy.minimumWeeks,
            maximumWeeks: plan.pausePolicy.maximumWeeks,
            pausesPerYear: plan.pausePolicy.pausesPerYear,
            pauseFee: units(plan.pausePolicy.pauseFeeMinor)
          },
    graceDays: row.grace_days,
    holdDays: row.hold_days,
    selfService: row.self_service === 1,
    perks: { packageTemplate: row.perk_template_id === null ? null : { id: row.perk_template_id } },
    productDiscounts: plan.productDiscounts.map((d) => ({ categories: d.categories, percentage: toPercentage(d.rate), description: d.description })),
    status: row.status,
    createdDate: row.created_at,
    updatedDate: row.updated_at,
    _links: { self: { href: membershipPath(row.id) } }
  }
}

type PlanInput = MembershipCreate & { status?: MembershipsTable['status'] }

/** The columns a create or a patch (merged over the current plan) asks for, checked as a whole. */
async function planColumns(db: DbOrTx, input: PlanInput, currency: string) {
  const exponent = currencyExponent(currency)
  const free = input.chargeType === 'FREE'
  const amount = (value: number | undefined, field: string) => requestMinor(value ?? 0, field, exponent)
  if (free) {
    for (const field of ['price', 'initiationFee', 'additionalMemberFee'] as const) {
      if ((input[field] ?? 0) !== 0) throw new BadRequestError(`${field}: a FREE plan charges nothing; leave it out or 0`)
    }
  } else if (input.price === undefined) {
    throw new BadRequestError(`price is required for a ${input.chargeType} plan`)
  }
  if (input.chargeType === 'NON_RECURRING' && (input.durationDays ?? null) === null) {
    throw new BadRequestError('durationDays is required for a NON_RECURRING plan')
  }
  if (input.chargeType !== 'NON_RECURRING' && (input.durationDays ?? null) !== null) {
    throw new BadRequestError('durationDays applies only to NON_RECURRING plans; the others renew until cancelled')
  }
  const areaId = input.area?.id ?? null
  if (input.type === 'AREA_MEMBER' && areaId === null) throw new BadRequestError('area is required for an AREA_MEMBER plan')
  if (input.type !== 'AREA_MEMBER' && areaId !== null) throw new BadRequestError(`area applies only to AREA_MEMBER plans, not ${input.type}`)
  if (areaId !== null && !(await db.selectFrom('areas').select('id').where('id', '=', areaId).executeTakeFirst())) {
    throw new BadRequestError(`area.id: no area ${areaId.slice(0, 100)}`)
  }
  const templateId = input.perks?.packageTemplate?.id ?? null
  if (templateId !== null) {
    const template = await db.selectFrom('templates').select('type').where('id', '=', templateId).executeTakeFirst()
    if (!template) throw new BadRequestError(`perks.packageTemplate.id: no template ${templateId.slice(0, 100)}`)
    if (template.type !== 'PACKAGE') throw new BadRequestError(`perks.packageTemplate.id: template ${templateId.slice(0, 100)} is of type ${template.type}, not PACKAGE`)
  }
  const policy = input.pausePolicy ?? null
  if (policy && policy.minimumWeeks > policy.maximumWeeks) {
    throw new BadRequestError('pausePolicy.minimumWeeks must not be more than pausePolicy.maximumWeeks')
  }
  const taxes = (input.taxes ?? []).map((t, i) => ({ name: t.name, basisPoints: requestBasisPoints(t.percentage, `taxes/${i}/percentage`), inclusive: t.inclusive ?? false }))
  const fees = (input.fees ?? []).map((f, i) => ({ name: f.name, basisPoints: requestBasisPoints(f.percentage, `fees/${i}/percentage`) }))
  const productDiscounts = (input.productDiscounts ?? []).map((d, i) => ({
    categories: d.categories,
    basisPoints: requestBasisPoints(d.percentage, `productDiscounts/${i}/percentage`),
    description: d.description
  }))
  return {
    display_name: input.displayName,
    description: input.description ?? null,
    type: input.type,
    charge_type: input.chargeType,
    currency,
    price_minor: amount(input.price, 'price'),
    initiation_fee_minor: amount(input.initiationFee, 'initiationFee'),
    additional_member_fee_minor: amount(input.additionalMemberFee, 'additionalMemberFee'),
    max_enrollments: input.maxEnrollments ?? null,
    duration_days: input.durationDays ?? null,
    taxes: JSON.stringify(taxes),
    fees: JSON.stringify(fees),
    area_id: areaId,
    pause_policy:
      policy === null
        ? null
        : JSON.stringify({
            minimumWeeks: policy.minimumWeeks,
            maximumWeeks: policy.maximumWeeks,
            pausesPerYear: policy.pausesPerYear,
            pauseFeeMinor: amount(policy.pauseFee, 'pausePolicy.pauseFee')
          } satisfies PausePolicy),
    grace_days: input.graceDays ?? 15,
    hold_days: input.holdDays ?? 30,
    self_service: (input.selfService ?? true) ? 1 : 0,
    perk_template_id: templateId,
    product_discounts: JSON.stringify(productDiscounts),
    status: input.status ?? 'ACTIVE'
  }
}

export async function createMembership(db: DbOrTx, input: MembershipCreate, deps: PlanDeps): Promise<Membership> {
  const now = deps.clock.now().toISOString()
  const row: MembershipsTable = { id: randomUUID(), ...(await planColumns(db, input, deps.currency)), created_at: now, updated_at: now }
  await db.insertInto('memberships').values(row).execute()
  return toMembership(row)
}

export async function membershipRow(db: DbOrTx, id: string): Promise<MembershipsTable> {
  const row = await db.selectFrom('memberships').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw new NotFoundError(`membership ${id.slice(0, 100)} not found`)
  return row
}

export async function getMembership(db: DbOrTx, id: string): Promise<Membership> {
  return toMembership(await membershipRow(db, id))
}

async function hasSubscriptions(db: DbOrTx, id: string): Promise<boolean> {
  return !!(await db.selectFrom('membership_subscriptions').select('id').where('membership_id', '=', id).limit(1).executeTakeFirst())
}

/** The request as it would stand after the patch: what was given, else what the plan has. */
function mergedInput(current: Membership, patch: MembershipPatch): PlanInput {
  return {
    displayName: patch.displayName ?? current.displayName,
    description: patch.description !== undefined ? patch.description : current.description,
    type: patch.type ?? current.type,
    chargeType: patch.chargeType ?? current.chargeType,
    price: patch.price ?? current.price,
    initiationFee: patch.initiationFee ?? current.initiationFee,
    additionalMemberFee: patch.additionalMemberFee ?? current.additionalMemberFee,
    maxEnrollments: patch.maxEnrollments !== undefined ? patch.maxEnrollments : current.maxEnrollments,
    durationDays: patch.durationDays !== undefined ? patch.durationDays : current.durationDays,
    taxes: patch.taxes ?? current.taxes,
    fees: patch.fees ?? current.fees,
    area: patch.area !== undefined ? patch.area : current.area,
    pausePolicy: patch.pausePolicy !== undefined ? patch.pausePolicy : current.pausePolicy,
    graceDays: patch.graceDays ?? current.graceDays,
    holdDays: patch.holdDays ?? current.holdDays,
    selfService: patch.selfService ?? current.selfService,
    perks: patch.perks ?? current.perks,
    productDiscounts: patch.productDiscounts ?? current.productDiscounts,
    status: patch.status ?? current.status
  }
}

export async function patchMembership(db: DbOrTx, id: string, patch: MembershipPatch, deps: PlanDeps): Promise<Membership> {
  return db.transaction().execute(async (tx) => {
    const row = await membershipRow(tx, id)
    const current = toMembership(row)
    const changesKind = (patch.type !== undefined && patch.type !== row.type) || (patch.chargeType !== undefined && patch.chargeType !== row.charge_type)
    if (changesKind && (await hasSubscriptions(tx, id))) {
      throw new ConflictError('a plan with subscriptions keeps its type and chargeType; create a new plan and archive this one')
    }
    const columns = await planColumns(tx, mergedInput(current, patch), row.currency)
    const updated: MembershipsTable = { ...row, ...columns, currency: row.currency, updated_at: deps.clock.now().toISOString() }
    await tx.updateTable('memberships').set(updated).where('id', '=', id).execute()
    return toMembership(updated)
  })
}

/** Whether a MEMBERSHIP product (on sale or withdrawn) sells the plan: its row keeps the plan. */
async function isSoldAsProduct(db: DbOrTx, id: string): Promise<boolean> {
  return !!(await db.selectFrom('products').select('id').where('membership_id', '=', id).limit(1).executeTakeFirst())
}

/**
 * Deleted when no one ever subscribed and no product sells it (undefined); otherwise archived, and
 * the archived plan answered. A product keeps its plan (withdrawn ones too, for the orders that name
 * them), so archiving is what stays possible: the product's purchases then answer that it is off sale.
 */
export async function deleteMembership(db: DbOrTx, id: string, deps: PlanDeps): Promise<Membership | undefined> {
  return db.transaction().execute(async (tx) => {
    const row = await membershipRow(tx, id)
    if (!(await hasSubscriptions(tx, id)) && !(await isSoldAsProduct(tx, id))) {
      await tx.deleteFrom('memberships').where('id', '=', id).execute()
      return undefined
    }
    const archived: MembershipsTable = { ...row, status: 'ARCHIVED', updated_at: deps.clock.now().toISOString() }
    await tx.updateTable('memberships').set({ status: 'ARCHIVED', updated_at: archived.updated_at }).where('id', '=', id).execute()
    return toMembership(archived)
  })
}

/** Every plan, for staff (filters combine); or, with `onSale`, those a member may buy. Newest first. */
export async function listMemberships(db: DbOrTx, query: MembershipListQuery | MembershipsOnSaleQuery, onSale: boolean, path: string) {
  const request = pageRequest(query)
  let base = db.selectFrom('memberships')
  const status = onSale ? 'ACTIVE' : (query as MembershipListQuery).status
  if (status) base = base.where('status', '=', status)
  if (onSale) base = base.where('self_service', '=', 1)
  if (query.type) base = base.where('type', '=', query.type)
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(request.ipp).offset(request.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  ])
  return paged(rows.map(toMembership), Number(count.n), request, path, query)
}
