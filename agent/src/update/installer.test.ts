// The privileged installer with a package manager that records what it is given: it installs only
// the bytes it checked (a copy the agent's user cannot touch), refuses what the key did not sign or a
// package whose control file names another version, and puts the previous version back when the new
// one never reaches the server. The packages are real (dpkg-deb reads their control files), if tiny.
import { execFileSync } from 'node:child_process'
import { createHash, generateKeyPairSync, sign } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
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
  // Root's own folder in production; here beside the agent's, never written by the "agent".
  const installerStateDir = `${stateDir}-installer`
  t.teardown(() => rmSync(installerStateDir, { recursive: true, force: true }))
  const files = new UpdateFiles(stateDir)
  files.ensureDir()
  const current = debianPackage(stateDir, '1.0.0')
  const next = debianPackage(stateDir, '1.1.0')
  writeFileSync(files.path(updateFiles.complete('1.0.0')), current)
  writeFileSync(files.path(updateFiles.complete('1.1.0')), next)
  files.saveRequest({ release: release('1.1.0', next), rollback: release('1.0.0', current) })
  /** What every installer here is given besides its package manager and clock: 1.0.0 is installed. */
  const base = { stateDir, installerStateDir, installedVersion: '1.0.0', publicKeyPem, log: () => {} }
  return { stateDir, installerStateDir, base, files, current, next }
}

