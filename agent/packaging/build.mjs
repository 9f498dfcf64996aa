#!/usr/bin/env node
// `pnpm package:agent [--version 1.1.0] [--out DIR] [--from DIR]`: builds club-agent_<version>_all.deb
// with dpkg-deb. The agent is deployed with its production dependencies only (pnpm deploy --prod),
// then laid out under /usr/lib/club-agent without tests, sources, maps or typings. --from takes an
// already deployed agent folder (tests package one deploy several times); --version overrides
// agent/package.json's.
import { execFileSync } from 'node:child_process'
import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { gzipSync } from 'node:zlib'
import * as debian from './debian.mjs'

const agentDir = join(dirname(fileURLToPath(import.meta.url)), '..')

/** Deploys the built agent with production dependencies only into a new folder; answers it. */
export function deployAgent(into = mkdtempSync(join(tmpdir(), 'club-agent-deploy-'))) {
  rmSync(into, { recursive: true, force: true })
  execFileSync('pnpm', ['--filter', '@club/agent', 'deploy', '--prod', '--legacy', into], { cwd: agentDir, stdio: ['ignore', 'ignore', 'pipe'] })
  return into
}

function walk(dir, visit, base = dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    const rel = relative(base, path)
    if (entry.isDirectory() && !entry.isSymbolicLink()) walk(path, visit, base)
    else visit(path, rel)
  }
}

/** Builds the package from a deployed agent folder; answers the .deb's path. */
export function buildPackage({ from, version, outDir, date = new Date() }) {
  const pkg = JSON.parse(readFileSync(join(from, 'package.json'), 'utf8'))
  version ??= pkg.version
  const architecture = 'all'
  const root = mkdtempSync(join(tmpdir(), 'club-agent-root-'))
  try {
    const lib = join(root, debian.LIB_DIR)
    mkdirSync(lib, { recursive: true })
    // The version the agent reports is its package.json's: written as the package's.
    writeFileSync(join(lib, 'package.json'), `${JSON.stringify({ ...pkg, version, devDependencies: undefined, scripts: undefined }, null, 2)}\n`)
    cpSync(join(from, 'dist'), join(lib, 'dist'), { recursive: true, verbatimSymlinks: true, filter: (src) => keep(from, src) })
    cpSync(join(from, 'node_modules'), join(lib, 'node_modules'), { recursive: true, verbatimSymlinks: true, filter: (src) => keep(from, src) })
    const files = {
      'usr/bin/club-agent': [debian.wrapper(), 0o755],
      'lib/systemd/system/club-agent.service': [debian.agentUnit(), 0o644],
      [`lib/systemd/system/${debian.UPDATE_UNIT}`]: [debian.updateUnit(), 0o644],
      'usr/share/polkit-1/rules.d/50-club-agent.rules': [debian.polkitRule(), 0o644],
      'etc/club-agent/agent.json': [debian.defaultConfig(), 0o644],
      'usr/share/doc/club-agent/copyright': [debian.copyright(), 0o644],
      'usr/share/doc/club-agent/README.md': [readFileSync(join(agentDir, 'README.md'), 'utf8'), 0o644]
    }
    for (const [path, [text, mode]] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), text)
      chmodSync(join(root, path), mode)
    }
    const changelog = gzipSync(debian.changelog({ version, date: date.toUTCString().replace('GMT', '+0000') }), { level: 9 })
    // gzip -n: no name or time in the header, so the same input gives the same bytes.
    changelog[4] = changelog[5] = changelog[6] = changelog[7] = 0
    writeFileSync(join(root, 'usr/share/doc/club-agent/changelog.gz'), changelog)
    normalisePermissions(root)
    // Run through the wrapper, but it starts with a shebang: lintian wants such a file executable.
    chmodSync(join(lib, 'dist', 'main.js'), 0o755)

    const control = join(root, 'DEBIAN')
    mkdirSync(control)
    const md5sums = []
    let bytes = 0
    walk(root, (path, rel) => {
      if (rel.startsWith('DEBIAN/')) return
      const stat = lstatSync(path)
      bytes += stat.size
      if (stat.isFile() && !rel.startsWith('etc/')) md5sums.push(`${createHash('md5').update(readFileSync(path)).digest('hex')}  ${rel}`)
    })
    const scripts = { postinst: debian.postinst(), prerm: debian.prerm(), postrm: debian.postrm() }
    writeFileSync(join(control, 'control'), debian.controlFile({ version, architecture, installedSizeKb: Math.ceil(bytes / 1024) }))
    writeFileSync(join(control, 'conffiles'), debian.conffiles())
    writeFileSync(join(control, 'md5sums'), `${md5sums.sort().join('\n')}\n`)
    for (const [name, text] of Object.entries(scripts)) {
      writeFileSync(join(control, name), text)
      chmodSync(join(control, name), 0o755)
    }
    for (const name of ['control', 'conffiles', 'md5sums']) chmodSync(join(control, name), 0o644)
    chmodSync(control, 0o755)

    mkdirSync(outDir, { recursive: true })
    const deb = join(outDir, `${debian.PACKAGE}_${version}_${architecture}.deb`)
    // gzip at level 6: several times faster than xz here for a package a few MB larger.
    execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z6', '--build', root, deb], { stdio: ['ignore', 'ignore', 'pipe'] })
    return deb
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

function keep(from, src) {
  const rel = relative(from, src)
  return rel === 'dist' || rel === 'node_modules' || debian.shipped(rel)
}

/** Folders 0755, files 0644 unless executable (0755): what lintian and dpkg expect, whatever the umask. */
function normalisePermissions(root) {
  const fix = (dir) => {
    chmodSync(dir, 0o755)
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isSymbolicLink()) continue
      if (entry.isDirectory()) fix(path)
      else chmodSync(path, lstatSync(path).mode & 0o111 ? 0o755 : 0o644)
    }
  }
  fix(root)
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({ options: { version: { type: 'string' }, out: { type: 'string' }, from: { type: 'string' } } })
  const from = values.from ?? deployAgent()
  if (!existsSync(join(from, 'dist', 'main.js'))) {
    console.error(`package:agent: ${from} holds no built agent (run pnpm build first)`)
    process.exit(1)
  }
  const deb = buildPackage({ from, version: values.version, outDir: values.out ?? join(agentDir, '..', 'dist') })
  if (!values.from) rmSync(from, { recursive: true, force: true })
  console.log(deb)
}
