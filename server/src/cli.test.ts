import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { runCli } from './cli.js'

function workspace(t: { teardown(fn: () => void): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'club-cli-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const env = { DATABASE_URL: join(dir, 'club.db'), PASSWORD_HASH_COST: '1024' }
  const run = async (...argv: string[]) => {
    let stdout = ''
    let stderr = ''
    const code = await runCli(argv, env, (s) => (stdout += s), (s) => (stderr += s))
    return { code, stdout, stderr, json: () => JSON.parse(stdout) }
  }
  return { dir, env, run }
}

t.test('each command prints JSON', async (t) => {
  const { run } = workspace(t)

  const migrated = await run('migrate')
  t.equal(migrated.code, 0)
  t.ok(migrated.json().applied.includes('0001_foundation'))

  const user = await run('users', 'create', '--email', 'Coach@Example.org', '--password', 'long enough pw', '--role', 'staff', '--first-name', 'Ada', '--last-name', 'Lovelace')
  t.equal(user.code, 0, user.stderr)
  t.match(user.json(), { email: 'coach@example.org', role: 'staff', firstName: 'Ada', lastName: 'Lovelace', id: String })
  t.notMatch(user.stdout, /long enough pw|scrypt/)

  const client = await run('clients', 'create', '--name', 'Mobile', '--redirect-uri', 'https://app.example.org/cb', '--grant', 'authorization_code', '--grant', 'refresh_token')
  t.equal(client.code, 0, client.stderr)
  t.match(client.json(), { clientId: String, clientSecret: String })

  const key = await run('api-keys', 'create', '--email', 'coach@example.org')
  t.equal(key.code, 0, key.stderr)
  t.match(key.json(), { apiKey: /^club_/, id: String })

  const revoked = await run('api-keys', 'revoke', '--id', key.json().id)
  t.same(revoked.json(), { id: key.json().id, revoked: true })

  const card = await run('payment-methods', 'set', '--email', 'coach@example.org', '--brand', 'visa', '--last4', '4242', '--exp-month', '12', '--exp-year', '2030')
  t.equal(card.code, 0, card.stderr)
  t.match(card.json(), { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030 })
})

t.test('failures are one line on stderr and a non-zero exit', async (t) => {
  const { run } = workspace(t)
  await run('users', 'create', '--email', 'a@example.org', '--password', 'long enough pw')

  const duplicate = await run('users', 'create', '--email', 'A@example.org', '--password', 'another password')
  t.not(duplicate.code, 0)
  t.equal(duplicate.stdout, '')
  t.equal(duplicate.stderr, 'club users create: a user with email a@example.org already exists')

  const missing = await run('users', 'create', '--email', 'b@example.org')
  t.not(missing.code, 0)
  t.equal(missing.stderr, 'club users create: missing required flag --password')

  const unknownFlag = await run('users', 'create', '--email', 'b@example.org', '--password', 'xxxxxxxxxx', '--colour', 'red')
  t.not(unknownFlag.code, 0)
  t.match(unknownFlag.stderr, /colour/)
  t.notMatch(unknownFlag.stderr, /\n./)

  const badRole = await run('users', 'create', '--email', 'c@example.org', '--password', 'xxxxxxxxxy', '--role', 'king')
  t.match(badRole.stderr, /--role must be admin, staff or member/)

  const weak = await run('users', 'create', '--email', 'd@example.org', '--password', 'short')
  t.match(weak.stderr, /at least 8 characters/)

  const noUser = await run('api-keys', 'create', '--email', 'ghost@example.org')
  t.equal(noUser.stderr, 'club api-keys create: no user with email ghost@example.org')

  const badMonth = await run('payment-methods', 'set', '--email', 'a@example.org', '--brand', 'visa', '--last4', '42', '--exp-month', '12', '--exp-year', '2030')
  t.match(badMonth.stderr, /last4 must be exactly 4 digits/)

  const unknown = await run('frobnicate')
  t.not(unknown.code, 0)
  t.match(unknown.stderr, /unknown command/)
  // The names every object inherits are no commands: `club constructor` ran Object() on the context
  // and printed the whole configuration, secrets included.
  for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    const inherited = await run(name)
    t.equal(inherited.code, 2, `club ${name}`)
    t.equal(inherited.stdout, '')
    t.match(inherited.stderr, `unknown command "${name}"`)
  }
})

t.test('a bad DATABASE_URL-independent setting stops the CLI with the variable named', async (t) => {
  let stderr = ''
  const code = await runCli(['migrate'], { PASSWORD_HASH_COST: 'lots' }, () => {}, (s) => (stderr += s))
  t.not(code, 0)
  t.match(stderr, /PASSWORD_HASH_COST="lots" is not valid/)
})

t.test('the built bin runs as a process', async (t) => {
  const { env } = workspace(t)
  const bin = fileURLToPath(new URL('../dist/cli.js', import.meta.url))
  const run = promisify(execFile)
  const { stdout } = await run(process.execPath, [bin, 'users', 'create', '--email', 'bin@example.org', '--password', 'long enough pw'], {
    env: { ...process.env, ...env }
  })
  t.equal(JSON.parse(stdout).email, 'bin@example.org')
  const failed = await run(process.execPath, [bin, 'users', 'create', '--email', 'bin@example.org'], { env: { ...process.env, ...env } }).catch((e) => e)
  t.equal(failed.code, 2)
  t.equal(failed.stderr, 'club users create: missing required flag --password\n')
})

t.test('club --help lists every command with its flags, and club COMMAND --help the one', async (t) => {
  const { run, dir } = workspace(t)
  const { commands, standaloneCommands } = await import('./cli.js')
  const help = await run('--help')
  t.equal(help.code, 0)
  for (const name of [...Object.keys(commands), ...Object.keys(standaloneCommands)]) t.match(help.stdout, `\n  ${name}`, name)
  t.match(help.stdout, /users create --email <value> --password <value> \[--role <value>\]/)
  t.match(help.stdout, /db backup FILE/)
  t.match(help.stdout, /devices approve ID --area <value>/)

  const one = await run('events', 'create', '--help')
  t.equal(one.code, 0)
  t.match(one.stdout, /^usage: club events create --name <value> --type <value>/)
  t.match(one.stdout, /\[--tag <value> \.\.\.\]/)
  t.notOk(existsSync(join(dir, 'club.db')), 'asking for help opens no database')
})
