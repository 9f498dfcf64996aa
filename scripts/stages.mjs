// What each stage of `pnpm test` runs (scripts/test.mjs is the shell that runs it). Pure: which test
// files, in which package, on which database and Node, and why a file is left out of a stage. The
// lists name files, not patterns, so a rename is caught (stages.test.mjs checks every named file
// exists) and a new test file lands in every stage that takes a whole package by default.
import { readdirSync } from 'node:fs'
import { join, relative, sep } from 'node:path'

/**
 * The packages with tests, in the order they run: `dir` from the workspace root, `typecheck` the
 * tsconfig that checks the test files (tsc -b builds only the product), `serial` test files that run
 * alone in their lane (ffmpeg, Chromium, the package build: two at once would time each other out).
 */
export const PACKAGES = [
  { name: 'contract', dir: 'packages/contract', tests: 'src' },
  { name: 'storage', dir: 'packages/storage', tests: 'src' },
  { name: 'scripts', dir: 'scripts', tests: '.' },
  { name: 'web', dir: 'packages/web', tests: 'src', typecheck: 'tsconfig.test.json' },
  { name: 'agent', dir: 'agent', tests: 'src', typecheck: 'tsconfig.test.json' },
  { name: 'server', dir: 'server', tests: 'src', typecheck: 'tsconfig.test.json' },
  { name: 'e2e', dir: 'test', tests: 'src', typecheck: 'tsconfig.json', jobs: 1 }
]

/** The unit suites: everything but the end-to-end package (a real server, agent, ffmpeg and Chromium together). */
export const UNIT_PACKAGES = ['contract', 'storage', 'scripts', 'web', 'agent', 'server']

/**
 * Files `pnpm test:fast` leaves to the full run (the sqlite stage, and postgres for the server's): the
 * ones that build or start other programs as a user would, each a minute or more of a two-minute lane,
 * and each changed by few commits. What they check is checked by unit files too, in one process.
 */
export const SLOW_UNIT_FILES = {
  agent: { 'src/update/package.test.ts': "builds the box's .deb with a bundled Node and runs lintian" },
  server: {
    'src/multi-process.test.ts': 'two servers and the CLI as separate processes racing on one database (about 40 processes started)',
    'src/footage-takedowns/processes.test.ts': "two servers and the CLI as separate processes racing a box's READY against a takedown (about a minute)",
    'src/plugins/openapi-client.test.ts': "runs openapi-typescript and tsc on docs/integrating.md's typed-client example, as an integrator would",
    'src/webhook-endpoints/processes.test.ts': 'two servers and the CLI as separate processes sending webhooks, one killed and its lease waited out (about a minute)'
  }
}

/**
 * Files of the server and end-to-end packages the PostgreSQL stage does not run again, each with why
 * it cannot behave differently there. Everything else in those two packages runs on PostgreSQL; the
 * other packages never open the server's database. The SQLite stage records which files open a
 * database (database-audit.cjs), and `checkAudit` fails the run when one of these did, unless it is in
 * OPENS_DATABASE_BUT_SAME.
 */
export const NOT_ON_POSTGRES = {
  server: {
    'src/billing/calendar.test.ts': 'pure functions: renewal dates in a timezone',
    'src/db/checkpoints.test.ts': "SQLite's write-ahead log checkpoints in a worker thread; PostgreSQL has no such log to copy back",
    'src/billing/money.test.ts': 'pure functions: minor units and rounding',
    'src/billing/pricing.test.ts': 'pure functions: order lines',
    'src/packages/constraints.test.ts': 'pure functions: redemption constraints',
    'src/pages.test.ts': "reads the server package's own files: no page is served outside the pipeline; no database",
    'src/payments/stripe-provider.test.ts': "the Stripe driver against a local server speaking Stripe's protocol; no database",
    'src/layout.test.ts': "reads the source files and dist/ to check the layout's rules; no database",
    'src/readme.test.ts': 'reads docs/running-a-server.md and the settings schema; no database',
    'src/reply.test.ts': 'serialises answers in a bare Fastify app; no database'
  },
  e2e: {
    'src/browser.test.ts': "the box's page in Chromium against the agent alone; no server database",
    'src/storage.test.ts': 'the storage drivers against local S3 and GCS servers; no database',
    'src/pages.test.ts': 'the console and box pages in Chromium: the pages are the same bytes whatever database serves their API, which the server suite checks on both',
    'src/replay-page.test.ts': "the court page in Chromium: its API calls are the server suite's replay and guest routes, checked there on both databases",
    'src/webhooks-console.test.ts': "the console's webhook endpoints page in Chromium: its API calls and the delivery are server/src/webhook-endpoints', checked there on both databases",
    'src/updates.test.ts':
      "the box's update, health check and rollback (packages built, installed and restarted): its server calls are registration, polls and the release routes, which the server suite checks on both databases; 137 s of the PostgreSQL stage's critical path"
  }
}