t.test('what is installed is a private copy of the checked bytes, whatever the state folder holds afterwards', async (t) => {
  const { stateDir, base, files, next } = setUp(t)
  const installed: Array<{ path: string; bytes: Buffer }> = []
  const installer = new UpdateInstaller({
    ...base,
    clock: manualClock(),
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
  const { base, files } = setUp(t)
  const next = readFileSync(files.path(updateFiles.complete('1.1.0')))
  next[next.length - 1] ^= 0xff
  writeFileSync(files.path(updateFiles.complete('1.1.0')), next)
  const installed: string[] = []
  const installer = new UpdateInstaller({ ...base, clock: manualClock(), packages: { install: async (f) => void installed.push(f) } })
  const record = await installer.run('1.1.0')
  t.match(record, { version: '1.1.0', state: 'FAILED', reason: /SHA-256 .* is not the announced/ })
  t.same(installed, [])
  t.same(files.record(), record, 'left for the agent to report')
})

t.test('a new version that never reaches the server within 5 minutes: the previous one is put back', async (t) => {
  const { base, current } = setUp(t)
  const installed: Buffer[] = []
  const clock = manualClock()
  const started = clock.now().getTime()
  const installer = new UpdateInstaller({ ...base, clock, packages: { install: async (f) => void installed.push(readFileSync(f)) } })
  const record = await installer.run('1.1.0')
  t.match(record, { version: '1.1.0', state: 'ROLLED_BACK', reason: /did not reach the server within 5 minutes/ })
  t.equal(installed.length, 2)
  t.same(installed[1], current, 'the previous package, as checked')
  t.ok(clock.now().getTime() - started >= HEALTHY_WITHIN_MS, 'it waited the whole 5 minutes first')
})

t.test('a genuine older package presented as the new version is refused, nothing installed', async (t) => {
  const { base, files, current } = setUp(t)
  const installed: string[] = []
  const installer = new UpdateInstaller({ ...base, clock: manualClock(), packages: { install: async (f) => void installed.push(f) } })

  // The agent's user (who writes the state folder) puts 1.0.0 where 1.1.0 belongs, with 1.0.0's
  // genuine digest and signature, and asks for 1.1.0.
  writeFileSync(files.path(updateFiles.complete('1.1.0')), current)
  files.saveRequest({ release: { ...release('1.0.0', current), version: '1.1.0', path: '/x/1.1.0' } })
  t.match(await installer.run('1.1.0'), { version: '1.1.0', state: 'FAILED', reason: /signature is not a release key's for club-agent 1\.1\.0 \(all\)/ })

  // Even a signature over 1.1.0 does not make a package whose control file says 1.0.0 pass.
  files.saveRequest({ release: release('1.1.0', current) })
  t.match(await installer.run('1.1.0'), { version: '1.1.0', state: 'FAILED', reason: /the package is club-agent 1\.0\.0 \(all\), not the signed club-agent 1\.1\.0 \(all\)/ })
  t.same(installed, [])
})

t.test('an older signed release is refused, nothing installed, unless it is the version this installer replaced', async (t) => {
  const { base, files, current, next, installerStateDir } = setUp(t)
  const installed: string[] = []
  const packages = { install: async (f: string) => void installed.push(basename(f)) }
  const polledAfterInstall = { install: async (f: string) => { installed.push(basename(f)); files.savePolled(/_(\d+\.\d+\.\d+)\.deb$/.exec(f)![1]!, new Date()) } }

  // 1.1.0 is installed (by hand: the installer has no record of what it replaced). The agent's user
  // asks for 1.0.0, genuinely signed, with 1.1.0 to put back.
  files.saveRequest({ release: release('1.0.0', current), rollback: release('1.1.0', next) })
  const refused = await new UpdateInstaller({ ...base, installedVersion: '1.1.0', clock: manualClock(), packages }).run('1.0.0')
  t.match(refused, { version: '1.0.0', state: 'FAILED', reason: 'club-agent 1.0.0 is older than the installed 1.1.0, and not the version this installer replaced (none recorded)' })
  t.same(installed, [], 'nothing installed')

  // The installer updates 1.0.0 to 1.1.0 itself: it records that 1.1.0 replaced 1.0.0, in its own folder.
  files.saveRequest({ release: release('1.1.0', next), rollback: release('1.0.0', current) })
  t.equal(await new UpdateInstaller({ ...base, clock: manualClock(), packages: polledAfterInstall }).run('1.1.0'), undefined)
  t.same(JSON.parse(readFileSync(join(installerStateDir, 'installed.json'), 'utf8')), { installed: '1.1.0', previous: '1.0.0' })
  installed.length = 0

  // Going back to 1.0.0 (the admin's target moved back) is then allowed: the recorded rollback.
  files.saveRequest({ release: release('1.0.0', current), rollback: release('1.1.0', next) })
  t.equal(await new UpdateInstaller({ ...base, installedVersion: '1.1.0', clock: manualClock(), packages: polledAfterInstall }).run('1.0.0'), undefined)
  t.same(installed, ['club-agent_1.0.0.deb'], 'the recorded previous version is installed')

  // But not a still older signed release, which it never replaced.
  const old = debianPackage(base.stateDir, '0.9.0')
  writeFileSync(files.path(updateFiles.complete('0.9.0')), old)
  files.saveRequest({ release: release('0.9.0', old), rollback: release('1.0.0', current) })
  installed.length = 0
  t.match(await new UpdateInstaller({ ...base, installedVersion: '1.0.0', clock: manualClock(), packages }).run('0.9.0'), { state: 'FAILED', reason: /0\.9\.0 is older than the installed 1\.0\.0/ })
  t.same(installed, [])
})

t.test('the package put back after a failed install is only ever the installed version', async (t) => {
  const { base, files, next } = setUp(t)
  const old = debianPackage(base.stateDir, '0.9.0')
  writeFileSync(files.path(updateFiles.complete('0.9.0')), old)
  // The agent's user names an old signed release as "the previous one", hoping the new one fails.
  files.saveRequest({ release: release('1.1.0', next), rollback: release('0.9.0', old) })
  const installed: string[] = []
  const record = await new UpdateInstaller({ ...base, clock: manualClock(), packages: { install: async (f) => void installed.push(basename(f)) } }).run('1.1.0')
  t.match(record, { state: 'FAILED', reason: /did not reach the server within 5 minutes of its install; nothing to put back/ })
  t.same(installed, ['club-agent_1.1.0.deb'], '0.9.0 was never installed')
})

t.test('a package file that is a symbolic link, or an updates folder that is one, is refused: nothing installed', async (t) => {
  const { base, files, next } = setUp(t)
  const installed: string[] = []
  const installer = new UpdateInstaller({ ...base, clock: manualClock(), packages: { install: async (f) => void installed.push(f) } })
  // A genuine, signed package, but reached through a link the agent's user made.
  const elsewhere = join(base.stateDir, 'elsewhere.deb')
  writeFileSync(elsewhere, next)
  rmSync(files.path(updateFiles.complete('1.1.0')))
  symlinkSync(elsewhere, files.path(updateFiles.complete('1.1.0')))
  t.match(await installer.run('1.1.0'), { version: '1.1.0', state: 'FAILED', reason: /is not a plain file of .* \(a symbolic link\)/ })
  t.same(installed, [])

  // The whole folder swapped for a link to another holding the same files.
  const other = join(base.stateDir, 'other-updates')
  renameSync(files.dir, other)
  rmSync(join(other, updateFiles.complete('1.1.0')))
  writeFileSync(join(other, updateFiles.complete('1.1.0')), next)
  symlinkSync(other, files.dir)
  t.match(await installer.run('1.1.0'), { state: 'FAILED', reason: /is not a directory \(a symbolic link\?\)/ })
  t.same(installed, [])
})

t.test('a crash mid-install still lets the installer go back; a rollback restores its earlier record', async (t) => {
  const { base, files, current, next, installerStateDir } = setUp(t)
  const recordFile = join(installerStateDir, 'installed.json')
  // The power goes out while apt-get runs: the install never ends, nothing after it happens.
  // Waited for as the install starting, not for a while: however slow the machine, the record is due by then.
  let installing!: () => void
  const installStarted = new Promise<void>((resolve) => (installing = resolve))
  void new UpdateInstaller({ ...base, clock: manualClock(), packages: { install: () => (installing(), new Promise<void>(() => {})) } }).run('1.1.0')
  await installStarted
  t.same(JSON.parse(readFileSync(recordFile, 'utf8')), { installed: '1.1.0', previous: '1.0.0' }, 'written before the install')

  // After the restart 1.1.0 is installed and fails; the agent asks for 1.0.0 back, and gets it.
  const installed: string[] = []
  files.saveRequest({ release: release('1.0.0', current), rollback: release('1.1.0', next) })
  const polledAfterInstall = { install: async (f: string) => { installed.push(basename(f)); files.savePolled(/_(\d+\.\d+\.\d+)\.deb$/.exec(f)![1]!, new Date()) } }
  t.equal(await new UpdateInstaller({ ...base, installedVersion: '1.1.0', clock: manualClock(), packages: polledAfterInstall }).run('1.0.0'), undefined)
  t.same(installed, ['club-agent_1.0.0.deb'])

  // An update that never reaches the server is rolled back: the record is the one from before it.
  const before = readFileSync(recordFile, 'utf8')
  files.saveRequest({ release: release('1.1.0', next), rollback: release('1.0.0', current) })
  const silent = { install: async (f: string) => void installed.push(basename(f)) }
  t.match(await new UpdateInstaller({ ...base, clock: manualClock(), packages: silent }).run('1.1.0'), { state: 'ROLLED_BACK' })
  t.equal(readFileSync(recordFile, 'utf8'), before, 'the record as it was before the rolled-back install')
})

t.test("a package whose size is not the release's is refused before it is read; the request is read only from a real folder", async (t) => {
  const { base, files, current, next } = setUp(t)
  const installed: string[] = []
  const installer = new UpdateInstaller({ ...base, clock: manualClock(), packages: { install: async (f) => void installed.push(f) } })
  // The agent's user grows the file (a huge one would be read whole by root otherwise).
  writeFileSync(files.path(updateFiles.complete('1.1.0')), Buffer.concat([next, Buffer.alloc(1024)]))
  t.match(await installer.run('1.1.0'), { state: 'FAILED', reason: new RegExp(`is ${next.length + 1024} bytes, not the release's ${next.length}`) })
  t.same(installed, [])

  // The whole folder a link to another, whose request would be obeyed: refused before reading it.
  const other = join(base.stateDir, 'other-updates')
  mkdirSync(other)
  writeFileSync(join(other, updateFiles.complete('1.1.0')), next)
  writeFileSync(join(other, updateFiles.request), JSON.stringify({ release: release('1.1.0', next), rollback: release('1.0.0', current) }))
  rmSync(files.dir, { recursive: true })
  symlinkSync(other, files.dir)
  t.match(await installer.run('1.1.0'), { state: 'FAILED', reason: /is not a folder of its own/ })
  t.same(installed, [])
})
