// One way to serve a page: every page the server answers is built in packages/web and sent through
// its pipeline (loadPage or loadAssets, then sendPage). The court page used to be a script, a style
// sheet and strings under server/replay-page/, read and hashed by its own code; none of that may
// come back.
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { extname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const SERVER = fileURLToPath(new URL('..', import.meta.url))
const SRC = join(SERVER, 'src')

/** The files below `dir`, leaving out what is built, installed or written by tap. */
function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (!entry.isDirectory()) return [path]
    return ['node_modules', 'dist', '.tap'].includes(entry.name) ? [] : files(path)
  })
}

t.test('the server package holds no page files: its pages are in packages/web', async (t) => {
  const assets = files(SERVER).filter((path) => ['.html', '.css', '.js', '.mjs'].includes(extname(path)) || (path.startsWith(SRC) && extname(path) === '.json'))
  t.same(assets.map((path) => relative(SERVER, path)), [])
})

t.test('no server module reads files beside its own code or sends HTML but through sendPage', async (t) => {
  const sources = files(SRC).filter((path) => path.endsWith('.ts') && !path.endsWith('.test.ts') && !/test-(support|helpers|fixtures)/.test(path))
  t.ok(sources.length > 50, `${sources.length} modules`)
  for (const path of sources) {
    const text = readFileSync(path, 'utf8')
    const name = relative(SRC, path)
    t.notMatch(text, /(readFileSync|readFile|readdirSync|createReadStream)\([^)]*import\.meta/, `${name} reads no file found from its own place`)
    t.notMatch(text, /new URL\('\.\.?\/[^']*', import\.meta\.url\)/, `${name} finds no file from its own place`)
    t.notMatch(text, /\.type\(['"]text\/(html|css|javascript)/, `${name} sends no page but through sendPage`)
  }
})
