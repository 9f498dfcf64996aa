import { createPublicKey, verify } from 'node:crypto'
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { boxKeyProofText } from '@club/contract'
import { tempDir } from '../temp-dir.fixture.js'
import { BOX_KEY_FILE, keyFingerprint, keyProofFor, loadOrCreateBoxKey } from './box-key.js'

const stateDir = (t: { teardown(fn: () => void): void }) => tempDir(t, 'club-agent-key-')

t.test('made at first start, private key mode 0600, the same key on every later start', async (t) => {
  const dir = stateDir(t)
  const first = loadOrCreateBoxKey(join(dir, 'state'))
  const path = join(dir, 'state', BOX_KEY_FILE)
  t.equal(statSync(path).mode & 0o777, 0o600)
  t.match(readFileSync(path, 'utf8'), /^-----BEGIN PRIVATE KEY-----/)
  t.match(first.publicKey, /^[A-Za-z0-9+/]{43}=$/, 'the raw public key, base64, as the registration sends it')
  t.match(first.fingerprint, /^SHA256:[A-Za-z0-9+/]{43}$/)
  const again = loadOrCreateBoxKey(join(dir, 'state'))
  t.equal(again.publicKey, first.publicKey, 'reused across restarts')
  t.equal(again.fingerprint, first.fingerprint)
  t.not(loadOrCreateBoxKey(join(dir, 'other')).publicKey, first.publicKey, 'another state folder, another box key')
})

t.test('a key file readable by others is narrowed to 0600; a file that is no Ed25519 key is an error', async (t) => {
  const dir = stateDir(t)
  const key = loadOrCreateBoxKey(dir)
  chmodSync(join(dir, BOX_KEY_FILE), 0o644)
  t.equal(loadOrCreateBoxKey(dir).publicKey, key.publicKey)
  t.equal(statSync(join(dir, BOX_KEY_FILE)).mode & 0o777, 0o600)
  writeFileSync(join(dir, BOX_KEY_FILE), 'not a key')
  t.throws(() => loadOrCreateBoxKey(dir))
})

t.test('the fingerprint is SHA-256 of the raw key, as the server computes it', async (t) => {
  t.equal(keyFingerprint(Buffer.alloc(32).toString('base64')), 'SHA256:Zmh6rfhivXdsj8GLjp+OIAiXFIVu4jOzkCpZHQ1fKSU')
})

t.test('the proof signs the deviceId, the key, the timestamp and the serverUrl', async (t) => {
  const key = loadOrCreateBoxKey(stateDir(t))
  const now = new Date('2026-03-01T10:00:00.000Z')
  const proof = keyProofFor(key, { deviceId: 'box-1', serverUrl: 'http://10.0.0.5:8090' }, now)
  t.equal(proof.publicKey, key.publicKey)
  t.equal(proof.keyProof.timestamp, '2026-03-01T10:00:00.000Z')
  t.match(proof.keyProof.signature, /^[A-Za-z0-9+/]{86}==$/)
  const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(key.publicKey, 'base64').toString('base64url') }, format: 'jwk' })
  const signed = (fields: { deviceId: string; serverUrl?: string }) =>
    verify(null, Buffer.from(boxKeyProofText({ ...fields, publicKey: key.publicKey, timestamp: proof.keyProof.timestamp })), publicKey, Buffer.from(proof.keyProof.signature, 'base64'))
  t.ok(signed({ deviceId: 'box-1', serverUrl: 'http://10.0.0.5:8090' }))
  t.notOk(signed({ deviceId: 'box-2', serverUrl: 'http://10.0.0.5:8090' }), 'not for another deviceId')
  t.notOk(signed({ deviceId: 'box-1', serverUrl: 'http://attacker.example/' }), 'not for another serverUrl')
  t.notOk(signed({ deviceId: 'box-1' }), 'not without its serverUrl')
})
