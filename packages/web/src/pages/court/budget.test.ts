// The court page's weight before the video, on a phone at the court: its HTML in each language, its
// style sheet and every module its script imports, as the page pipeline serves them (compiled, from
// dist: run after the build). The plain-script page it replaced weighed 24,549 bytes in German, its
// comments included; compiled without them (tsconfig.json) the page weighs about 21.7 KB.
import t from 'tap'
import { loadAssets } from '../../node/pages.js'
import { courtPageHtml } from './html.js'
import { LANGUAGES } from './words.js'

/** Bytes: "about 21 KB before the video", as the docs (docs/replays.md, once the README) have said of the page since it was made. */
const BUDGET = 22 * 1024
/**
 * Bytes a signed-in member's matches add (issue 49), fetched after the page and only for a member:
 * the module that lists and plays them. A player tapping at the court downloads none of it.
 */
const MATCHES_BUDGET = 5 * 1024

t.test('the court page, its script with its imports and its styles stay within the budget', async (t) => {
  const assets = loadAssets('court')
  const size = (path: string) => {
    const file = assets.asset(path)
    if (!file) throw new Error(`the court page loads ${path}, which the pipeline does not serve`)
    return file.body
  }
  // The modules the browser fetches: main.js and what it imports, followed through the compiled code;
  // a module imported later (`import('./match.js')`) apart, with what it imports that the page has not.
  const resolve = (spec: string, from: string) => new URL(spec, `http://page/${from}`).pathname.slice(1)
  const follow = (path: string, modules: Set<string>, seen: Set<string> = new Set()) => {
    if (modules.has(path) || seen.has(path)) return modules
    modules.add(path)
    for (const [, spec] of size(path).toString('utf8').matchAll(/(?:^|\n)\s*(?:import|export)\b(?!\s*\()[^'"]*?['"](\.[^'"]+)['"]/g)) {
      follow(resolve(spec!, path), modules, seen)
    }
    return modules
  }
  const modules = follow('court/main.js', new Set())
  t.same([...modules].sort(), ['court/main.js', 'court/view.js'], 'the script and its one module of decisions: no words of every language, no console code')
  const later = [...size('court/main.js').toString('utf8').matchAll(/\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/g)].map(([, spec]) => resolve(spec!, 'court/main.js'))
  t.same(later, ['court/match.js'], "a member's matches, loaded later")
  const matches = [...follow('court/match.js', new Set(), modules)].reduce((sum, path) => sum + size(path).length, 0)
  t.ok(matches <= MATCHES_BUDGET, `a member's matches add ${matches} bytes, within ${MATCHES_BUDGET}`)
  const script = [...modules].reduce((sum, path) => sum + size(path).length, 0)
  const style = size('court.css').length
  for (const [lang, words] of Object.entries(LANGUAGES)) {
    const html = courtPageHtml({
      lang,
      words,
      clubName: 'Padel Club Süd',
      court: { id: 'c0ffee00-0000-4000-8000-000000000000', name: 'Court 3', slug: 'court-3' },
      seconds: [30, 60],
      assets: { script: `/r/${assets.assetsPath}/court/main.js`, style: `/r/${assets.assetsPath}/court.css` },
      settings: { guests: true, requirePackage: true, shopUrl: '', serverNow: Date.now(), maxAgeSeconds: 600 },
      notice: { replayRetentionDays: 30, footageLogRetentionDays: 180, replayMaxAgeSeconds: 600, contact: '' }
    })
    const total = Buffer.byteLength(html) + script + style
    t.ok(total <= BUDGET, `${lang}: ${total} bytes (HTML ${Buffer.byteLength(html)}, script ${script}, styles ${style}) within ${BUDGET}`)
  }
})
