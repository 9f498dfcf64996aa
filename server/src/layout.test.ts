// Rules of the source's layout that no type check sees: read from the files themselves.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const SRC = dirname(fileURLToPath(import.meta.url))

/** Code only tests load: tests, the test-support folder, an area's test helpers and fixtures. */
const isTestCode = (path: string) => /(\.test\.|(^|\/)test-support\/|(^|\/)test-(helpers|fixtures)\.)/.test(path)

/** The product's TypeScript files, as paths relative to src/. */
function productFiles(): string[] {
  return readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts') && !isTestCode(file))
}

/** The files a source file imports by relative path (static and dynamic), as paths relative to src/. */
function relativeImports(file: string): string[] {
  const text = readFileSync(join(SRC, file), 'utf8')
  const specifiers = [...text.matchAll(/(?:from\s+|import\s*\(\s*)'(\.\.?\/[^']+)'/g)].map((m) => m[1]!)
  return specifiers.map((specifier) => relative(SRC, resolve(SRC, dirname(file), specifier)).replace(/\.js$/, '.ts'))
}

t.test("no area's commands import cli.ts back (it imports them all: a circle)", async (t) => {
  const importers = productFiles().filter((file) => file !== 'cli.ts' && relativeImports(file).includes('cli.ts'))
  t.same(importers, [], 'the helpers commands share are in cli/args.ts')
  // The scan itself sees imports: cli.ts imports cli/args.ts and the areas' commands.
  t.ok(relativeImports('cli.ts').includes('cli/args.ts'))
  t.ok(relativeImports('cli.ts').includes('venue/cli.ts'))
})

t.test('dist/ holds no test support (the fakes, helpers and fixtures stay with the tests)', async (t) => {
  const dist = join(SRC, '..', 'dist')
  const built = readdirSync(dist, { recursive: true, encoding: 'utf8' })
  t.ok(built.includes('app.js'), 'dist/ is built (tsc -b runs before the tests)')
  t.same(built.filter((file) => isTestCode(file) || /(^|\/)fake-/.test(file)), [], 'tsconfig.json leaves test code out of the build (files from an older build stay in dist/ until it is removed: rm -rf server/dist)')
})

t.test('no file outside db/ branches on the database dialect (the SQL that differs is in db/sql.ts)', async (t) => {
  const branch = /dialectOf\([^)]*\)\s*[!=]==|isPostgres|['"](postgres|sqlite)['"]/
  const branching = productFiles().filter((file) => !file.startsWith('db/') && branch.test(readFileSync(join(SRC, file), 'utf8')))
  t.same(branching, [], 'services call db/sql.ts (greatest, least, jsonArrayElements, textContains) instead')
  t.ok(branch.test(readFileSync(join(SRC, 'db/sql.ts'), 'utf8')), 'the pattern finds the branches db/sql.ts does hold')
})
