// The "at most once" rule of the built-in scheduler across processes: two servers on one database,
// each firing court-locking every second (and every job's catch-up at start), run each slot once.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openDatabase } from '../db/database.js'
import { testPostgresDatabase } from '../test-support/postgres.js'
import { spawnServer } from '../test-support/processes.js'

const SLOTS = 6

t.test('two server processes on one database run each slot once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'club-scheduler-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const env = {
    ...(process.env as Record<string, string>),
    // One SQLite file, or one PostgreSQL database when the suite runs there.
    DATABASE_URL: (await testPostgresDatabase(t)) ?? join(dir, 'club.db'),
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    SCHEDULER: 'internal',
    // Every second, so that a few slots pass in a test.
    JOB_SCHEDULE_COURT_LOCKING: '* * * * * *'
  }
  const servers = [spawnServer(t, env), spawnServer(t, env)]
  const db = openDatabase(env.DATABASE_URL)
  t.teardown(() => db.destroy())
  // Wait for what the servers write, not for a time: SLOTS court-locking runs (bounded by a deadline).
  const deadline = Date.now() + 60_000
  let runs: Array<{ job: string; delivery: string | null; status: string }> = []
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250))
    try {
      runs = await db.selectFrom('job_runs').select(['job', 'delivery', 'status']).execute()
    } catch {
      continue // not migrated yet
    }
    if (runs.filter((r) => r.job === 'court-locking').length >= SLOTS) break
  }
  const codes = await Promise.all(servers.map((s) => s.stop()))
  t.same(codes, [0, 0], 'both servers stopped cleanly')
  runs = await db.selectFrom('job_runs').select(['job', 'delivery', 'status']).execute()
  const locking = runs.filter((r) => r.job === 'court-locking')
  t.ok(locking.length >= SLOTS, `${locking.length} court-locking slots ran`)
  const keys = runs.map((r) => `${r.job} ${r.delivery}`)
  t.equal(new Set(keys).size, keys.length, 'no slot of any job ran twice')
  t.same(runs.filter((r) => r.status !== 'succeeded'), [], 'none failed')
  t.same(new Set(runs.map((r) => r.job)).size, 8, "every job's catch-up ran once between them")
  const ran = servers.map((s) => (s.output().match(/"job":"court-locking".*job run finished/g) ?? []).length)
  t.equal(ran[0]! + ran[1]!, locking.length, 'each run was by one of the two')
})
