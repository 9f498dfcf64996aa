// The package built in this run: its contents and lintian's verdict.
import t from 'tap'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

t.setTimeout(600_000)

t.test('pnpm package:agent builds a package lintian accepts', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'club-agent-deb-'))
  t.teardown(() => rmSync(out, { recursive: true, force: true }))
  const build = (await import(new URL('../../packaging/build.mjs', import.meta.url).href)) as {
    deployAgent: () => string
    buildPackage: (o: { from: string; version: string; outDir: string }) => string
  }
  const deployed = build.deployAgent()
  t.teardown(() => rmSync(deployed, { recursive: true, force: true }))
  const deb = build.buildPackage({ from: deployed, version: '1.1.0', outDir: out })
  t.match(deb, /club-agent_1\.1\.0_all\.deb$/)
  const files = execFileSync('dpkg-deb', ['-c', deb], { encoding: 'utf8', maxBuffer: 64 << 20 }).split('\n').map((l) => l.split(/\s+/).slice(5).join(' '))
  for (const path of ['./lib/systemd/system/club-agent.service', './lib/systemd/system/club-agent-update@.service', './etc/club-agent/agent.json', './usr/bin/club-agent', './usr/lib/club-agent/dist/main.js']) {
    t.ok(files.some((f) => f.startsWith(path)), `${path} is in it`)
  }
  t.equal(execFileSync('dpkg-deb', ['-I', deb, 'conffiles'], { encoding: 'utf8' }), '/etc/club-agent/agent.json\n', 'the configuration is a conffile')
  t.same(files.filter((f) => /\.test\.js$|\.ts$|\/src\/.*\.ts/.test(f)), [], 'no tests, no sources')
  t.same(files.filter((f) => /node_modules\/(tap|typescript|@types)\//.test(f)), [], 'no dev dependencies')
  t.match(execFileSync('dpkg-deb', ['-f', deb, 'Depends'], { encoding: 'utf8' }), /nodejs \(>= 20\), ffmpeg/)
  const lint = spawnSync('lintian', ['--no-tag-display-limit', deb], { encoding: 'utf8', maxBuffer: 64 << 20 })
  const errors = lint.stdout.split('\n').filter((l) => l.startsWith('E:'))
  t.same(errors, [], 'lintian reports no error')
})
