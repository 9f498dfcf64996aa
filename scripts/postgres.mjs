#!/usr/bin/env node
// A throwaway PostgreSQL for the tests: `node scripts/postgres.mjs COMMAND...` starts a cluster from
// the system's PostgreSQL binaries in a temporary folder (a Unix socket there, no TCP port, fsync
// off: nothing in it needs to survive), makes a database migrated to the latest schema to copy
// from (`club_template`), runs COMMAND with TEST_DATABASE_URL naming the cluster, then stops the
// cluster and removes the folder, whatever COMMAND did. Tests make their own database from the
// template (server/src/test-support/postgres.ts): CREATE DATABASE … TEMPLATE is a file copy,
// much faster than migrating each.
//
// initdb refuses to run as root; as root the cluster runs as the `postgres` user that Debian's
// package creates.
import { spawn, spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The newest PostgreSQL's bin folder: Debian keeps initdb and pg_ctl out of PATH, under /usr/lib/postgresql/N/bin. */
export function postgresBin() {
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a))
    if (versions.length) return join(root, versions[0], 'bin')
  }
  const found = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' })
  if (found.status === 0) return join(found.stdout.trim(), '..')
  throw new Error('PostgreSQL is not installed (initdb not found): run `node scripts/bootstrap.mjs`')
}

const isRoot = process.getuid?.() === 0

/** runuser lives in sbin, which a non-login PATH (CI's, cron's) leaves out. */
function runuser() {
  const found = ['/usr/sbin/runuser', '/sbin/runuser'].find((path) => existsSync(path))
  return found ?? 'runuser'
}

/** Runs a PostgreSQL tool, as the postgres user when we are root. */
function run(bin, args, options = {}) {
  const [command, argv] = isRoot ? [runuser(), ['-u', 'postgres', '--', bin, ...args]] : [bin, args]
  const result = spawnSync(command, argv, { encoding: 'utf8', ...options })
  if (result.error) throw new Error(`${command} could not be started: ${result.error.message}`)
  if (result.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed:\n${result.stdout}${result.stderr}`)
  return result.stdout
}

/**
 * `durable`: fsync on (the benchmark's cluster, closer to a real one); commits still do not wait for
 * the disk (synchronous_commit=off), as SQLite in WAL with synchronous=NORMAL does not.
 */
export function startPostgres({ durable = false } = {}) {
  const bin = postgresBin()
  const dir = mkdtempSync(join(tmpdir(), 'club-postgres-'))
  // The postgres user must own its folder; the socket lives beside the data.
  if (isRoot) spawnSync('chown', ['-R', 'postgres:postgres', dir])
  chmodSync(dir, 0o755)
  const data = join(dir, 'data')
  run(join(bin, 'initdb'), ['-D', data, '-U', 'club', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync'])
  const settings = [
    `-k ${dir}`,
    "-c listen_addresses=''",
    ...(durable ? [] : ['-c fsync=off', '-c full_page_writes=off']),
    '-c synchronous_commit=off',
    '-c max_connections=400',
    '-c shared_buffers=64MB'
  ].join(' ')
  run(join(bin, 'pg_ctl'), ['-D', data, '-o', settings, '-l', join(dir, 'log'), '-w', 'start'])
  const url = `postgres://club@localhost/postgres?host=${encodeURIComponent(dir)}`
  return {
    url,
    dir,
    stop() {
      try {
        run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop'])
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }
  }
}

/** The same URL on another database of the cluster. */
export function databaseUrl(url, name) {
  const u = new URL(url)
  u.pathname = `/${name}`
  return u.toString()
}

/**
 * A started cluster with `club_template` migrated to the latest schema (server/dist must be built):
 * answers the environment the tests read (TEST_DATABASE_URL, TEST_DATABASE_TEMPLATE) and `stop`.
 */
export function preparePostgres() {
  const cluster = startPostgres()
  try {
    const psql = (sql) => spawnSync('psql', [cluster.url, '-v', 'ON_ERROR_STOP=1', '-q', '-c', sql], { encoding: 'utf8' })
    const made = psql('create database club_template')
    if (made.status !== 0) throw new Error(made.stderr)
    const cli = fileURLToPath(new URL('../server/dist/cli.js', import.meta.url))
    const migrate = spawnSync(process.execPath, [cli, 'db', 'migrate'], {
      encoding: 'utf8',
      env: { ...process.env, DATABASE_URL: databaseUrl(cluster.url, 'club_template'), LOG_LEVEL: 'warn' }
    })
    if (migrate.status !== 0) throw new Error(`migrating club_template failed:\n${migrate.stdout}${migrate.stderr}`)
  } catch (err) {
    cluster.stop()
    throw err
  }
  return { env: { TEST_DATABASE_URL: cluster.url, TEST_DATABASE_TEMPLATE: 'club_template' }, stop: () => cluster.stop() }
}

async function main() {
  const command = process.argv.slice(2)
  if (command.length === 0) {
    console.error('usage: node scripts/postgres.mjs COMMAND [ARGS...]')
    process.exit(2)
  }
  let postgres
  let code = 1
  try {
    postgres = preparePostgres()
    const child = spawn(command[0], command.slice(1), { stdio: 'inherit', env: { ...process.env, ...postgres.env } })
    for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal))
    code = await new Promise((resolve) => child.on('exit', (status, signal) => resolve(status ?? (signal ? 1 : 0))))
  } catch (err) {
    console.error(err instanceof Error ? err.message : err)
  } finally {
    postgres?.stop()
  }
  process.exit(code)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main()
