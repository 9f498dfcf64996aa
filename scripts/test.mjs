#!/usr/bin/env node
// `pnpm test`: every stage (scripts/stages.mjs says what each runs and why), or one with
// `pnpm test --stage NAME` (fast, e2e, sqlite, postgres, node24; repeatable; `--load` beside busy processes). Before the stages: the system
// check (bootstrap.mjs), the build (tsc -b), the test files' type check, one migrated SQLite file the
// test apps copy (CLUB_TEST_SQLITE_TEMPLATE), and whatever a stage needs (a throwaway PostgreSQL, the
// other Node). Workers take the tap runs (jobOrder in stages.mjs): each stage's end-to-end runs in a
// chain of its own, which mostly waits on real time (ffmpeg recording, a box's poll, Chromium), beside
// the unit suites, so both cores work. Every line says which run it is from; a passing file is one line
// with its time, a failing one is shown whole; the last line counts every test.
// --coverage collects coverage (off otherwise: nobody read it and it cost every run).
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { NODE24_VERSION, prepareNodeInBackground } from './node24.mjs'
import { preparePostgres } from './postgres.mjs'
import { PACKAGES, STAGES, checkAudit, jobOrder, missingNamedFiles, planStage, testFilesOf } from './stages.mjs'

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..')
const bin = (pkgDir, name) => join(root, pkgDir, 'node_modules', '.bin', name)

/** The stages a run asks for, in the order they run: every stage but `fast` (a subset of sqlite) by default. */
export function stagesToRun(asked) {
  if (!asked?.length) return ['sqlite', 'postgres', 'node24']
  for (const stage of asked) if (!STAGES.includes(stage)) throw new Error(`no stage named ${stage}: one of ${STAGES.join(', ')}`)
  return STAGES.filter((stage) => asked.includes(stage))
}

/** The counts in tap's closing line, `# { total: 268, pass: 266, fail: 1, skip: 1 }`. */
export function summaryOf(line) {
  const m = /^# \{ total: (\d+)(.*)\}$/.exec(line)
  if (!m) return undefined
  const count = (name) => Number(new RegExp(`${name}: (\\d+)`).exec(m[2])?.[1] ?? 0)
  return { total: Number(m[1]), pass: count('pass'), fail: count('fail'), skip: count('skip'), todo: count('todo') }
}

/**
 * Folds tap's TAP stream to what a person reads: one line per passing file with its time, a failing
 * file's whole block, tap's closing line. `print` takes each line to show.
 */
export function tapFolder(print) {
  let block = null
  let failing = null
  return (line) => {
    if (failing !== null) {
      // The YAML under a failing file's line (indented), then back to the top level.
      if (line.startsWith(' ')) return print(line)
      failing = null
    }
    if (line.startsWith('# Subtest: ')) {
      block = [line]
      return
    }
    const top = /^(not ok|ok) \d+ - (.+?)(?: # time=([\d.]+)ms)?( # SKIP.*)?$/.exec(line)
    if (top && block) {
      const [, verdict, file, ms, skip] = top
      if (verdict === 'ok') print(`ok   ${file}${ms ? ` ${(Number(ms) / 1000).toFixed(1)}s` : ''}${skip ?? ''}`)
      else {
        for (const l of block) print(l)
        print(line)
        failing = file
      }
      block = null
      return
    }
    if (block) return void block.push(line)
    if (/^# \{ total:/.test(line) || /^# (ERROR|No tests|Failed)/.test(line)) print(line)
  }
}

function lines(stream, onLine) {
  createInterface({ input: stream, crlfDelay: Infinity }).on('line', onLine)
}

/** The runs under way, ended with the runner when it is stopped (a tap run left behind keeps its servers). */
const children = new Set()

/** Runs a command, its output lines prefixed; resolves with its exit code. */
function runPrefixed(label, command, args, options) {
  return new Promise((resolve) => {
    // Its own process group, so that stopping it reaches tap's test processes and what they started.
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    children.add(child)
    child.on('close', () => children.delete(child))
    const out = (line) => process.stdout.write(`[${label}] ${line}\n`)
    lines(child.stdout, options.fold ? options.fold(out) : out)
    lines(child.stderr, (line) => process.stderr.write(`[${label}] ${line}\n`))
    child.on('error', (err) => {
      out(`could not start ${command}: ${err.message}`)
      resolve(1)
    })
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)))
  })
}

/**
 * `--load` or `--load=N`: N processes that each spin on a core until the run ends (N defaults to the
 * machine's cores), at the same priority as the tests.
 */
function loadProcesses(asked) {
  const count = asked === '' ? availableParallelism() : Number(asked)
  if (!Number.isInteger(count) || count < 1) throw new Error(`--load takes a number of busy processes, not ${asked}`)
  // Each spins in slices of 100 ms and ends itself once the run that started it is gone (a runner
  // killed outright runs no cleanup).
  const spin = 'const parent = process.ppid; (function spin() { const until = Date.now() + 100; while (Date.now() < until); if (process.ppid !== parent) process.exit(); setImmediate(spin) })()'
  return Array.from({ length: count }, () => spawn(process.execPath, ['-e', spin], { stdio: 'ignore' }))
}

