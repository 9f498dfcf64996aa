// `club-agent setup` through its dependencies: the configuration it writes (the installer's other
// settings kept), the release key it fetches and writes, what it prints, and its refusals in words,
// which leave the configuration as it was.
import { execFileSync } from 'node:child_process'
import { createHash, generateKeyPairSync } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { AgentConfig } from './config.js'
import { loadOrCreateBoxKey } from './control/box-key.js'
import { setup, type SetupDeps } from './setup.js'
import { publicKeysOf } from './update/decide.js'

const releaseKey = generateKeyPairSync('ed25519')
const PUBLIC_KEY = releaseKey.publicKey.export({ type: 'spki', format: 'pem' }).toString()
/** The fingerprint as agent/README.md tells the installer to compute it. */
const FINGERPRINT = execFileSync('sh', ['-c', 'openssl pkey -pubin -outform DER | sha256sum'], { input: PUBLIC_KEY, encoding: 'utf8' }).split(' ')[0]!

function box(t: { teardown(fn: () => void): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'club-setup-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'etc'))
  const configPath = join(dir, 'etc', 'agent.json')
  const keyPath = join(dir, 'etc', 'release-key.pem')
  const out: string[] = []
  const asked: string[] = []
  const checked: AgentConfig[] = []
  const deps: SetupDeps = {
    fetch: async (input) => {
      asked.push(String(input))
      return new Response(JSON.stringify({ publicKey: PUBLIC_KEY, fingerprint: FINGERPRINT }), { status: 200, headers: { 'content-type': 'application/json' } })
    },
    checkFfmpeg: async (config) => void checked.push(config),
    startService: async () => void out.push('(service started)'),
    identity: async (config) => ({ deviceId: config.deviceId ?? 'hw-1234', hostname: 'court-1-box' }),
    // The configured state folder is the system's; the box's key goes to the test's folder.
    boxKey: () => loadOrCreateBoxKey(join(dir, 'state')),
    out: (line) => void out.push(line)
  }
  return { dir, configPath, keyPath, out, asked, checked, deps }
}

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>

t.test('writes the server and name into the configuration, keeping the other settings, and the release key', async (t) => {
  const { dir, configPath, keyPath, out, asked, checked, deps } = box(t)
  writeFileSync(configPath, JSON.stringify({ serverUrl: 'https://old.example.org', httpPort: 9000, releaseKeyPath: keyPath, ffmpegPath: '/opt/ffmpeg/bin/ffmpeg' }))
  await setup({ configPath, server: 'https://api.example.org', name: 'Court 1 box' }, deps)

  const identity = await setup({ configPath, server: 'https://club.example.org/' }, deps)
  t.same(readJson(configPath), {
    serverUrl: 'https://club.example.org',
    displayName: 'Court 1 box',
    httpPort: 9000,
    releaseKeyPath: keyPath,
    ffmpegPath: '/opt/ffmpeg/bin/ffmpeg'
  })
  t.equal(checked[1]!.ffmpegPath, '/opt/ffmpeg/bin/ffmpeg', 'ffmpeg is checked as configured')
  t.equal(asked[1], 'https://club.example.org/apis/v2/agent-releases/key')
  t.equal(readFileSync(keyPath, 'utf8'), PUBLIC_KEY, 'the release key where the configuration says')
  t.same(identity, { deviceId: 'hw-1234', hostname: 'court-1-box' })
  const boxKey = loadOrCreateBoxKey(join(dir, 'state'))
  t.same(out.slice(-7), [
    `release key: ${keyPath}, SHA-256 fingerprint ${FINGERPRINT}`,
    'Compare the fingerprint with the one the admin got from club agent-releases keygen',
    '(service started)',
    'deviceId: hw-1234',
    'hostname: court-1-box',
    `box key: ${boxKey.fingerprint} (the console shows it for this box: compare before approving it or accepting a claim)`,
    'Ask the admin to approve this box: club devices list --status PENDING, then club devices approve ID --area AREA_ID'
  ])
  t.same(readdirSync(join(dir, 'etc')).sort(), ['agent.json', 'release-key.pem'], 'no file left beside them')
})

t.test('refusals say why in words and leave the configuration as it was', async (t) => {
  const { configPath, keyPath, deps } = box(t)
  writeFileSync(configPath, JSON.stringify({ serverUrl: 'https://old.example.org', releaseKeyPath: keyPath }))
  const before = readFileSync(configPath, 'utf8')
  const refused = async (deps: SetupDeps, pattern: RegExp, server = 'https://club.example.org') => {
    await t.rejects(setup({ configPath, server }, deps), { name: 'SetupError', message: pattern })
    t.equal(readFileSync(configPath, 'utf8'), before)
  }
  await refused({ ...deps, fetch: async () => Promise.reject(new TypeError('fetch failed')) }, /^the server at https:\/\/club\.example\.org does not answer: cannot reach the server: fetch failed$/)
  await refused({ ...deps, fetch: async () => new Response('<html>', { status: 502 }) }, /answered 502: is it the club platform\?/)
  await refused({ ...deps, checkFfmpeg: async () => 'ffmpeg is not installed or not runnable (spawn ffmpeg ENOENT): apt-get install ffmpeg' }, /ffmpeg is not installed .*apt-get install ffmpeg/)
  await refused(deps, /--server ftp:\/\/x is not an http\(s\) URL/, 'ftp://x')
  writeFileSync(configPath, JSON.stringify({ serverUrl: 'https://old.example.org', releaseKeyPath: keyPath, httpPort: 'eighty' }))
  const invalid = readFileSync(configPath, 'utf8')
  await t.rejects(setup({ configPath, server: 'https://club.example.org' }, deps), { name: 'SetupError', message: `${configPath} would not be a valid configuration: httpPort="eighty" is not valid: Port of the local API (0 picks a free one) (a whole number >= 0 and <= 65535)` })
  t.equal(readFileSync(configPath, 'utf8'), invalid)
  t.notOk(existsSync(keyPath), 'no key written by a refused setup')
})

t.test('a server without a release key yet: set up all the same, with a warning', async (t) => {
  const { configPath, keyPath, out, deps } = box(t)
  writeFileSync(configPath, JSON.stringify({ releaseKeyPath: keyPath }))
  await setup({ configPath, server: 'https://club.example.org' }, { ...deps, fetch: async () => new Response('{}', { status: 404 }) })
  t.equal(readJson(configPath).serverUrl, 'https://club.example.org')
  t.notOk(existsSync(keyPath))
  t.match(out[0], /^warning: the server trusts no release key yet \(AGENT_RELEASE_PUBLIC_KEYS\); until .* holds it, this box installs no update$/)
})

t.test('the release key: its fingerprint to compare, a warning over plain http, only ever its public half written', async (t) => {
  const { dir, configPath, keyPath, out, deps } = box(t)
  writeFileSync(configPath, JSON.stringify({ releaseKeyPath: keyPath }))
  await setup({ configPath, server: 'http://10.0.0.2:3000' }, deps)
  t.same(out.slice(0, 2), [
    `release key: ${keyPath}, SHA-256 fingerprint ${FINGERPRINT}`,
    "Compare the fingerprint with the one the admin got from club agent-releases keygen: this key came over plain http, only that comparison shows it is the club's"
  ])

  // Given the private key by mistake: the public half is written, never the private one.
  const given = join(dir, 'given.pem')
  writeFileSync(given, releaseKey.privateKey.export({ type: 'pkcs8', format: 'pem' }))
  out.length = 0
  await setup({ configPath, server: 'http://10.0.0.2:3000', releaseKey: given }, { ...deps, fetch: async () => Promise.reject(new Error('not asked')) })
  t.equal(readFileSync(keyPath, 'utf8'), PUBLIC_KEY)
  t.same(out.slice(0, 2), [`release key: ${keyPath}, SHA-256 fingerprint ${FINGERPRINT}`, 'Compare the fingerprint with the one the admin got from club agent-releases keygen'])

  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' }).toString()
  writeFileSync(given, rsa)
  await t.rejects(setup({ configPath, server: 'http://10.0.0.2:3000', releaseKey: given }, deps), { message: `--release-key ${given} is a rsa key, not the club's Ed25519 release key` })
  writeFileSync(given, 'not a key')
  await t.rejects(setup({ configPath, server: 'http://10.0.0.2:3000', releaseKey: given }, deps), { message: `--release-key ${given} is not a key in PEM` })
  t.equal(readFileSync(keyPath, 'utf8'), PUBLIC_KEY, 'a refused key replaces nothing')
})

t.test('every key the server trusts is pinned (a rotation), each fingerprint printed; a package signed by either passes', async (t) => {
  const { configPath, keyPath, out, deps } = box(t)
  const rotated = generateKeyPairSync('ed25519').publicKey
  const ROTATED = rotated.export({ type: 'spki', format: 'pem' }).toString()
  const keys = [{ publicKey: PUBLIC_KEY, fingerprint: FINGERPRINT }, { publicKey: ROTATED, fingerprint: createHash('sha256').update(rotated.export({ type: 'spki', format: 'der' })).digest('hex') }]
  writeFileSync(configPath, JSON.stringify({ releaseKeyPath: keyPath }))
  const answer = JSON.stringify({ ...keys[0], keys })
  await setup({ configPath, server: 'https://club.example.org' }, { ...deps, fetch: async () => new Response(answer, { status: 200, headers: { 'content-type': 'application/json' } }) })
  t.equal(readFileSync(keyPath, 'utf8'), PUBLIC_KEY + ROTATED)
  t.same(out.slice(0, 2), keys.map((k) => `release key: ${keyPath}, SHA-256 fingerprint ${k.fingerprint}`))
  t.same(publicKeysOf(readFileSync(keyPath, 'utf8')).map((k) => k.export({ type: 'spki', format: 'pem' })), [PUBLIC_KEY, ROTATED])
})

t.test('--fingerprint: setup pins only keys listed, refusing the whole setup for any other', async (t) => {
  const { configPath, keyPath, deps } = box(t)
  writeFileSync(configPath, JSON.stringify({ releaseKeyPath: keyPath }))
  await setup({ configPath, server: 'http://10.0.0.2:3000', fingerprints: [FINGERPRINT.toUpperCase().replace(/(..)(?=.)/g, '$1:')] }, deps)
  t.equal(readFileSync(keyPath, 'utf8'), PUBLIC_KEY, 'the listed key, written as colon-separated upper case too')

  // The server (or someone on the plain-http path) adds a key of its own beside the club's.
  const intruder = generateKeyPairSync('ed25519').publicKey
  const INTRUDER = intruder.export({ type: 'spki', format: 'pem' }).toString()
  const intruderFingerprint = createHash('sha256').update(intruder.export({ type: 'spki', format: 'der' })).digest('hex')
  const keys = [{ publicKey: PUBLIC_KEY, fingerprint: FINGERPRINT }, { publicKey: INTRUDER, fingerprint: intruderFingerprint }]
  const answer = JSON.stringify({ ...keys[0], keys })
  const before = readFileSync(configPath, 'utf8')
  const withIntruder = { ...deps, fetch: async () => new Response(answer, { status: 200, headers: { 'content-type': 'application/json' } }) }
  await t.rejects(setup({ configPath, server: 'http://10.0.0.9:3000', fingerprints: [FINGERPRINT] }, withIntruder), {
    name: 'SetupError',
    message: `release key ${intruderFingerprint} is not one of --fingerprint: nothing pinned, the configuration left as it was`
  })
  t.equal(readFileSync(keyPath, 'utf8'), PUBLIC_KEY, 'the pinned keys unchanged')
  t.equal(readFileSync(configPath, 'utf8'), before, 'the configuration unchanged')
  await t.rejects(setup({ configPath, server: 'http://10.0.0.2:3000', fingerprints: ['abc'] }, deps), { message: /--fingerprint abc is not a SHA-256 fingerprint/ })
  // Without --fingerprint it still works, pinning what the server answers (docs/installing-a-box.md: compare, or better pass it).
  await setup({ configPath, server: 'http://10.0.0.9:3000' }, withIntruder)
  t.equal(readFileSync(keyPath, 'utf8'), PUBLIC_KEY + INTRUDER)
})
