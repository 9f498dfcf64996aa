#!/usr/bin/env node
// Installs what the tests need from the system, and nothing that is already there ("scripts to
// rule them all"). Run by `pnpm test` before anything else; safe to run by hand at any time.
//
// On Debian or Ubuntu it installs what is missing with apt-get (as root, or with sudo); elsewhere,
// or without the rights, it stops at once with one line per missing tool and the exact command to
// install it. Deciding is pure (planBootstrap); this file's shell only looks and runs.
import { spawnSync } from 'node:child_process'
import { accessSync, constants, readdirSync, readFileSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Every tool a test needs, with the package that brings it on each platform. Add a row when a
 * test starts needing another (Chromium, PostgreSQL, Redis).
 */
export const REQUIRED_TOOLS = [
  { tool: 'ffmpeg', why: "the agent's recording and clip tests", packages: { apt: 'ffmpeg', dnf: 'ffmpeg', brew: 'ffmpeg' } },
  { tool: 'ffprobe', why: "the agent's recording and clip tests", packages: { apt: 'ffmpeg', dnf: 'ffmpeg', brew: 'ffmpeg' } },
  { tool: 'dpkg-deb', why: "the agent's package (pnpm package:agent), its tests and `club agent-releases add`", packages: { apt: 'dpkg', dnf: 'dpkg', brew: 'dpkg' } },
  { tool: 'lintian', why: "the agent package's test (Debian's package checker)", packages: { apt: 'lintian', dnf: 'lintian', brew: 'lintian' } },
  // Browser tests drive the distribution's Chromium through playwright-core: a browser downloaded by
  // a test tool is not what a venue's phone or an admin's laptop runs, and it cannot be fetched offline.
  { tool: 'chromium', why: 'the browser tests of the web pages', packages: { apt: 'chromium', dnf: 'chromium', brew: '--cask chromium' } },
  // The tests of REDIS_URL start a throwaway redis-server of their own, as they do ffmpeg.
  { tool: 'redis-server', why: 'the tests of the rate limits counted in Redis (REDIS_URL)', packages: { apt: 'redis-server', dnf: 'redis', brew: 'redis' } },
  // The server's and end-to-end suites run a second time on a throwaway PostgreSQL (scripts/postgres.mjs).
  // Debian keeps initdb off PATH, in /usr/lib/postgresql/N/bin.
  {
    tool: 'initdb',
    why: 'the suites run on PostgreSQL (scripts/postgres.mjs)',
    packages: { apt: 'postgresql', dnf: 'postgresql-server', brew: 'postgresql@15' },
    dirs: ['/usr/lib/postgresql']
  },
  { tool: 'psql', why: 'the suites run on PostgreSQL (scripts/postgres.mjs)', packages: { apt: 'postgresql-client', dnf: 'postgresql', brew: 'postgresql@15' } }
]

/** The command that runs this script, for messages. */
export const BOOTSTRAP_COMMAND = 'node scripts/bootstrap.mjs'

/**
 * What to do, from what is known about the machine:
 * - `missing`: names of REQUIRED_TOOLS not found on PATH
 * - `os`: ID and ID_LIKE of /etc/os-release (lower case), or the platform ('darwin', 'win32')
 * - `hasAptGet`, `isRoot`, `canSudo`: whether apt-get exists, we are root, sudo may be used
 * Answers `{ action: 'none' }`, `{ action: 'install', commands: string[][] }` (argv lists to run in
 * order), or `{ action: 'stop', lines: string[] }` (what to tell the user, one line per tool).
 */
export function planBootstrap({ missing, os, hasAptGet, isRoot, canSudo, tools = REQUIRED_TOOLS }) {
  const needed = tools.filter((t) => missing.includes(t.tool))
  if (needed.length === 0) return { action: 'none' }
  const debianLike = os.some((id) => id === 'debian' || id === 'ubuntu')
  if (debianLike && hasAptGet && (isRoot || canSudo)) {
    const prefix = isRoot ? [] : ['sudo']
    const packages = [...new Set(needed.map((t) => t.packages.apt))]
    return {
      action: 'install',
      packages,
      commands: [
        [...prefix, 'apt-get', 'update'],
        [...prefix, 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', '--no-install-recommends', ...packages]
      ]
    }
  }
  return { action: 'stop', lines: needed.map((t) => `${t.tool} is missing (needed by ${t.why}): ${installHint(t, os)}`) }
}

function installHint(tool, os) {
  const apt = `sudo apt-get install ${tool.packages.apt}`
  const dnf = `sudo dnf install ${tool.packages.dnf}`
  const brew = `brew install ${tool.packages.brew}`
  if (os.some((id) => id === 'debian' || id === 'ubuntu')) return `install it with \`${apt}\`, then run \`${BOOTSTRAP_COMMAND}\` again`
  if (os.some((id) => ['fedora', 'rhel', 'centos', 'rocky', 'almalinux'].includes(id))) return `install it with \`${dnf}\``
  if (os.includes('darwin')) return `install it with \`${brew}\``
  return `install it with your package manager (\`${apt}\`, \`${dnf}\` or \`${brew}\`)`
}

/** Whether an executable of this name is on PATH (no process started: this runs before every test run). */
export function onPath(name, path = process.env.PATH ?? '') {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue
    try {
      accessSync(join(dir, name), constants.X_OK)
      return true
    } catch {
      // not in this folder
    }
  }
  return false
}

function osIds() {
  if (process.platform !== 'linux') return [process.platform]
  try {
    const release = readFileSync('/etc/os-release', 'utf8')
    const field = (name) => new RegExp(`^${name}="?([^"\\n]*)"?$`, 'm').exec(release)?.[1] ?? ''
    return `${field('ID')} ${field('ID_LIKE')}`.toLowerCase().split(/\s+/).filter(Boolean)
  } catch {
    return ['linux']
  }
}

function canUseSudo() {
  if (!onPath('sudo')) return false
  // Without a terminal to ask for a password, sudo is usable only if it needs none.
  if (process.stdin.isTTY) return true
  return spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0
}

/** On PATH, or in a versioned bin folder under one of the row's `dirs` (/usr/lib/postgresql/15/bin). */
export function installed(name, path = process.env.PATH ?? '') {
  if (onPath(name, path)) return true
  const row = REQUIRED_TOOLS.find((t) => t.tool === name)
  return (row?.dirs ?? []).some((dir) => {
    try {
      return readdirSync(dir).some((version) => onPath(name, join(dir, version, 'bin')))
    } catch {
      return false
    }
  })
}

function main() {
  const missing = REQUIRED_TOOLS.map((t) => t.tool).filter((name) => !installed(name))
  if (missing.length === 0) return 0
  const plan = planBootstrap({
    missing,
    os: osIds(),
    hasAptGet: onPath('apt-get'),
    isRoot: process.getuid?.() === 0,
    canSudo: canUseSudo()
  })
  if (plan.action === 'stop') {
    for (const line of plan.lines) process.stderr.write(`bootstrap: ${line}\n`)
    return 1
  }
  process.stderr.write(`bootstrap: installing ${plan.packages.join(', ')} for ${missing.join(', ')} (apt-get)\n`)
  for (const [command, ...args] of plan.commands) {
    const run = spawnSync(command, args, { stdio: ['ignore', 'ignore', 'inherit'] })
    if (run.status !== 0) {
      process.stderr.write(`bootstrap: \`${[command, ...args].join(' ')}\` failed (exit ${run.status ?? run.signal}); install ${plan.packages.join(', ')} by hand\n`)
      return 1
    }
  }
  const still = missing.filter((name) => !installed(name))
  if (still.length > 0) {
    process.stderr.write(`bootstrap: ${still.join(', ')} still missing after installing ${plan.packages.join(', ')}\n`)
    return 1
  }
  return 0
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = main()
