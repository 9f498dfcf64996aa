// The court page's words, one JSON file per language in server/replay-page/strings/, chosen from the
// request's Accept-Language with English as the fallback. Adding a language is adding a file.
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** server/replay-page/: the same place from src/ (tests) and dist/ (built). */
export const PAGE_DIR = fileURLToPath(new URL('../../replay-page/', import.meta.url))
const STRINGS_DIR = `${PAGE_DIR}strings/`

export type Strings = Record<string, string>

export const FALLBACK = 'en'

/** Every language file, read once at start: {en: {...}, de: {...}, ...}. */
export function loadStrings(): Record<string, Strings> {
  const all: Record<string, Strings> = {}
  for (const name of readdirSync(STRINGS_DIR).filter((n) => n.endsWith('.json')).sort()) {
    all[name.slice(0, -'.json'.length)] = JSON.parse(readFileSync(STRINGS_DIR + name, 'utf8')) as Strings
  }
  if (!all[FALLBACK]) throw new Error(`${STRINGS_DIR}${FALLBACK}.json is missing: the court page falls back to it`)
  return all
}

/** The words of `lang`, with English for any key its file lacks. */
export function wordsFor(all: Record<string, Strings>, lang: string): Strings {
  return { ...all[FALLBACK], ...all[lang] }
}

/**
 * The language of `available` an Accept-Language header prefers most (RFC 9110 section 12.5.4: by
 * q-value, then order; "de-CH" matches "de"), else English.
 */
export function chooseLanguage(header: string | undefined, available: readonly string[]): string {
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

/** `{name}` placeholders filled in. */
export function fill(text: string, values: Record<string, string | number>): string {
  return text.replace(/\{(\w+)\}/g, (whole, key: string) => (key in values ? String(values[key]) : whole))
}
