// The `club` commands that charge or send hold to the server's production guard (issue 47): with
// NODE_ENV=production (or CLUB_ENV) and a development-only setting they refuse, naming each setting,
// before the database is opened; run as the bin runs, a child process.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { openDatabase } from './db/database.js'
import { testPostgresDatabase } from './test-support/postgres.js'

// Each run of the bin takes a second or more, several on a busy machine: slow, not broken.
t.setTimeout(480_000)

const bin = fileURLToPath(new URL('../dist/cli.js', import.meta.url))

/** Settings a real club has: the guard lets these through. */
const SAFE = {
  PAYMENT_PROVIDER: 'stripe',
  STRIPE_SECRET_KEY: 'sk_test_not_a_real_key',
  DEVICE_TOKEN_SECRET: 'd'.repeat(32),
  WEBHOOK_ENDPOINT_KEY: 'w'.repeat(32),
  METRICS_TOKEN: 'm'.repeat(16),
  SMTP_URL: 'smtp://127.0.0.1:2525'
}

async function workspace(t: { teardown(fn: () => unknown): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'club-cli-production-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const DATABASE_URL = (await testPostgresDatabase(t, { empty: true })) ?? join(dir, 'club.db')
  const base = { ...process.env, DATABASE_URL, PASSWORD_HASH_COST: '1024', NODE_ENV: '', CLUB_ENV: '' }
  const club = (env: Record<string, string>, ...argv: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [bin, ...argv], { env: { ...base, ...env } }, (err, stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr })
      })
    })
  const runsOf = async (table: 'membership_job_runs' | 'job_runs') => {
    const db = openDatabase(DATABASE_URL, { busyTimeoutMs: 5000, readCacheEntries: 0 })
    try {
      return (await db.selectFrom(table).select('id').execute()).length
    } finally {
      await db.destroy()
    }
  }
  return { club, runsOf }
}

t.test('NODE_ENV=production club memberships run-job CHARGE with the test provider: refused, nothing written', async (t) => {
  const { club, runsOf } = await workspace(t)
  const refused = await club({ NODE_ENV: 'production' }, 'memberships', 'run-job', 'CHARGE')
  t.equal(refused.code, 78, 'EX_CONFIG: the configuration is what is wrong')
  t.equal(refused.stdout, '')
  t.match(refused.stderr, /^club memberships run-job: refusing to run in production \(CLUB_ENV or NODE_ENV\):\n/)
  t.match(refused.stderr, /PAYMENT_PROVIDER=test accepts any card but two and charges nobody/)
  t.match(refused.stderr, /SMTP_URL is empty/)
  const status = await club({}, 'db', 'status')
  t.same(JSON.parse(status.stdout).applied, [], 'the database was not even migrated')

  // A database in use: the refused run records no run and charges nothing.
  t.equal((await club({}, 'migrate')).code, 0)
  const ran = await club({}, 'memberships', 'run-job', 'CHARGE')
  t.equal(ran.code, 0, ran.stderr)
  t.equal(await runsOf('membership_job_runs'), 1)
  const again = await club({ CLUB_ENV: 'production', ...SAFE, PAYMENT_PROVIDER: 'test' }, 'memberships', 'run-job', 'CHARGE')
  t.equal(again.code, 78)
  t.equal(again.stderr.trim().split('\n').length, 2, 'one line for the refusal, one for the one setting left')
  t.equal(await runsOf('membership_job_runs'), 1, 'no run recorded')

  const safe = await club({ NODE_ENV: 'production', ...SAFE }, 'memberships', 'run-job', 'CHARGE')
  t.equal(safe.code, 0, `with a real club's settings it runs: ${safe.stderr}`)
  t.equal(await runsOf('membership_job_runs'), 2)
})

t.test('NODE_ENV=production club jobs run: refused the same way; commands that neither charge nor send still run', async (t) => {
  const { club, runsOf } = await workspace(t)
  t.equal((await club({}, 'migrate')).code, 0)
  for (const job of ['membership-charge', 'reminder']) {
    const refused = await club({ NODE_ENV: 'production', ...SAFE, SMTP_URL: '' }, 'jobs', 'run', job)
    t.equal(refused.code, 78, job)
    t.match(refused.stderr, /^club jobs run: refusing to run in production \(CLUB_ENV or NODE_ENV\):\n {2}SMTP_URL is empty, so mail \(password reset links included\) is written to the log/)
  }
  t.equal(await runsOf('job_runs'), 0, 'no run recorded')
  const user = await club({ NODE_ENV: 'production' }, 'users', 'create', '--email', 'desk@example.org', '--password', 'long enough pw')
  t.equal(user.code, 0, user.stderr)
})
