// The stages' decisions (stages.mjs), the runner's reading of tap (test.mjs) and the database audit's
// preload, without running any suite.
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { NODE24_FILES, NOT_ON_POSTGRES, OPENS_DATABASE_BUT_SAME, PACKAGES, SLOW_UNIT_FILES, checkAudit, jobOrder, missingNamedFiles, planStage, splitRun, testFilesOf } from './stages.mjs'
import { stagesToRun, summaryOf, tapFolder } from './test.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const filesOf = (pkg) => testFilesOf(root, pkg)
const audit = createRequire(import.meta.url).resolve('./database-audit.cjs')
const files = (plan) => Object.fromEntries(plan.map((run) => [run.pkg.name, run.files]))

t.test('every file the lists name is a test file of its package', async (t) => {
  t.same(missingNamedFiles(filesOf), [])
  const fake = (pkg) => (pkg.name === 'server' ? ['src/a.test.ts'] : filesOf(pkg))
  t.match(missingNamedFiles(fake).join('\n'), /NOT_ON_POSTGRES names server\/src\/readme\.test\.ts, which is not a test file/, 'a renamed file is caught')
})

t.test("no test mocks imports: pnpm test leaves tap's mock loader out (_TAPJS_MOCK_OFF_, patches/@tapjs__mock)", async (t) => {
  const mocking = PACKAGES.flatMap((pkg) => filesOf(pkg).map((file) => join(pkg.dir, file))).filter((file) => /\bt\.(mockImport|mockRequire|createMock)\(/.test(readFileSync(join(root, file), 'utf8')))
  t.same(mocking, [], 'a test that needs t.mockImport must drop _TAPJS_MOCK_OFF_ from scripts/test.mjs and the patch')
})

t.test('the SQLite stage runs every test file of every package', async (t) => {
  const plan = planStage('sqlite', filesOf)
  t.same(plan.map((run) => run.pkg.name), ['contract', 'storage', 'scripts', 'web', 'agent', 'server', 'e2e'])
  for (const run of plan) t.same(run.files, filesOf(run.pkg), `${run.pkg.name}: all of them`)
  t.ok(plan.every((run) => run.database === 'sqlite' && run.node === 'default'))
})

t.test('the fast loop: the unit suites on SQLite without the package build and the multi-process files', async (t) => {
  const plan = files(planStage('fast', filesOf))
  t.same(Object.keys(plan), ['contract', 'storage', 'scripts', 'web', 'agent', 'server'], 'no end-to-end package')
  t.notOk(plan.agent.includes('src/update/package.test.ts'))
  t.notOk(plan.server.includes('src/multi-process.test.ts'))
  const server = filesOf(PACKAGES.find((p) => p.name === 'server'))
  t.same(plan.server, server.filter((f) => !(f in SLOW_UNIT_FILES.server)), 'every other server file')
  // Left to the full run, not dropped: the SQLite stage runs every file.
  const sqlite = files(planStage('sqlite', filesOf))
  t.ok(Object.keys(SLOW_UNIT_FILES.server).every((f) => sqlite.server.includes(f)))
})

t.test('the PostgreSQL stage: the server and end-to-end files, less those that cannot differ there', async (t) => {
  const plan = planStage('postgres', filesOf)
  t.ok(plan.every((run) => run.database === 'postgres'))
  const byName = files(plan)
  t.same(Object.keys(byName), ['server', 'e2e'])
  for (const name of ['server', 'e2e']) {
    const all = filesOf(PACKAGES.find((p) => p.name === name))
    t.same([...byName[name], ...Object.keys(NOT_ON_POSTGRES[name])].sort(), all, `${name}: each file either runs there or says why not`)
  }
  t.ok(byName.server.includes('src/multi-process.test.ts'))
  t.ok(byName.e2e.includes('src/agent.test.ts'))
  t.notOk(byName.e2e.includes('src/storage.test.ts'))
})

t.test('the Node 24 stage: the named set, on Node 24', async (t) => {
  const plan = planStage('node24', filesOf)
  t.ok(plan.every((run) => run.node === '24' && run.database === 'sqlite'))
  t.same(files(plan), Object.fromEntries(Object.entries(NODE24_FILES).map(([name, set]) => [name, Object.keys(set).sort()])))
  for (const [name, set] of Object.entries(NODE24_FILES)) for (const [file, why] of Object.entries(set)) t.ok(why.length > 10, `${name}/${file} says why`)
})

t.test('an unknown stage is refused in words', async (t) => {
  t.throws(() => planStage('nope', filesOf), /no stage named nope: one of fast, e2e, sqlite, postgres, node24/)
  t.throws(() => stagesToRun(['sqlite', 'nope']), /no stage named nope/)
  t.same(stagesToRun(undefined), ['sqlite', 'postgres', 'node24'])
  t.same(stagesToRun(['node24', 'fast']), ['fast', 'node24'], 'in the order they run')
})

t.test('the end-to-end stage: the end-to-end package alone, on SQLite (with fast, what --load proves)', async (t) => {
  const plan = planStage('e2e', filesOf)
  t.same(plan.map((run) => run.pkg.name), ['e2e'])
  t.same(plan[0].files, filesOf(PACKAGES.find((p) => p.name === 'e2e')))
  t.equal(plan[0].database, 'sqlite')
})

t.test("the workers: each stage's end-to-end runs in a chain of its own first, then the longest, the server in halves, the other Node last", async (t) => {
  const runs = ['sqlite', 'postgres'].flatMap((stage) => planStage(stage, filesOf).map((run) => ({ ...run, stage })))
  const { jobs, workers, chains } = jobOrder(runs)
  t.equal(chains, 2)
  t.equal(workers, 3, 'one per chain, and one for the unit suites while the chains wait')
  t.same(jobs[0].map((run) => `${run.stage} ${run.pkg.name}`), ['sqlite e2e'], 'one chain per stage')
  t.same(jobs[1].map((run) => `${run.stage} ${run.pkg.name}`), ['postgres e2e'])
  t.ok(jobs.slice(2).every((job) => job.length === 1 && job[0].pkg.name !== 'e2e'))
  t.same(jobs.slice(2, 7).map(([run]) => `${run.stage} ${run.pkg.name} ${run.part ?? ''}`.trim()), ['sqlite agent', 'sqlite server 1/2', 'sqlite server 2/2', 'postgres server 1/2', 'postgres server 2/2'])
  t.same(jobs.slice(7).map(([run]) => run.pkg.name), ['contract', 'storage', 'scripts', 'web'])
  const server = runs.find((run) => run.pkg.name === 'server' && run.stage === 'sqlite')
  const halves = splitRun(server, 2)
  t.same([...halves[0].files, ...halves[1].files].sort(), server.files, 'no file lost or run twice')
  t.ok(Math.abs(halves[0].files.length - halves[1].files.length) <= 1)
  const small = { ...server, files: server.files.slice(0, 5) }
  t.same(splitRun(small, 2), [small], 'a small run stays whole')
  const fast = jobOrder(planStage('fast', filesOf).map((run) => ({ ...run, stage: 'fast' })))
  t.same(fast.jobs.map(([run]) => run.pkg.name), ['agent', 'server', 'server', 'contract', 'storage', 'scripts', 'web'], 'no chain without the end-to-end package')
  t.equal(fast.workers, 2)
  const withNode24 = jobOrder([...runs, ...planStage('node24', filesOf).map((run) => ({ ...run, stage: 'node24' }))]).jobs
  const firstOther = withNode24.findIndex(([run]) => run.node === '24')
  t.ok(firstOther > 0 && withNode24.slice(firstOther).every(([run]) => run.node === '24'), 'the other Node last: it is prepared meanwhile')
})

t.test("the audit: a file that opened a database must run on PostgreSQL or say why it cannot differ", async (t) => {
  const postgres = planStage('postgres', filesOf)
  const at = (dir, file) => join(root, dir, file)
  t.same(checkAudit({ root, opened: [at('server', 'src/oauth2/token.test.ts'), at('test', 'src/agent.test.ts')], postgres }), [], 'both run on PostgreSQL')
  t.same(checkAudit({ root, opened: Object.keys(OPENS_DATABASE_BUT_SAME.e2e).map((f) => at('test', f)), postgres }), [], 'known to be the same')
  const forgotten = checkAudit({ root, opened: [at('server', 'src/readme.test.ts'), at('server', 'src/readme.test.ts')], postgres })
  t.same(forgotten, [
    'server/src/readme.test.ts opens a database but the PostgreSQL stage leaves it out: take it out of NOT_ON_POSTGRES in scripts/stages.mjs (or, if what it checks cannot depend on the database, say why in OPENS_DATABASE_BUT_SAME)'
  ])
})

t.test("the audit's preload records the test file when SQLite opens, in the processes it starts too", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'club-audit-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const log = join(dir, 'opened.txt')
  writeFileSync(log, '')
  const betterSqlite3 = createRequire(join(root, 'server', 'package.json')).resolve('better-sqlite3')
  mkdirSync(join(dir, 'src'))
  const opens = join(dir, 'src', 'opens.test.mjs')
  const child = join(dir, 'src', 'child.mjs')
  const importsOnly = join(dir, 'src', 'imports-only.test.mjs')
  writeFileSync(child, `import { createRequire } from 'node:module'\nconst D = createRequire(import.meta.url)(${JSON.stringify(betterSqlite3)})\nnew D(':memory:').close()\n`)
  writeFileSync(opens, `import { spawnSync } from 'node:child_process'\nspawnSync(process.execPath, [${JSON.stringify(child)}], { stdio: 'inherit' })\n`)
  writeFileSync(importsOnly, `import { createRequire } from 'node:module'\ncreateRequire(import.meta.url)(${JSON.stringify(betterSqlite3)})\n`)
  const env = { ...process.env, CLUB_DATABASE_AUDIT: log, NODE_OPTIONS: `--require=${audit}` }
  delete env.CLUB_TEST_FILE
  for (const file of [opens, importsOnly]) t.equal(spawnSync(process.execPath, [file], { env, stdio: 'inherit' }).status, 0)
  t.same(readFileSync(log, 'utf8').split('\n').filter(Boolean), [opens], 'the parent test file, for its child; loading the package alone opens nothing')
  const { testFileOf, isSqliteAddon } = createRequire(import.meta.url)('./database-audit.cjs')
  t.equal(testFileOf({}, ['node', '/w/server/dist/main.js']), undefined, 'a server started by hand is no test')
  t.equal(testFileOf({ CLUB_TEST_FILE: '/w/a.test.ts' }, ['node', '/w/server/dist/main.js']), '/w/a.test.ts')
  t.ok(isSqliteAddon('/c/better-sqlite3-12.11.1-node-24.18.1/build/Release/better_sqlite3.node'), "the Node 24 stage's build too")
})