/**
 * Files in NOT_ON_POSTGRES that do open a database, and why what they check cannot depend on which.
 * Kept short on purpose: a file here must say what it checks that no database decides.
 */
export const OPENS_DATABASE_BUT_SAME = {
  server: {
    'src/db/checkpoints.test.ts': 'opens SQLite files on purpose, whatever the stage: what it checks (the log copied back by a worker) exists only in SQLite'
  },
  e2e: {
    'src/pages.test.ts': 'renders pages in Chromium; the routes it calls are checked on PostgreSQL by the server suite',
    'src/replay-page.test.ts': 'renders the court page in Chromium; the routes it calls are checked on PostgreSQL by the server suite',
    'src/webhooks-console.test.ts': 'renders the webhook endpoints page in Chromium; the routes and the delivery it uses are checked on PostgreSQL by server/src/webhook-endpoints',
    'src/updates.test.ts':
      "checks the agent's installer and rollback; the registration, poll and agent-release routes it calls are checked on PostgreSQL by server/src/replay-servers and server/src/agent-releases"
  }
}

/**
 * The Node 24 stage: what can differ between Node versions, by file, with what in it can. The rest
 * (route rules, SQL, pure functions) runs the same JavaScript on the same V8 semantics; the SQLite and
 * PostgreSQL stages cover it on Node 20.
 */
export const NODE24_FILES = {
  server: {
    'src/db/busy.test.ts': 'the better-sqlite3 addon: locks and the busy timeout across connections',
    'src/db/checkpoints.test.ts': 'the better-sqlite3 addon loaded in a worker thread, SharedArrayBuffer and Atomics',
    'src/db/backup.test.ts': "the better-sqlite3 addon's online backup, file streams",
    'src/db/read-cache.test.ts': 'the addon (data_version) and the ordering of setImmediate and process.nextTick',
    // multi-process.test.ts (the heaviest file, about a minute) is left to the other stages: what in it
    // can differ between Node versions (servers as child processes racing on one database file, HTTP,
    // the addon in several processes) is what scheduler-processes, main and cli exercise here.
    'src/jobs/scheduler-processes.test.ts': 'child processes, timers and the addon in several processes: two servers racing one lease on one file',
    'src/main.test.ts': "a process starting, its signals and graceful close",
    'src/cli.test.ts': 'the CLI as a child process',
    'src/oauth2/token.test.ts': 'crypto: scrypt password hashes, token digests',
    'src/webhooks/webhooks.test.ts': 'crypto (HMAC signatures) and the HTTP client',
    'src/payments/stripe-provider.test.ts': "the HTTP client (fetch) against a local server",
    'src/replay-servers/snapshot.test.ts': 'the HTTP client calling a box, streamed bodies',
    'src/agent-releases/agent-releases.test.ts': 'crypto (Ed25519 signatures) and streamed uploads',
    'src/replay-servers/claims.test.ts': "crypto: Ed25519 proofs of a box's key, raw keys imported from base64",
    'src/logging.test.ts': "pino's streams",
    'src/plugins/rate-limit-redis.test.ts': 'net sockets (the Redis client) and timers'
  },
  agent: {
    'src/recorder/correction.test.ts': "the agent's ffmpeg invocations, through real ffmpeg",
    'src/update/installer.test.ts': 'the update installer: child processes, file modes, crypto',
    'src/update/updater.test.ts': 'the update handed to a shell command, downloads, signatures',
    'src/update/decide.test.ts': 'Ed25519 verification of releases',
    'src/http.test.ts': "the box's HTTP server",
    'src/control/poller-http.test.ts': 'the HTTP client and timers of the poll loop',
    'src/access/access.test.ts': 'crypto: the local password hash',
    'src/control/box-key.test.ts': "crypto and files: the box key's Ed25519 pair made once, its file's mode, the link that keeps the first",
    'src/control/state.test.ts': 'file modes and symbolic links of the state folder'
  }
}

/** A package's test files, relative to its folder, sorted. */
export function testFilesOf(root, pkg) {
  const base = join(root, pkg.dir)
  const found = []
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.')) continue
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (/\.test\.(ts|mjs)$/.test(entry.name)) found.push(relative(base, path).split(sep).join('/'))
    }
  }
  walk(join(base, pkg.tests))
  return found.sort()
}

export const STAGES = ['fast', 'e2e', 'sqlite', 'postgres', 'node24']

/**
 * The tap runs of a stage: `{ pkg, files, database, node }` per package, `files` relative to the
 * package. `filesOf(pkg)` answers a package's test files (testFilesOf bound to the workspace).
 */
