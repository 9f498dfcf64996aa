import t from 'tap'
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import { releaseSignedText } from '@club/contract'
import { busyReason, compareVersions, downgradeRefusal, installedRecords, nextStep, packageMismatch, recordAfterStart } from './decide.js'

const now = new Date('2026-03-01T10:00:00.000Z')
const at = (minutes: number) => new Date(now.getTime() + minutes * 60_000).toISOString()
const full = { version: '1.2.0', release: { version: '1.2.0', architecture: 'all', path: '/p', size: 3, sha256: 'a'.repeat(64), signature: 's' } }

t.test('an update waits for exports, for events within 15 minutes, and for its window', async (t) => {
  t.match(busyReason({}, 1, now), /export/)
  t.match(busyReason({ busy: [{ start: at(14), end: at(60) }] }, 0, now), /event/, 'an event starting within 15 minutes')
  t.equal(busyReason({ busy: [{ start: at(16), end: at(60) }] }, 0, now), undefined, 'one starting later does not hold it')
  t.match(busyReason({ busy: [{ start: at(-30), end: at(1) }] }, 0, now), /event/, 'one under way')
  t.match(busyReason({ window: { start: at(60), end: at(120) } }, 0, now), /window opens/)
  t.equal(busyReason({ window: { start: at(-1), end: at(120) } }, 0, now), undefined)
})

t.test('the steps: download, wait, install; never again what rolled back; straight to the target', async (t) => {
  const base = { running: '1.0.0', record: undefined, downloaded: undefined, exportsRunning: 0, now }
  t.same(nextStep({ ...base, pending: undefined }), { action: 'none' })
  t.equal(nextStep({ ...base, pending: full }).action, 'download', 'several versions behind: the target is fetched, nothing between')
  t.equal(nextStep({ ...base, pending: full, downloaded: '1.2.0', exportsRunning: 1 }).action, 'wait')
  t.equal(nextStep({ ...base, pending: full, downloaded: '1.2.0' }).action, 'install')
  t.equal(nextStep({ ...base, pending: full, record: { version: '1.2.0', state: 'ROLLED_BACK' } }).action, 'gave-up')
  t.equal(nextStep({ ...base, pending: full, record: { version: '1.1.0', state: 'FAILED' } }).action, 'download', 'another target is tried')
  t.equal(nextStep({ ...base, pending: { version: '1.2.0' } }).action, 'wait', 'no package for this box: nothing to fetch')
  t.equal(recordAfterStart({ version: '1.2.0', state: 'INSTALLING' }, '1.2.0'), undefined)
  t.same(recordAfterStart({ version: '1.3.0', state: 'ROLLED_BACK' }, '1.0.0'), { version: '1.3.0', state: 'ROLLED_BACK' })
})

t.test('a package is checked by size, digest and a signature of its version, architecture and digest', async (t) => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519')
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString()
  const bytes = Buffer.from('deb')
  const sha256 = createHash('sha256').update(bytes).digest('hex')
  const signed = (key: KeyObject, version = '1.2.0', architecture = 'all') => sign(null, Buffer.from(releaseSignedText({ version, architecture, sha256 })), key).toString('base64')
  const release = { version: '1.2.0', architecture: 'all', size: 3, sha256, signature: signed(privateKey) }
  t.equal(packageMismatch(release, bytes, pem), undefined)
  t.match(packageMismatch(release, Buffer.from('deB'), pem), /SHA-256/)
  t.match(packageMismatch(release, Buffer.from('debs'), pem), /size/)
  t.match(packageMismatch({ ...release, signature: signed(generateKeyPairSync('ed25519').privateKey) }, bytes, pem), /signature/, 'another key')
  t.match(packageMismatch({ ...release, signature: signed(privateKey, '1.1.0') }, bytes, pem), /signature/, 'signed as another version')
  t.match(packageMismatch({ ...release, signature: signed(privateKey, '1.2.0', 'arm64') }, bytes, pem), /signature/, 'signed for another architecture')
  const rotated = generateKeyPairSync('ed25519')
  const both = pem + rotated.publicKey.export({ type: 'spki', format: 'pem' }).toString()
  t.equal(packageMismatch({ ...release, signature: signed(rotated.privateKey) }, bytes, both), undefined, 'signed by the second pinned key')
  t.match(packageMismatch({ ...release, signature: signed(rotated.privateKey) }, bytes, pem), /signature/, 'a key not pinned')
  t.match(packageMismatch(release, bytes, ''), /no release key is pinned/)
})

t.test('versions are ordered as semantic versions; an older one is installed only when it is the recorded previous', async (t) => {
  const ordered = ['0.9.0', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0', '1.2.0', '1.10.0', '2.0.0']
  for (let i = 0; i < ordered.length - 1; i++) {
    t.ok(compareVersions(ordered[i]!, ordered[i + 1]!) < 0, `${ordered[i]} < ${ordered[i + 1]}`)
    t.ok(compareVersions(ordered[i + 1]!, ordered[i]!) > 0)
  }
  t.equal(compareVersions('1.2.0', '1.2.0'), 0)
  t.equal(downgradeRefusal('1.3.0', '1.2.0', undefined), undefined, 'newer')
  t.equal(downgradeRefusal('1.2.0', '1.2.0', undefined), undefined, 'the same again')
  t.equal(downgradeRefusal('1.1.0', '1.2.0', '1.1.0'), undefined, 'the recorded previous')
  t.match(downgradeRefusal('1.0.0', '1.2.0', '1.1.0'), /1\.0\.0 is older than the installed 1\.2\.0, and not the version this installer replaced \(1\.1\.0\)/)
  t.match(downgradeRefusal('1.10.0-rc.1', '1.10.0', undefined), /older/)
})

t.test("the installer's record names the version to go back to from before the install; a rollback restores the earlier one", async (t) => {
  const earlier = { installed: '1.1.0', previous: '1.0.0' }
  t.same(installedRecords(earlier, '1.1.0', '1.2.0'), { during: { installed: '1.2.0', previous: '1.1.0' }, afterRollback: earlier })
  t.same(installedRecords(undefined, '1.1.0', '1.2.0'), { during: { installed: '1.2.0', previous: '1.1.0' }, afterRollback: undefined }, 'none before: none after a rollback')
  t.same(installedRecords(earlier, '1.1.0', '1.1.0'), { during: earlier, afterRollback: earlier }, 'the same version again changes nothing')
})