t.test("the runner reads tap's stream: one line a passing file, a failing file whole, the counts", async (t) => {
  const shown = []
  const fold = tapFolder((line) => shown.push(line))
  const stream = [
    'TAP version 14',
    '# Subtest: src/a.test.ts',
    '    ok 1 - fine',
    '    1..1',
    'ok 1 - src/a.test.ts # time=1234.5ms',
    '',
    '# Subtest: src/b.test.ts',
    '    not ok 1 - broken',
    '      ---',
    '      found: 1',
    '      ...',
    '    1..1',
    'not ok 2 - src/b.test.ts # time=10ms',
    '  ---',
    '  exitCode: 1',
    '  ...',
    '',
    '1..2',
    '# { total: 2, pass: 1, fail: 1 }',
    '# time=3000ms'
  ]
  for (const line of stream) fold(line)
  t.same(shown, [
    'ok   src/a.test.ts 1.2s',
    '# Subtest: src/b.test.ts',
    '    not ok 1 - broken',
    '      ---',
    '      found: 1',
    '      ...',
    '    1..1',
    'not ok 2 - src/b.test.ts # time=10ms',
    '  ---',
    '  exitCode: 1',
    '  ...',
    '# { total: 2, pass: 1, fail: 1 }'
  ])
  t.same(summaryOf('# { total: 268, pass: 266, fail: 1, skip: 1 }'), { total: 268, pass: 266, fail: 1, skip: 1, todo: 0 })
  t.same(summaryOf('# { total: 42, pass: 42 }'), { total: 42, pass: 42, fail: 0, skip: 0, todo: 0 })
  t.equal(summaryOf('# time=3000ms'), undefined)
})
