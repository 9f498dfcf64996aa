// What the court page decides, apart from the DOM: its settings as the server writes them, its words
// filled in, the replay's steps, why a replay failed, when a kept tap is too old to send.
import type { Replay, ReplayStatus } from '@club/contract'
import type { CourtWords, WordKey } from './words.js'

/**
 * The words the script says; the HTML says the others. The server writes only these into the page,
 * so a phone downloads each word once (a match's words fit the page's budget that way).
 */
export type ScriptWordKey = Extract<
  WordKey,
  | `status.${string}`
  | `reason.${string}`
  | `error.${string}`
  | `offline.${string}`
  | `match.${string}`
  | `signin.${'busy' | 'failed' | 'submit' | 'signedInAs' | 'guest'}`
  | `mine.${'empty' | 'play' | 'item'}`
  | 'failed.itemBack'
  | 'server.retrying'
  | 'sending'
  | 'ready.copied'
>
export type ScriptWords = Pick<CourtWords, ScriptWordKey>

/** What the server writes into the page as JSON (`<script type="application/json" id="config">`). */
export interface CourtPageConfig {
  lang: string
  court: { id: string; name: string; slug: string }
  strings: ScriptWords
  guests: boolean
  requirePackage: boolean
  shopUrl: string
  /** The server's clock as it answered, in ms: the phone's offset is measured against it. */
  serverNow: number
  /** A tap kept offline longer than this is not sent (REPLAY_MAX_AGE_SECONDS). */
  maxAgeSeconds: number
}

/** A tap kept on the phone until the server has it, with its moment on the server's clock. */
export interface PendingTap {
  key: string
  court: string
  seconds: number
  /** On the phone's clock, to say "your tap at 18:02". */
  tapAt: number
  /** On the server's clock: the `end` the replay is asked for. */
  end: string
}

/** A key's words with its `{placeholders}` filled; one without a value is left out. */
export function say(words: Partial<CourtWords>, key: WordKey, values: Record<string, string | number> = {}): string {
  return (words[key] ?? key).replace(/\{(\w+)\}/g, (_, name: string) => (values[name] == null ? '' : String(values[name])))
}

/** The steps a replay goes through to play; the others end it. */
export const STEPS: readonly ReplayStatus[] = ['REQUESTED', 'EXPORTING', 'UPLOADING', 'READY']

/** Each step's look for a replay in `status`: done, the one under way, or still to come. */
export function stepClasses(status: ReplayStatus): string[] {
  const at = STEPS.indexOf(status)
  return STEPS.map((_, i) => (status === 'READY' || i < at ? 'done' : i === at ? 'active' : ''))
}

/** Whether a replay is still on its way to READY (and so worth asking about again). */
export function underWay(status: ReplayStatus): boolean {
  return STEPS.includes(status) && status !== 'READY'
}

/** Why a replay failed, in words; a member who pays with package items is told theirs came back. */
export function failureText(words: Partial<CourtWords>, replay: Pick<Replay, 'reason'>, itemBack: boolean): string {
  const reason = replay.reason ?? 'other'
  const key = `reason.${reason}`
  // 'reason.other' names the reason: asked for without one, it says "other" rather than "()".
  const text = key in words && reason !== 'other' ? say(words, key as WordKey) : say(words, 'reason.other', { reason })
  return itemBack ? `${text} ${say(words, 'failed.itemBack')}` : text
}

/**
 * The phone's clock against the server's, in ms to add to Date.now(): the server wrote its time into
 * the page as it answered, which on the phone was the middle of the request's round trip (in the
 * phone's Date.now terms, so a phone set minutes wrong still asks for the right moment).
 */
export function clockOffset(serverNow: number, phoneNow: number, sincePageStart: number, requestStart: number, responseStart: number): number {
  return serverNow - (phoneNow - sincePageStart + (requestStart + responseStart) / 2)
}

/** Whether a kept tap waited longer than the server takes (now and `end` on the server's clock). */
export function tooOld(tap: Pick<PendingTap, 'end'>, serverNow: number, maxAgeSeconds: number): boolean {
  return serverNow - Date.parse(tap.end) > maxAgeSeconds * 1000
}

/** The file name a download is saved under: the court and the moment, no colons. */
export function downloadName(courtSlug: string, end: string): string {
  return `${courtSlug}-${end.replace(/[:.]/g, '-')}.mp4`
}
