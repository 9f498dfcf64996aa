// `club jobs run NAME [--date]` and `club webhooks sign PATH [--body]`.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../cli.js'
import { testApp } from '../test-support/app.js'
import { SECRET } from './test-helpers.js'

function workspace(t: { teardown(fn: () => void): void }, extra: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'club-jobs-cli-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const env = { DATABASE_URL: join(dir, 'club.db'), PASSWORD_HASH_COST: '1024', LOG_LEVEL: 'silent', ...extra }
  return async (...argv: string[]) => {
    let stdout = ''
    let stderr = ''
    const code = await runCli(argv, env, (s) => (stdout += s), (s) => (stderr += s))
    return { code, stdout, stderr, json: () => JSON.parse(stdout) }
  }
}

t.test('club jobs run records a run with the cli trigger', async (t) => {
  const club = workspace(t)
  const run = await club('jobs', 'run', 'summary', '--date', '2026-03-02T00:05:00Z')
  t.equal(run.code, 0, run.stderr)
  t.match(run.json(), { job: 'summary', trigger: 'cli', delivery: null, date: '2026-03-02T00:05:00.000Z', status: 'succeeded', counts: { made: 1 } })
  const replays = await club('jobs', 'run', 'replays-cleanup')
  t.match(replays.json(), { job: 'replays-cleanup', status: 'succeeded', note: null })
  t.same(replays.json().counts, { expired: 0 }, 'no replay old enough: nothing expired')
  const unknown = await club('jobs', 'run', 'nightly')
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /NAME one of court-locking, reminder, summary/)
  const badDate = await club('jobs', 'run', 'summary', '--date', 'tomorrow')
  t.equal(badDate.code, 2)
  t.match(badDate.stderr, /--date must be an ISO 8601 date-time/)
})

t.test('club webhooks sign prints headers a receiver accepts', async (t) => {
  const club = workspace(t, { WEBHOOK_SECRET: SECRET, PUBLIC_BASE_URL: 'https://club.example.org' })
  const body = '{"date":"2026-03-01T09:00:00Z"}'
  const signed = await club('webhooks', 'sign', '/apis/v2/webhooks/replays/cleanup', '--body', body)
  t.equal(signed.code, 0, signed.stderr)
  const printed = signed.json()
  t.match(printed, {
    url: 'https://club.example.org/apis/v2/webhooks/replays/cleanup',
    headers: { 'webhook-id': /^msg_/, 'webhook-timestamp': /^\d+$/, 'webhook-signature': /^v1,[A-Za-z0-9+/]+=*$/ },
    curl: /^curl -i -X POST 'https:\/\/club\.example\.org\/apis\/v2\/webhooks\/replays\/cleanup' -H 'webhook-id: msg_/
  })
  t.notMatch(signed.stdout, SECRET.slice(6), 'the secret is not printed')
  // A server whose clock is now takes the delivery as printed.
  const ctx = await testApp(t, { WEBHOOK_SECRET: SECRET })
  ctx.clock.set(new Date(Number(printed.headers['webhook-timestamp']) * 1000))
  const res = await ctx.app.inject({ method: 'POST', url: '/apis/v2/webhooks/replays/cleanup', headers: { ...printed.headers, 'content-type': 'application/json' }, payload: body })
  t.equal(res.statusCode, 201)

  t.match((await club('webhooks', 'sign', '/apis/v2/elsewhere')).stderr, /PATH one of \/apis\/v2\/webhooks\/events\/court-locking/)
  t.match((await club('webhooks', 'sign', '/apis/v2/webhooks/users/cleanup', '--body', '{nope')).stderr, /--body must be JSON/)
  const unset = workspace(t)
  const refused = await unset('webhooks', 'sign', '/apis/v2/webhooks/users/cleanup')
  t.equal(refused.code, 2)
  t.match(refused.stderr, /WEBHOOK_SECRET is not set/)
})
