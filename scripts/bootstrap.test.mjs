// The bootstrap's decisions for given machines, and the pnpmfile's, without installing anything.
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { BOOTSTRAP_COMMAND, installed, onPath, planBootstrap, REQUIRED_TOOLS } from './bootstrap.mjs'

const { nodedirEnv } = createRequire(import.meta.url)('../.pnpmfile.cjs')
const debian = { os: ['debian'], hasAptGet: true }

t.test('nothing missing: nothing to do, whatever the machine', async (t) => {
  t.same(planBootstrap({ missing: [], ...debian, isRoot: false, canSudo: false }), { action: 'none' })
  t.same(planBootstrap({ missing: [], os: ['darwin'], hasAptGet: false, isRoot: false, canSudo: false }), { action: 'none' })
})

t.test('Debian as root: one apt-get install of each package once, after an update', async (t) => {
  t.same(planBootstrap({ missing: ['ffmpeg', 'ffprobe'], ...debian, isRoot: true, canSudo: false }), {
    action: 'install',
    packages: ['ffmpeg'],
    commands: [
      ['apt-get', 'update'],
      ['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', '--no-install-recommends', 'ffmpeg']
    ]
  })
})

t.test('Ubuntu (ID_LIKE debian) as a user with sudo: the same through sudo', async (t) => {
  const plan = planBootstrap({ missing: ['ffprobe'], os: ['ubuntu', 'debian'], hasAptGet: true, isRoot: false, canSudo: true })
  t.same(plan.commands, [
    ['sudo', 'apt-get', 'update'],
    ['sudo', 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', '--no-install-recommends', 'ffmpeg']
  ])
})

t.test('Debian without the rights: stop with the apt command, one line per missing tool', async (t) => {
  t.same(planBootstrap({ missing: ['ffmpeg', 'ffprobe'], ...debian, isRoot: false, canSudo: false }), {
    action: 'stop',
    lines: [
      `ffmpeg is missing (needed by the agent's recording and clip tests): install it with \`sudo apt-get install ffmpeg\`, then run \`${BOOTSTRAP_COMMAND}\` again`,
      `ffprobe is missing (needed by the agent's recording and clip tests): install it with \`sudo apt-get install ffmpeg\`, then run \`${BOOTSTRAP_COMMAND}\` again`
    ]
  })
})

t.test('elsewhere: stop with the command of that platform', async (t) => {
  const fedora = planBootstrap({ missing: ['ffmpeg'], os: ['fedora'], hasAptGet: false, isRoot: true, canSudo: false })
  t.match(fedora, { action: 'stop', lines: [/^ffmpeg is missing .*`sudo dnf install ffmpeg`$/] })
  const mac = planBootstrap({ missing: ['ffmpeg'], os: ['darwin'], hasAptGet: false, isRoot: false, canSudo: true })
  t.match(mac, { action: 'stop', lines: [/`brew install ffmpeg`$/] })
  const other = planBootstrap({ missing: ['ffmpeg'], os: ['arch'], hasAptGet: false, isRoot: true, canSudo: true })
  t.match(other, { action: 'stop', lines: [/`sudo apt-get install ffmpeg`, `sudo dnf install ffmpeg` or `brew install ffmpeg`/] })
  const debianNoApt = planBootstrap({ missing: ['ffmpeg'], os: ['debian'], hasAptGet: false, isRoot: true, canSudo: false })
  t.equal(debianNoApt.action, 'stop', 'a Debian-like system without apt-get is told, not tried')
})

t.test('a tool to come (its own packages per platform) is planned the same way', async (t) => {
  const tools = [{ tool: 'redis-server', why: 'the Redis tests', packages: { apt: 'redis-server', dnf: 'redis', brew: 'redis' } }]
  t.same(planBootstrap({ missing: ['redis-server'], ...debian, isRoot: true, canSudo: false, tools }).packages, ['redis-server'])
})

t.test('onPath looks for an executable file on PATH without starting anything', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'bootstrap-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'tool'), '#!/bin/sh\n')
  writeFileSync(join(dir, 'notexec'), 'x')
  chmodSync(join(dir, 'tool'), 0o755)
  chmodSync(join(dir, 'notexec'), 0o644)
  t.ok(onPath('tool', `/nonexistent:${dir}`))
  t.notOk(onPath('missing-tool', dir))
  t.notOk(onPath('notexec', dir), 'a file without an execute bit is not a tool (for root too)')
})

t.test('the script run with a PATH lacking the tools, on a machine where it may not install, stops at once', async (t) => {
  // A PATH with node but neither ffmpeg, apt-get nor sudo: the "elsewhere or without rights" branch.
  const dir = mkdtempSync(join(tmpdir(), 'bootstrap-path-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const run = spawnSync(process.execPath, [fileURLToPath(new URL('./bootstrap.mjs', import.meta.url))], {
    env: { PATH: dir },
    encoding: 'utf8'
  })
  t.equal(run.status, 1)
  t.equal(run.stdout, '')
  const lines = run.stderr.trim().split('\n')
  t.same(
    lines.map((line) => /^bootstrap: (\S+) is missing/.exec(line)?.[1]),
    // A tool found outside PATH (initdb under /usr/lib/postgresql) is not missing.
    REQUIRED_TOOLS.map((r) => r.tool).filter((tool) => !installed(tool, dir)),
    'one line per missing tool, each naming it'
  )
})

t.test('the pnpmfile gives build scripts nodedir=/usr only for matching headers and no choice of the user', async (t) => {
  const headers = (major) => (dir) => (dir === '/usr' ? major : undefined)
  t.same(nodedirEnv({ env: {}, nodeVersion: '20.20.2', headersMajorAt: headers(20) }), { npm_config_nodedir: '/usr' })
  t.same(nodedirEnv({ env: {}, nodeVersion: '22.1.0', headersMajorAt: headers(20) }), {}, 'headers of another major are not used')
  t.same(nodedirEnv({ env: {}, nodeVersion: '20.20.2', headersMajorAt: headers(undefined) }), {}, 'no headers: as before (download)')
  t.same(nodedirEnv({ env: { npm_config_nodedir: '/opt/node' }, nodeVersion: '20.20.2', headersMajorAt: headers(20) }), {}, "the user's own choice stands")
  t.same(nodedirEnv({ env: { NPM_CONFIG_NODEDIR: '/opt/node' }, nodeVersion: '20.20.2', headersMajorAt: headers(20) }), {})
})
