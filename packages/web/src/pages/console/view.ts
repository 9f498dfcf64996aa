// The console's decisions that need no browser: which form field a 400 names, a box's online dot,
// the order and filters of the box list, the footage notice and log in words. Tested beside this file.
import type { EndpointDelivery, FootageAccess, FootageNotice, ReplayServer, ReplayServerClaim, ReplayServerStatus } from '@club/contract'

/**
 * The form field a validation message names, as a dotted path (`cameras.0.distortion1`), or null when
 * it names none. The server says `body.cameras.0.feed must match …`, `body.cameras.0.feed is required`
 * or, for its own rules, `cameras[1].id "x" is already …`; a path under `config` is the same field.
 */
export function errorField(message: string): string | null {
  const head = /^\S+/.exec(message.trim())?.[0] ?? ''
  // A path holds letters, digits, dots, brackets and quoted keys; a message starting with prose names none.
  if (!/[.[]/.test(head) && !head.startsWith('body')) return null
  const tokens = head
    .replace(/[:,;]$/, '')
    .replace(/\[(\d+)\]/g, '.$1')
    .split('.')
    .map((token) => token.replace(/^"(.*)"$/, '$1').replace(/…$/, ''))
    .filter(Boolean)
  if (tokens[0] === 'body') tokens.shift()
  if (tokens[0] === 'config') tokens.shift()
  return tokens.length > 0 ? tokens.join('.') : null
}

/** The nearest field the form has: the named one, else its closest parent (a camera, the form). */
export function closestField(path: string, exists: (path: string) => boolean): string | null {
  const tokens = path.split('.')
  while (tokens.length > 0) {
    const candidate = tokens.join('.')
    if (exists(candidate)) return candidate
    tokens.pop()
  }
  return null
}

/**
 * A pending claim in words, for the admin who decides on it: where and when the deviceId registered
 * again, what it reported, and what it showed of the box key. `at` formats a timestamp.
 */
export function claimText(claim: ReplayServerClaim, at: (iso: string) => string): string {
  const times = claim.registrations > 1 ? ` (${claim.registrations} times, first at ${at(claim.createdDate)})` : ''
  // Only a proven key is ever shown: a key is public, so naming one proves nothing.
  const key =
    claim.keyFingerprint === null
      ? claim.proof === 'REFUSED'
        ? `It showed no key it could prove (${claim.proofProblem ?? 'its proof was refused'}).`
        : 'It proved no box key.'
      : claim.sameKey
        ? `It holds the box's own key ${claim.keyFingerprint}, which the box proves by itself: this claim is not the box; reject it.`
        : `It proved it holds another key, ${claim.keyFingerprint}: accept only when the box's installer reads you this fingerprint.`
  const reported = [claim.serverUrl && `serverUrl ${claim.serverUrl}`, claim.hostname && `hostname ${claim.hostname}`, claim.version && `version ${claim.version}`]
    .filter(Boolean)
    .join(', ')
  return (
    `This device id registered again from ${claim.sourceIp} at ${at(claim.updatedDate)}${times}, ` +
    `reporting ${reported || 'nothing about itself'}. ${key}`
  )
}

/** What a box is called in lists: the admin's name, else what the box says it is. */
export function boxName(box: Pick<ReplayServer, 'displayName' | 'hostname' | 'deviceId'>): string {
  return box.displayName || box.hostname || box.deviceId
}

export type Online = { state: 'online' | 'offline' | 'never'; label: string }

/**
 * The dot: the server decides `online` (seen within three of its poll intervals, which only it
 * knows); a box never seen is told apart from one that went quiet.
 */
export function onlineState(box: Pick<ReplayServer, 'online' | 'lastSeenAt'>): Online {
  if (box.online) return { state: 'online', label: 'Online' }
  return box.lastSeenAt ? { state: 'offline', label: 'Offline' } : { state: 'never', label: 'Never seen' }
}

/**
 * Whether the box has polled since its record last changed (approval, configuration, token): its
 * poll is what carries a change to it. lastSeenAt is kept to the second, rounded down, so a poll in
 * the same second as the change counts as before it: "waiting" a poll too long, never "has it" too early.
 */
export function pickedUp(box: Pick<ReplayServer, 'lastSeenAt' | 'updatedDate'>): boolean {
  return box.lastSeenAt !== null && Date.parse(box.lastSeenAt) > Date.parse(box.updatedDate)
}

const STATUS_ORDER: Record<ReplayServerStatus, number> = { PENDING: 0, APPROVED: 1, REJECTED: 2, REVOKED: 3 }

/** Pending boxes first (they wait for someone), then by area name, then by name. */
export function sortBoxes<B extends Pick<ReplayServer, 'status' | 'area' | 'displayName' | 'hostname' | 'deviceId'>>(
  boxes: readonly B[],
  areaNames: ReadonlyMap<string, string>
): B[] {
  const areaOf = (box: B) => (box.area ? areaNames.get(box.area.id) ?? box.area.id : '\uffff')
  return [...boxes].sort(
    (a, b) =>
      Number(b.status === 'PENDING') - Number(a.status === 'PENDING') ||
      areaOf(a).localeCompare(areaOf(b)) ||
      STATUS_ORDER[a.status] - STATUS_ORDER[b.status] ||
      boxName(a).localeCompare(boxName(b))
  )
}

export interface BoxFilter {
  status?: ReplayServerStatus | ''
  /** An area id, or '' for any, or 'none' for boxes without one. */
  areaId?: string
}

export function filterBoxes<B extends Pick<ReplayServer, 'status' | 'area'>>(boxes: readonly B[], filter: BoxFilter): B[] {
  return boxes.filter(
    (box) =>
      (!filter.status || box.status === filter.status) &&
      (!filter.areaId || (filter.areaId === 'none' ? box.area === null : box.area?.id === filter.areaId))
  )
}

/** Sets `path` (`cameras.0.feed`) in `target`, making arrays for numeric keys. */
export function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.')
  let node: Record<string, unknown> = target
  keys.forEach((key, i) => {
    if (i === keys.length - 1) {
      node[key] = value
      return
    }
    node[key] ??= /^\d+$/.test(keys[i + 1]!) ? [] : {}
    node = node[key] as Record<string, unknown>
  })
}

