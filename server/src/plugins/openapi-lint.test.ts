// Redocly's recommended lint on the document this server serves, as an integrator would run it before
// generating a client. Clean but for the findings .redocly.lint-ignore.yaml keeps, each with its reason.
import { execFile } from 'node:child_process'
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { testApp } from '../test-support/app.js'

const serverDir = fileURLToPath(new URL('../../', import.meta.url))
const redocly = join(dirname(createRequire(import.meta.url).resolve('@redocly/cli/package.json')), 'bin', 'cli.js')

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number }
  problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }>
}

t.test('the served OpenAPI document passes Redocly recommended lint', async (t) => {
  // Set as a deployment sets them: the licence URL and contact come from the operator (the lint's
  // info-license-strict wants the URL), and so does the public address (.test: the lint rejects
  // example.com and localhost as a server).
  const ctx = await testApp(t, {
    PUBLIC_BASE_URL: 'https://api.club.test',
    API_LICENSE_URL: 'https://club.test/api-terms',
    API_CONTACT_EMAIL: 'api@club.test'
  })
  const res = await ctx.app.inject({ url: '/documentation/json' })
  t.equal(res.statusCode, 200)

  const dir = mkdtempSync(join(tmpdir(), 'club-lint-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'openapi.json'), res.body)
  copyFileSync(join(serverDir, 'redocly.yaml'), join(dir, 'redocly.yaml'))
  copyFileSync(join(serverDir, '.redocly.lint-ignore.yaml'), join(dir, '.redocly.lint-ignore.yaml'))

  // Nothing may leave this machine: no telemetry, no update check. The timeout keeps a CLI that
  // waits on the network from hanging the suite.
  const { stdout } = await promisify(execFile)(process.execPath, [redocly, 'lint', 'openapi.json', '--config', 'redocly.yaml', '--format', 'json'], {
    cwd: dir,
    timeout: 60_000,
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' }
  }).catch((err: { stdout?: string; message: string }) => {
    // The CLI exits non-zero on errors; its JSON report is still on stdout.
    if (err.stdout) return { stdout: err.stdout }
    throw err
  })
  const report = JSON.parse(stdout) as LintReport
  const findings = report.problems
    .filter((p) => p.severity !== 'off')
    .map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`)
  t.same(findings, [], 'no errors or warnings')
  t.same(report.totals, { errors: 0, warnings: 0, ignored: 4 }, 'only the ambiguous paths the reference forces and the health probes without a 4xx are ignored')
})
