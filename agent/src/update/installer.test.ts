// The privileged installer with a package manager that records what it is given: it installs only
// the bytes it checked (a copy the agent's user cannot touch), refuses what the key did not sign or a
// package whose control file names another version, and puts the previous version back when the new
// one never reaches the server. The packages are real (dpkg-deb reads their control files), if tiny.
import { execFileSync } from 'node:child_process'
import { createHash, generateKeyPairSync, sign } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { releaseSignedText, type ReleaseDownload } from '@club/contract'
import { HEALTHY_WITHIN_MS, updateFiles } from './decide.js'
import { UpdateFiles } from './files.js'
import { UpdateInstaller, type InstallerClock } from './installer.js'

const { privateKey, publicKey } = generateKeyPairSync('ed25519')
const publicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString()

/** A club-agent package of `version` holding nothing but its control file. */
function debianPackage(dir: string, version: string): Buffer {
  const root = mkdtempSync(join(dir, 'deb-'))
  mkdirSync(join(root, 'DEBIAN'))
  writeFileSync(join(root, 'DEBIAN', 'control'), `Package: club-agent\nVersion: ${version}\nArchitecture: all\nMaintainer: Club <ops@example.org>\nDescription: test\n`)
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '--build', root, `${root}.deb`], { stdio: 'ignore' })
  return readFileSync(`${root}.deb`)
}

/** What the server announces of a package: signed by the release key for `version`. */
function release(version: string, bytes: Buffer): ReleaseDownload {
  const sha256 = createHash('sha256').update(bytes).digest('hex')
  const signature = sign(null, Buffer.from(releaseSignedText({ version, architecture: 'all', sha256 })), privateKey).toString('base64')
  return { version, architecture: 'all', path: `/x/${version}`, size: bytes.length, sha256, signature }
}

/** A clock that moves only when slept on: the 5 minutes pass without waiting. */
function manualClock(): InstallerClock {
  let now = Date.parse('2026-11-24T03:00:00Z')
  return { now: () => new Date(now), sleep: async (ms) => void (now += ms) }
}

function setUp(t: { teardown(fn: () => void): void }) {
  const stateDir = mkdtempSync(join(tmpdir(), 'club-installer-'))
  t.teardown(() => rmSync(stateDir, { recursive: true, force: true }))
  const files = new UpdateFiles(stateDir)
  files.ensureDir()
  const current = debianPackage(stateDir, '1.0.0')
  const next = debianPackage(stateDir, '1.1.0')
  writeFileSync(files.path(updateFiles.complete('1.0.0')), current)
  writeFileSync(files.path(updateFiles.complete('1.1.0')), next)
  files.saveRequest({ release: release('1.1.0', next), rollback: release('1.0.0', current) })
  return { stateDir, files, current, next }
}

t.test('what is installed is a private copy of the checked bytes, whatever the state folder holds afterwards', async (t) => {
  const { stateDir, files, next } = setUp(t)
  const installed: Array<{ path: string; bytes: Buffer }> = []
  const installer = new UpdateInstaller({
    stateDir,
    publicKeyPem,
    clock: manualClock(),
    log: () => {},
    packages: {
      async install(file) {
        // The agent's user swaps the file in its folder right after the check: too late.
        writeFileSync(files.path(updateFiles.complete('1.1.0')), 'tampered after the check')
        installed.push({ path: file, bytes: readFileSync(file) })
        files.savePolled('1.1.0', new Date())
      }
    }
  })
  t.equal(await installer.run('1.1.0'), undefined, 'the update is done')
  t.equal(installed.length, 1)
  t.notOk(installed[0]!.path.startsWith(stateDir), 'not a file of the state folder')
  t.same(installed[0]!.bytes, next, 'the bytes that were checked')
  t.equal(files.record(), undefined, 'nothing to report')
})

t.test('a package the key did not sign is refused before anything is installed', async (t) => {
  const { stateDir, files } = setUp(t)
  const next = readFileSync(files.path(updateFiles.complete('1.1.0')))
  next[next.length - 1] ^= 0xff
  writeFileSync(files.path(updateFiles.complete('1.1.0')), next)
  const installed: string[] = []
  const installer = new UpdateInstaller({ stateDir, publicKeyPem, clock: manualClock(), log: () => {}, packages: { install: async (f) => void installed.push(f) } })
  const record = await installer.run('1.1.0')
  t.match(record, { version: '1.1.0', state: 'FAILED', reason: /SHA-256 .* is not the announced/ })
  t.same(installed, [])
  t.same(files.record(), record, 'left for the agent to report')
})

t.test('a new version that never reaches the server within 5 minutes: the previous one is put back', async (t) => {
  const { stateDir, current } = setUp(t)
  const installed: Buffer[] = []
  const clock = manualClock()
  const started = clock.now().getTime()
  const installer = new UpdateInstaller({ stateDir, publicKeyPem, clock, log: () => {}, packages: { install: async (f) => void installed.push(readFileSync(f)) } })
  const record = await installer.run('1.1.0')
  t.match(record, { version: '1.1.0', state: 'ROLLED_BACK', reason: /did not reach the server within 5 minutes/ })
  t.equal(installed.length, 2)
  t.same(installed[1], current, 'the previous package, as checked')
  t.ok(clock.now().getTime() - started >= HEALTHY_WITHIN_MS, 'it waited the whole 5 minutes first')
})

t.test('a genuine older package presented as the new version is refused, nothing installed', async (t) => {
  const { stateDir, files, current } = setUp(t)
  const installed: string[] = []
  const installer = new UpdateInstaller({ stateDir, publicKeyPem, clock: manualClock(), log: () => {}, packages: { install: async (f) => void installed.push(f) } })

  // The agent's user (who writes the state folder) puts 1.0.0 where 1.1.0 belongs, with 1.0.0's
  // genuine digest and signature, and asks for 1.1.0.
  writeFileSync(files.path(updateFiles.complete('1.1.0')), current)
  files.saveRequest({ release: { ...release('1.0.0', current), version: '1.1.0', path: '/x/1.1.0' } })
  t.match(await installer.run('1.1.0'), { version: '1.1.0', state: 'FAILED', reason: /signature is not the release key's for club-agent 1\.1\.0 \(all\)/ })

  // Even a signature over 1.1.0 does not make a package whose control file says 1.0.0 pass.
  files.saveRequest({ release: release('1.1.0', current) })
  t.match(await installer.run('1.1.0'), { version: '1.1.0', state: 'FAILED', reason: /the package is club-agent 1\.0\.0 \(all\), not the signed club-agent 1\.1\.0 \(all\)/ })
  t.same(installed, [])
})