/**
 * A number field's value for the request: empty is left out, a number is sent as one, anything else
 * is sent as typed so that the server names the field in its 400 (the form never guesses).
 */
export function numberValue(text: string): number | string | undefined {
  const trimmed = text.trim()
  if (trimmed === '') return undefined
  const value = Number(trimmed)
  return Number.isFinite(value) ? value : trimmed
}

/** The box's update in words, from what its polls report; null when no update is under way or ended badly. */
export function updateText(box: Pick<ReplayServer, 'updateState' | 'updateVersion' | 'updateReason' | 'updateWindow'>): string | null {
  const version = box.updateVersion ?? 'the target version'
  switch (box.updateState) {
    case 'DOWNLOADING':
      return `Downloading ${version}`
    case 'WAITING_FOR_IDLE':
      return box.updateWindow
        ? `${version} downloaded; installs when the window ${box.updateWindow} opens`
        : `${version} downloaded; installs once no export runs and no event on its courts is near`
    case 'INSTALLING':
      return `Installing ${version}`
    case 'ROLLED_BACK':
      return `${version} did not come up and was rolled back${box.updateReason ? `: ${box.updateReason}` : ''}; it is not tried again until the target changes`
    case 'FAILED':
      return `${version} was refused${box.updateReason ? `: ${box.updateReason}` : ''}; it is not tried again until the target changes`
    default:
      return null
  }
}

/** What the club records and for how long, in the console's words (the court page says it in its own). */
export function footageNoticeText(notice: FootageNotice): string {
  const minutes = Math.round(notice.replayMaxAgeSeconds / 60)
  return (
    `The courts are filmed. Members and guests may ask only for the last ${minutes} min; older footage is for staff and admins, for a reason they type. ` +
    `A replay is kept ${notice.replayRetentionDays} days. Every look at footage (a replay asked for, a download link, a camera snapshot) is recorded ` +
    `with who, when and which minutes, and kept ${notice.footageLogRetentionDays} days. ` +
    (notice.contact ? `Questions about the footage: ${notice.contact}.` : "Questions about the footage: the club's desk.")
  )
}

/** Who looked, in a line: the role and the user's id, or the guest session's. */
export function footageViewerText(row: Pick<FootageAccess, 'actor' | 'user' | 'guestSession'>): string {
  if (row.actor === 'guest') return `guest ${row.guestSession?.id ?? ''}`.trim()
  return `${row.actor} ${row.user?.id ?? ''}`.trim()
}

/** The event types an admin typed, separated by spaces, commas or lines; the server checks each. */
export function eventTypesOf(text: string): string[] {
  return [...new Set(text.split(/[\s,]+/).filter(Boolean))]
}

/** A delivery's status with its last answer: "RETRYING (500)", "SUCCEEDED (204)", "PENDING". */
export function deliveryText(delivery: Pick<EndpointDelivery, 'status' | 'responseStatus' | 'attempts'>): string {
  const last = delivery.attempts.at(-1)
  if (!last) return delivery.status
  return `${delivery.status} (${last.responseStatus ?? last.error ?? 'no answer'})`
}