export function planStage(stage, filesOf) {
  const byName = Object.fromEntries(PACKAGES.map((p) => [p.name, p]))
  const run = (name, keep, extra = {}) => {
    const pkg = byName[name]
    const files = filesOf(pkg).filter(keep)
    return files.length ? [{ pkg, files, database: 'sqlite', node: 'default', ...extra }] : []
  }
  switch (stage) {
    case 'fast':
      return UNIT_PACKAGES.flatMap((name) => run(name, (f) => !(f in (SLOW_UNIT_FILES[name] ?? {}))))
    case 'e2e':
      // The end-to-end package alone (the sqlite stage runs it too): with `fast`, what `--load` proves.
      return run('e2e', () => true)
    case 'sqlite':
      return [...UNIT_PACKAGES, 'e2e'].flatMap((name) => run(name, () => true))
    case 'postgres':
      return ['server', 'e2e'].flatMap((name) => run(name, (f) => !(f in NOT_ON_POSTGRES[name]), { database: 'postgres' }))
    case 'node24':
      return Object.keys(NODE24_FILES).flatMap((name) => run(name, (f) => f in NODE24_FILES[name], { node: '24' }))
    default:
      throw new Error(`no stage named ${stage}: one of ${STAGES.join(', ')}`)
  }
}

/**
 * A run cut into `parts` runs of alternate files (neighbours in a folder tend to be alike in weight),
 * so that two workers share a long suite's tail instead of one waiting for the other. Small runs stay whole.
 */
export function splitRun(run, parts) {
  if (parts < 2 || run.files.length < parts * 4) return [run]
  return Array.from({ length: parts }, (_, i) => ({ ...run, part: `${i + 1}/${parts}`, files: run.files.filter((_, j) => j % parts === i) }))
}

/**
 * The order the workers take the runs in: the end-to-end runs first, each stage's in a chain of its
 * own (they mostly wait on real time: footage being recorded, a box's poll, Chromium), then the longest
 * first so that the last to finish is short: the server's runs (in halves), the agent's, the rest; the
 * other Node's runs last, since it is prepared meanwhile. Answers a list of jobs, each a list of runs
 * done in order, and how many workers take them: one per end-to-end chain and one more, so that while
 * the chains wait the unit suites keep both cores busy.
 */
export function jobOrder(runs) {
  // The agent's run holds the package build and lintian (a minute and more of one process): started
  // early it never becomes the tail.
  const weight = { server: 3, agent: 3 }
  const otherNode = (run) => (run.node === '24' ? 1 : 0)
  const e2e = runs.filter((run) => run.pkg.name === 'e2e')
  const chains = [...new Set(e2e.map((run) => run.stage))].map((stage) => e2e.filter((run) => run.stage === stage))
  const rest = runs
    .filter((run) => run.pkg.name !== 'e2e')
    .flatMap((run) => splitRun(run, run.pkg.name === 'server' ? 2 : 1))
    .map((run, i) => ({ run, i }))
    .sort((a, b) => otherNode(a.run) - otherNode(b.run) || (weight[b.run.pkg.name] ?? 1) - (weight[a.run.pkg.name] ?? 1) || a.i - b.i)
    .map(({ run }) => [run])
  return { jobs: [...chains, ...rest], workers: Math.max(2, chains.length + 1), chains: chains.length }
}

/**
 * The audit's verdict: `opened` lists the test files (absolute paths) that opened a database in the
 * SQLite stage; `postgres` is that stage's plan. Answers one line per file that opened a database but
 * is not run on PostgreSQL and is not known to be the same there, and per file named in the lists that
 * no longer exists.
 */
export function checkAudit({ root, opened, postgres }) {
  const onPostgres = new Set(postgres.flatMap((run) => run.files.map((f) => join(root, run.pkg.dir, f))))
  const same = new Set(
    Object.entries(OPENS_DATABASE_BUT_SAME).flatMap(([name, files]) => Object.keys(files).map((f) => join(root, PACKAGES.find((p) => p.name === name).dir, f)))
  )
  return [...new Set(opened)]
    .filter((file) => !onPostgres.has(file) && !same.has(file))
    .sort()
    .map(
      (file) =>
        `${relative(root, file)} opens a database but the PostgreSQL stage leaves it out: take it out of NOT_ON_POSTGRES in scripts/stages.mjs (or, if what it checks cannot depend on the database, say why in OPENS_DATABASE_BUT_SAME)`
    )
}

/** Every file the lists name that does not exist (a renamed or deleted test): one line each. */
export function missingNamedFiles(filesOf) {
  const lines = []
  for (const [list, table] of Object.entries({ SLOW_UNIT_FILES, NOT_ON_POSTGRES, OPENS_DATABASE_BUT_SAME, NODE24_FILES })) {
    for (const [name, files] of Object.entries(table)) {
      const pkg = PACKAGES.find((p) => p.name === name)
      const existing = new Set(filesOf(pkg))
      for (const file of Object.keys(files)) if (!existing.has(file)) lines.push(`${list} names ${pkg.dir}/${file}, which is not a test file`)
    }
  }
  return lines
}
