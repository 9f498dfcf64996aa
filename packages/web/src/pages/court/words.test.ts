// The court page's words: every language has every key with the same placeholders, every key the page
// and its HTML use exists, and the language an Accept-Language header chooses (moved from the server's
// court page tests with the words).
import t from 'tap'
import { readFileSync } from 'node:fs'
import { ReplayStatus } from '@club/contract'
import { LANGUAGES, chooseLanguage, fill, speaks, wordsFor } from './words.js'

t.test('every language file has every key of every other, none empty, with the same placeholders', async (t) => {
  const all: Record<string, Record<string, string>> = { ...LANGUAGES }
  t.ok(Object.keys(all).length >= 3, `languages: ${Object.keys(all).join(', ')}`)
  const keys = new Set(Object.values(all).flatMap((s) => Object.keys(s)))
  const placeholders = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort()
  for (const [lang, strings] of Object.entries(all)) {
    for (const key of keys) {
      t.ok(typeof strings[key] === 'string' && strings[key]!.trim() !== '', `${lang} has ${key}`)
      if (strings[key]) t.same(placeholders(strings[key]!), placeholders(all.en![key] ?? ''), `${lang} ${key} has en's placeholders`)
    }
  }
  // Every key the script and the HTML use is in English (the others are checked against it above).
  const used = [
    ...readFileSync(new URL('./main.ts', import.meta.url), 'utf8').matchAll(/\bt\('([\w.]+)'[,)]/g),
    ...readFileSync(new URL('./match.ts', import.meta.url), 'utf8').matchAll(/\bt\('([\w.]+)'[,)]/g),
    ...readFileSync(new URL('./html.ts', import.meta.url), 'utf8').matchAll(/\bw\('([\w.]+)'[,)]/g)
  ].map((m) => m[1]!)
  // And the ones it makes from a replay's status and a failure's reason.
  used.push(...ReplayStatus.enum.map((s) => `status.${s}`), 'reason.no_footage', 'reason.recording_ended', 'reason.box_unreachable', 'reason.camera_error', 'reason.upload_failed')
  t.ok(used.length > 20)
  for (const key of used) t.ok(key in all.en!, `en has ${key}, which the page uses`)
})

t.test('chooseLanguage: by q-value, then order; a region matches its language; English otherwise', async (t) => {
  const available = ['de', 'en', 'nl']
  t.equal(chooseLanguage('de-CH,de;q=0.9,en;q=0.8', available), 'de')
  t.equal(chooseLanguage('fr-FR,fr;q=0.9', available), 'en')
  t.equal(chooseLanguage('fr, nl;q=0.5, de;q=0.7', available), 'de')
  t.equal(chooseLanguage('NL-be', available), 'nl')
  t.equal(chooseLanguage('de;q=0, nl', available), 'nl')
  t.equal(chooseLanguage('*', available), 'en')
  t.equal(chooseLanguage(undefined, available), 'en')
  t.equal(fill('Last {seconds} s', { seconds: 30 }), 'Last 30 s')
})

t.test("a language is one of the page's own: an object's inherited names are none", async (t) => {
  t.ok(speaks('nl'))
  for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
    t.notOk(speaks(name), name)
    t.equal(wordsFor(name), LANGUAGES.en, `${name}: English`)
    t.equal(chooseLanguage(name), 'en')
  }
})
