// The court page's words, one module per language in strings/, chosen from the request's
// Accept-Language with English as the fallback. Adding a language is adding a module and its line in
// LANGUAGES. The server writes the chosen language into the page; the browser never loads this file.
import { de } from './strings/de.js'
import { en, type CourtWords, type WordKey } from './strings/en.js'
import { nl } from './strings/nl.js'

export type { CourtWords, WordKey }

export const FALLBACK = 'en'

/** Every language the page speaks, by its tag. */
export const LANGUAGES: Readonly<Record<string, CourtWords>> = { de, en, nl }

/** Whether the page speaks `lang` (its own keys only: "constructor" is no language). */
export function speaks(lang: string): boolean {
  return Object.hasOwn(LANGUAGES, lang)
}

/** The words of `lang`, English if the page does not speak it. */
export function wordsFor(lang: string): CourtWords {
  return speaks(lang) ? LANGUAGES[lang]! : en
}

/**
 * The language of `available` an Accept-Language header prefers most (RFC 9110 section 12.5.4: by
 * q-value, then order; "de-CH" matches "de"), else English.
 */
export function chooseLanguage(header: string | undefined, available: readonly string[] = Object.keys(LANGUAGES)): string {
  if (!header) return FALLBACK
  const ranges = header
    .split(',')
    .map((part, index) => {
      const [range = '', ...params] = part.trim().split(';')
      const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/i.exec(p)?.[1]).find((v) => v !== undefined)
      return { tag: range.trim().toLowerCase(), q: q === undefined ? 1 : Number(q), index }
    })
    .filter((r) => r.tag && r.q > 0 && !Number.isNaN(r.q))
    .sort((a, b) => b.q - a.q || a.index - b.index)
  for (const { tag } of ranges) {
    const primary = tag.split('-')[0]!
    if (available.includes(primary)) return primary
  }
  return FALLBACK
}

/** `{name}` placeholders filled in; one without a value is left as it is. */
export function fill(text: string, values: Record<string, string | number>): string {
  return text.replace(/\{(\w+)\}/g, (whole, key: string) => (key in values ? String(values[key]) : whole))
}
