// No runtime import cycle among the product's TypeScript files (import-cycles.mjs), and the reading
// of imports and the finding of cycles on small made-up trees, so the check cannot pass by seeing nothing.
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { cycleText, importCycles, importGraph, isTestCode, readSources, runtimeImports } from './import-cycles.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const graphOf = (files) => importGraph(new Map(Object.entries(files)))
const edges = (entries) => new Map(Object.entries(entries))

t.test('runtimeImports: what a module loads when it runs, not its type-only imports', async (t) => {
  const text = [
    "import { a } from './a.js'",
    "import type { B } from './b.js'",
    "import { type C, type D } from './c.js'",
    "import { type E, e } from './e.js'",
    "import F, { type G } from './f.js'",
    "import * as h from './h.js'",
    'import {',
    '  type I,',
    '  type J',
    "} from './i.js'",
    'import {',
    '  type K,',
    '  k',
    "} from './k.js'",
    "import './side-effect.js'",
    "import { readFile } from 'node:fs/promises'",
    "export { l } from './l.js'",
    "export type { M } from './m.js'",
    "export { type N } from './n.js'",
    "export * from './o.js'",
    "export * as p from './p.js'",
    'export const q = 1',
    "export { r }",
    "// import { s } from './s.js'",
    "/* import { u } from './u.js'",
    "   import('./u2.js') */",
    "const v = `import { v } from './v.js'`",
    "const w = \"// not a comment\"; const x = await import('./x.js')",
    "const y = () => import(\n  './y.js'\n)",
    "const z = thing.import('./z.js')"
  ].join('\n')
  t.same(runtimeImports(text), ['./a.js', './e.js', './f.js', './h.js', './k.js', './side-effect.js', 'node:fs/promises', './l.js', './o.js', './p.js', './x.js', './y.js'])
})

t.test('importGraph: relative imports resolved to the files given; packages and missing files are no edge', async (t) => {
  const graph = graphOf({
    'src/a.ts': "import { b } from './b.js'\nimport { c } from './dir/index.js'\nimport { s } from '@club/storage'\nimport { gone } from './gone.js'\nimport { again } from './b.js'",
    'src/b.ts': "import { c } from './dir'",
    'src/dir/index.ts': "import type { A } from '../a.js'\nimport data from '../data.json'",
    'src/main.mts': "import { a } from './a.js'\nimport { m } from './lib.mjs'",
    'src/lib.mts': ''
  })
  t.same(Object.fromEntries(graph), {
    'src/a.ts': ['src/b.ts', 'src/dir/index.ts'],
    'src/b.ts': ['src/dir/index.ts'],
    'src/dir/index.ts': [],
    'src/main.mts': ['src/a.ts', 'src/lib.mts'],
    'src/lib.mts': []
  })
})

t.test('importCycles: each cycle once, its files in import order from the first by name', async (t) => {
  t.same(importCycles(edges({ a: ['b'], b: ['c'], c: [] })), [], 'a chain')
  t.same(importCycles(edges({ a: ['b', 'c'], b: ['d'], c: ['d'], d: [] })), [], 'a diamond')
  t.same(importCycles(edges({ b: ['a'], a: ['b'] })), [['a', 'b']], 'two files')
  t.same(importCycles(edges({ c: ['a'], a: ['b'], b: ['c'], x: ['a'] })), [['a', 'b', 'c']], 'three, in the order they import, whichever file comes first')
  t.same(importCycles(edges({ a: ['a'], b: [] })), [['a']], 'a file importing itself')
  // The storage package's shape before its fix: the index loads both drivers, both read the index.
  t.same(
    importCycles(edges({ index: ['s3', 'gcs', 'file'], s3: ['index'], gcs: ['index'], file: [] })),
    [['gcs', 'index'], ['index', 's3']],
    'two cycles through one file: both named, the file outside neither'
  )
  t.same(importCycles(edges({ a: ['b'], b: ['a'], c: ['d'], d: ['c'] })), [['a', 'b'], ['c', 'd']], 'two apart')
  t.same(cycleText(['a.ts', 'b.ts']), 'a.ts → b.ts → a.ts')
})

t.test('a type-only import back is no cycle; a value imported beside a type is', async (t) => {
  const page = (clause) => graphOf({ 'main.ts': "import { page } from './page.js'", 'page.ts': `import ${clause} from './main.js'` })
  t.same(importCycles(page('type { Context }')), [])
  t.same(importCycles(page('{ type Context, type PageView }')), [])
  t.same(importCycles(page('{ type Context, go }')), [['main.ts', 'page.ts']])
  t.same(importCycles(graphOf({ 'index.ts': "const s3 = () => import('./s3.js')", 's3.ts': "import { keyOf } from './index.js'" })), [['index.ts', 's3.ts']], 'a dynamic import counts')
})

t.test("test code is not the product's: tests, test-support, helpers, fixtures", async (t) => {
  for (const path of ['server/src/a.test.ts', 'server/src/test-support/app.ts', 'server/src/jobs/test-helpers.ts', 'server/src/packages/test-fixtures.ts', 'agent/src/temp-dir.fixture.ts']) t.ok(isTestCode(path), path)
  for (const path of ['server/src/payments/test-provider.ts', 'server/src/app.ts', 'agent/src/clips/export.ts']) t.notOk(isTestCode(path), path)
})

t.test('no runtime import cycle among the product files of server/src, agent/src and packages/*/src', async (t) => {
  const sources = readSources(root)
  const graph = importGraph(sources)
  const cycles = importCycles(graph)
  t.same(cycles.map(cycleText), [], 'move what both files need into a module of its own (or into the lower one) so the imports point one way')
  // The scan sees the tree: every folder, the static imports and the storage package's dynamic ones.
  for (const folder of ['server/src/', 'agent/src/', 'packages/contract/src/', 'packages/storage/src/', 'packages/web/src/']) t.ok([...sources.keys()].some((file) => file.startsWith(folder)), folder)
  t.notOk([...sources.keys()].some(isTestCode), 'no test code read')
  t.ok(graph.get('server/src/app.ts').includes('server/src/config.ts'))
  t.ok(graph.get('packages/storage/src/index.ts').includes('packages/storage/src/s3.ts'), 'the lazily loaded S3 driver')
})
