// What a PACKAGE template's `data` must hold (BILLING.md, "Packages"): the items a package issued
// from it contains, and how many days it is valid. Checked on every stored version, so a package is
// never issued from data that cannot be honoured; a bad item is a 400 naming its path.
import type { PackageItemConstraints, PackageItemType, PackageTemplateData } from '@club/contract'
import { BadRequestError, quote } from '../errors.js'

export const ITEM_TYPES: readonly PackageItemType[] = ['BOOKING', 'EVENT_SIGNUP', 'GUEST_SIGNUP', 'SERIES_SIGNUP', 'REPLAY']
/** The reference names these three; a typo such as OFF_PEAK would silently match nothing. */
export const SESSION_PERIOD_TYPES = ['PEAK', 'REDUCED', 'OFF PEAK'] as const
export type SessionPeriodType = (typeof SESSION_PERIOD_TYPES)[number]

const MAX_ITEMS = 50
const MAX_TOTAL_ITEMS = 10_000
const MAX_VALIDITY_DAYS = 3650
const MAX_VALUES = 100
const MAX_TEXT = 200

type ConstraintKind = 'strings' | 'string' | 'boolean' | 'periods'
const CONSTRAINT_KINDS: Record<keyof PackageItemConstraints, ConstraintKind> = {
  bookingEventSubtype: 'strings',
  bookingEventCustomType: 'string',
  bookingEventCustomTypesMatchAny: 'strings',
  bookingEventTagsMatchAll: 'strings',
  bookingEventTagsMatchAny: 'strings',
  allowKids: 'boolean',
  bookingSessionPeriodTypeMatchAny: 'periods',
  bookingAreaSlugMatchAny: 'strings',
  bookingPodIdsMatchAny: 'strings'
}
export const CONSTRAINT_NAMES = Object.keys(CONSTRAINT_KINDS) as Array<keyof PackageItemConstraints>

/** Every constraint null: matches anything. */
export function noConstraints(): PackageItemConstraints {
  return Object.fromEntries(CONSTRAINT_NAMES.map((name) => [name, null])) as PackageItemConstraints
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

function text(value: unknown, path: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new BadRequestError(`${path} must be a non-empty string`)
  if (value.length > MAX_TEXT) throw new BadRequestError(`${path} must be at most ${MAX_TEXT} characters`)
  return value
}

function wholeNumber(value: unknown, path: string, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new BadRequestError(`${path} must be a whole number from 1 to ${max}, not ${quote(JSON.stringify(value) ?? 'nothing', { limit: 40 })}`)
  }
  return value
}

function constraint(kind: ConstraintKind, value: unknown, path: string): unknown {
  if (value === null || value === undefined) return null
  if (kind === 'boolean') {
    if (typeof value !== 'boolean') throw new BadRequestError(`${path} must be true, false or null`)
    return value
  }
  if (kind === 'string') return text(value, path)
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_VALUES) {
    throw new BadRequestError(`${path} must be null or a list of 1 to ${MAX_VALUES} values`)
  }
  return value.map((entry, i) => {
    const one = text(entry, `${path}[${i}]`)
    if (kind === 'periods' && !(SESSION_PERIOD_TYPES as readonly string[]).includes(one)) {
      throw new BadRequestError(`${path}[${i}] must be one of ${SESSION_PERIOD_TYPES.join(', ')}, not ${quote(one, { limit: 40 })}`)
    }
    return one
  })
}

/** The item's constraints with every name present (missing ones null); an unknown name is refused. */
export function parseConstraints(value: unknown, path: string): PackageItemConstraints {
  if (value === null || value === undefined) return noConstraints()
  if (!isObject(value)) throw new BadRequestError(`${path} must be an object`)
  for (const name of Object.keys(value)) {
    if (!(name in CONSTRAINT_KINDS)) throw new BadRequestError(`${path}.${quote(name, { limit: 60 })} is not a constraint; known: ${CONSTRAINT_NAMES.join(', ')}`)
  }
  return Object.fromEntries(CONSTRAINT_NAMES.map((name) => [name, constraint(CONSTRAINT_KINDS[name], value[name], `${path}.${name}`)])) as PackageItemConstraints
}

/** The data of a PACKAGE template, checked; `path` names where it came from in the request. */
export function parsePackageTemplateData(data: unknown, path = 'body.data'): PackageTemplateData {
  if (!isObject(data)) throw new BadRequestError(`${path} must be an object`)
  const items = data.items
  if (!Array.isArray(items) || items.length === 0 || items.length > MAX_ITEMS) {
    throw new BadRequestError(`${path}.items must be a list of 1 to ${MAX_ITEMS} items`)
  }
  const optionalText = (value: unknown, at: string) => (value === undefined || value === null ? null : text(value, at))
  return {
    displayName: optionalText(data.displayName, `${path}.displayName`),
    displayNamePlural: optionalText(data.displayNamePlural, `${path}.displayNamePlural`),
    validityDays: wholeNumber(data.validityDays, `${path}.validityDays`, MAX_VALIDITY_DAYS),
    items: items.map((item, i) => {
      const at = `${path}.items[${i}]`
      if (!isObject(item)) throw new BadRequestError(`${at} must be an object`)
      if (typeof item.type !== 'string' || !(ITEM_TYPES as readonly string[]).includes(item.type)) {
        throw new BadRequestError(`${at}.type must be one of ${ITEM_TYPES.join(', ')}`)
      }
      return {
        type: item.type as PackageItemType,
        displayName: text(item.displayName, `${at}.displayName`),
        displayNamePlural: text(item.displayNamePlural, `${at}.displayNamePlural`),
        totalItems: wholeNumber(item.totalItems, `${at}.totalItems`, MAX_TOTAL_ITEMS),
        constraints: parseConstraints(item.constraints, `${at}.constraints`)
      }
    })
  }
}