const seconds = (since) => ((Date.now() - since) / 1000).toFixed(0)

function main() {
  const { values } = parseArgs({
    // `--load` alone is `--load=` (one busy process per core).
    args: process.argv.slice(2).map((arg) => (arg === '--load' ? '--load=' : arg)),
    options: { stage: { type: 'string', multiple: true }, coverage: { type: 'boolean', default: false }, node: { type: 'string', default: NODE24_VERSION }, load: { type: 'string' }, workers: { type: 'string' } }
  })
  let stages
  try {
    stages = stagesToRun(values.stage)
  } catch (err) {
    console.error(err.message)
    return Promise.resolve(2)
  }
  if (values.workers !== undefined && !(Number.isInteger(Number(values.workers)) && Number(values.workers) >= 1)) {
    console.error(`--workers takes a number of workers, not ${values.workers}`)
    return Promise.resolve(2)
  }
  const started = Date.now()
  const results = []
  const failures = []
  const step = (label, command, args, options = {}) => {
    const since = Date.now()
    const run = spawnSync(command, args, { cwd: root, stdio: 'inherit', ...options })
    console.log(`test: ${label} ${run.status === 0 ? 'done' : 'FAILED'} in ${seconds(since)} s`)
    if (run.status !== 0) failures.push(label)
    return run.status === 0
  }

  if (!step('system check (bootstrap)', process.execPath, ['scripts/bootstrap.mjs'])) return Promise.resolve(1)
  if (!step('build (tsc -b)', bin('.', 'tsc'), ['-b'])) return Promise.resolve(1)

  const filesOf = (pkg) => testFilesOf(root, pkg)
  const named = missingNamedFiles(filesOf)
  for (const line of named) console.error(`test: ${line}`)
  if (named.length) failures.push('scripts/stages.mjs names missing files')

  const plans = stages.map((stage) => ({ stage, runs: planStage(stage, filesOf) }))
  const work = mkdtempSync(join(tmpdir(), 'club-test-run-'))
  const cleanups = [() => rmSync(work, { recursive: true, force: true })]
  const env = { ...process.env }
  // Ctrl-C: the children have it too; the cluster and the run's folder still go.
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      for (const child of children) {
        try {
          process.kill(-child.pid, 'SIGKILL')
        } catch {
          // already gone
        }
      }
      for (const cleanup of cleanups.reverse()) cleanup()
      process.exit(130)
    })
  }

  // One migrated SQLite file for the whole run; each test app copies it instead of migrating its own.
  const template = join(work, 'club-template.db')
  if (!step('migrated SQLite template', process.execPath, ['server/dist/cli.js', 'db', 'migrate'], { env: { ...process.env, DATABASE_URL: template, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'inherit'] })) return Promise.resolve(1)
  env.CLUB_TEST_SQLITE_TEMPLATE = template

  let postgresEnv
  if (stages.includes('postgres')) {
    const since = Date.now()
    try {
      const postgres = preparePostgres()
      cleanups.push(postgres.stop)
      postgresEnv = postgres.env
      console.log(`test: throwaway PostgreSQL with a migrated template ready in ${seconds(since)} s`)
    } catch (err) {
      console.error(`test: ${err.message}`)
      failures.push('PostgreSQL')
    }
  }
  // The other Node is fetched and its better-sqlite3 compiled in the background: on a fresh machine
  // that is a minute or two, during which the other stages already run. Its runs wait for it.
  let nodeReady = Promise.resolve(undefined)
  if (stages.includes('node24')) {
    const since = Date.now()
    nodeReady = prepareNodeInBackground(values.node).then(
      (other) => {
        console.log(`test: Node ${other.version} ready in ${seconds(since)} s`)
        return other.env
      },
      (err) => {
        console.error(`test: ${err.message}`)
        failures.push(`Node ${values.node}`)
        return undefined
      }
    )
  }
  // --load: the run beside busy processes (one per core by default), as a CI machine shared with other
  // work would be: what passes only on a quiet machine depends on its speed, and fails here.
  if (values.load !== undefined) {
    let hogs
    try {
      hogs = loadProcesses(values.load)
    } catch (err) {
      console.error(err.message)
      return Promise.resolve(2)
    }
    console.log(`test: beside ${hogs.length} busy processes (--load)`)
    cleanups.push(() => hogs.forEach((hog) => hog.kill('SIGKILL')))
  }
  const audit = stages.includes('sqlite') ? join(work, 'opened-a-database.txt') : undefined
  if (audit) writeFileSync(audit, '')

  const envFor = (run) => {
    const e = { ...env }
    // tap's coverage recorder, which patches/@tapjs__processinfo leaves out when this is set: 0.7
    // CPU-s of every test process and of every process a test starts, for coverage nobody asked for.
    if (!values.coverage) e._TAPJS_PROCESSINFO_OFF_ = '1'
    // tap's mock loader, a second module hook in every test process (0.4 CPU-s each), for t.mockImport,
    // which no test uses (patches/@tapjs__mock leaves it out; stages.test.mjs fails on a test that mocks).
    e._TAPJS_MOCK_OFF_ = '1'
    if (run.database === 'postgres') Object.assign(e, postgresEnv)
    if (run.node === '24') Object.assign(e, run.nodeEnv, { CLUB_TEST_SQLITE_TEMPLATE: template })
    if (audit && run.stage === 'sqlite') {
      e.CLUB_DATABASE_AUDIT = audit
      e.NODE_OPTIONS = [e.NODE_OPTIONS, `--require=${join(root, 'scripts', 'database-audit.cjs')}`].filter(Boolean).join(' ')
    }
    return e
  }

  const tapRun = async (run) => {
    const label = `${run.stage} ${run.pkg.name}${run.part ? ` ${run.part}` : ''}`
    // What could not be prepared is already a failure, said once above.
    if (run.node === '24') run = { ...run, nodeEnv: await nodeReady }
    if ((run.node === '24' && !run.nodeEnv) || (run.database === 'postgres' && !postgresEnv)) return
    const since = Date.now()
    let summary
    const args = ['--reporter=tap', `--jobs=${run.pkg.jobs ?? 2}`]
    if (values.coverage) args.push('--no-disable-coverage', '--coverage-report=text-summary')
    const fold = (print) => {
      const fold = tapFolder(print)
      return (line) => {
        summary = summaryOf(line) ?? summary
        fold(line)
      }
    }
    const code = await runPrefixed(label, bin(run.pkg.dir, 'tap'), [...args, ...run.files], { cwd: join(root, run.pkg.dir), env: envFor(run), fold })
    const result = { label, files: run.files.length, seconds: Number(seconds(since)), ...(summary ?? { total: 0, pass: 0, fail: 0, skip: 0 }) }
    results.push(result)
    if (code !== 0 || !summary || result.fail > 0) failures.push(label)
  }

  const typecheck = async (pkg) => {
    const since = Date.now()
    const code = await runPrefixed(`typecheck ${pkg.name}`, bin('.', 'tsc'), ['-p', join(pkg.dir, pkg.typecheck)], { cwd: root, env })
    console.log(`test: typecheck of ${pkg.name}'s tests ${code === 0 ? 'done' : 'FAILED'} in ${seconds(since)} s`)
    if (code !== 0) failures.push(`typecheck ${pkg.name}`)
  }

  // The workers take jobs in jobOrder's order (scripts/stages.mjs); the type checks go just after the
  // end-to-end chains, so that a type error shows within the first minutes.
  const planned = plans.flatMap(({ stage, runs }) => runs.map((run) => ({ ...run, stage })))
  const inPlan = new Set(planned.map((run) => run.pkg.name))
  const checks = PACKAGES.filter((pkg) => pkg.typecheck && inPlan.has(pkg.name)).map((pkg) => () => typecheck(pkg))
  const order = jobOrder(planned)
  const ordered = order.jobs.map((runs) => async () => {
    for (const run of runs) await tapRun(run)
  })
  const jobs = [...ordered.slice(0, order.chains), ...checks, ...ordered.slice(order.chains)]
  const worker = async () => {
    while (jobs.length) await jobs.shift()()
  }

  // --workers N: how many take jobs at once (jobOrder's answer otherwise), to measure another choice.
  const workers = values.workers ? Number(values.workers) : order.workers
  console.log(`test: ${workers} workers`)
  return Promise.all(Array.from({ length: workers }, worker)).then(() => {
    if (audit) {
      const opened = readFileSync(audit, 'utf8').split('\n').filter(Boolean)
      const problems = checkAudit({ root, opened, postgres: planStage('postgres', filesOf) })
      // The server suite opens databases in most files: an empty record is a preload that never ran.
      if (opened.length === 0) problems.push(`no test file was recorded opening a database: ${join('scripts', 'database-audit.cjs')} did not run`)
      for (const line of problems) console.error(`test: ${line}`)
      if (problems.length) failures.push('the PostgreSQL stage leaves out a database test')
      else console.log(`test: ${new Set(opened).size} test files opened a database; the PostgreSQL stage runs each (or says why not)`)
    }
    for (const cleanup of cleanups.reverse()) cleanup()
    console.log('\ntest: what ran')
    for (const r of results) console.log(`  ${r.label.padEnd(22)} ${String(r.files).padStart(3)} files ${String(r.pass).padStart(6)} passed ${String(r.fail).padStart(3)} failed ${String(r.seconds).padStart(5)} s`)
    console.log(`test: ${stages.join(', ')} in ${(Number(seconds(started)) / 60).toFixed(1)} min${failures.length ? `; failed: ${failures.join(', ')}` : ''}`)
    const passed = results.reduce((n, r) => n + r.pass, 0)
    const failed = results.reduce((n, r) => n + r.fail, 0)
    console.log(`${passed} passed, ${failed} failed`)
    return failures.length ? 1 : 0
  })
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const code = await main()
  process.exitCode = code
}
