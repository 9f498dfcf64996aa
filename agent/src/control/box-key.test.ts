import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto'
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { boxKeyAdoptionText, boxKeyProofText } from '@club/contract'
import { tempDir } from '../temp-dir.fixture.js'
import { BOX_KEY_FILE, createOnce, keyAdoptionFor, keyFingerprint, keyProofFor, loadOrCreateBoxKey } from './box-key.js'

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

t.test('the proof signs the deviceId, the key, the timestamp, the serverUrl and the server it is for', async (t) => {
  const key = loadOrCreateBoxKey(stateDir(t))
  const now = new Date('2026-03-01T10:00:00.000Z')
  const audience = 'https://club.example'
  const proof = keyProofFor(key, { deviceId: 'box-1', serverUrl: 'http://10.0.0.5:8090', audience }, now)
  t.equal(proof.publicKey, key.publicKey)
  t.equal(proof.keyProof.timestamp, '2026-03-01T10:00:00.000Z')
  t.match(proof.keyProof.signature, /^[A-Za-z0-9+/]{86}==$/)
  const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(key.publicKey, 'base64').toString('base64url') }, format: 'jwk' })
  const signed = (fields: { deviceId: string; serverUrl?: string; audience?: string }) =>
    verify(
      null,
      Buffer.from(boxKeyProofText({ audience, ...fields, publicKey: key.publicKey, timestamp: proof.keyProof.timestamp })),
      publicKey,
      Buffer.from(proof.keyProof.signature, 'base64')
    )
  t.ok(signed({ deviceId: 'box-1', serverUrl: 'http://10.0.0.5:8090' }))
  t.notOk(signed({ deviceId: 'box-2', serverUrl: 'http://10.0.0.5:8090' }), 'not for another deviceId')
  t.notOk(signed({ deviceId: 'box-1', serverUrl: 'http://attacker.example/' }), 'not for another serverUrl')
  t.notOk(signed({ deviceId: 'box-1' }), 'not without its serverUrl')
  t.notOk(signed({ deviceId: 'box-1', serverUrl: 'http://10.0.0.5:8090', audience: 'https://other-club.example' }), 'not at another server')

  const adoption = keyAdoptionFor(key, 'sid-1', now)
  t.same({ publicKey: adoption.publicKey, keyTimestamp: adoption.keyTimestamp }, { publicKey: key.publicKey, keyTimestamp: '2026-03-01T10:00:00.000Z' })
  const adopts = (serverId: string) =>
    verify(null, Buffer.from(boxKeyAdoptionText({ serverId, publicKey: key.publicKey, timestamp: adoption.keyTimestamp })), publicKey, Buffer.from(adoption.keySignature, 'base64'))
  t.ok(adopts('sid-1'), "a poll's adoption proof signs its own serverId")
  t.notOk(adopts('sid-2'), 'and no other')
})

t.test('setup and the agent making a key at once: both keep the first key written', async (t) => {
  const dir = stateDir(t)
  const path = join(dir, BOX_KEY_FILE)
  const pem = (k = generateKeyPairSync('ed25519').privateKey) => k.export({ type: 'pkcs8', format: 'pem' }).toString()
  const first = pem()
  t.equal(createOnce(path, first), first, 'the first writer')
  const second = pem()
  // The second had found no key when it looked, and made its own: it gets the first one back.
  t.equal(createOnce(path, second), first, 'the later writer reads the key that is there')
  t.equal(readFileSync(path, 'utf8'), first, 'the file was not replaced')
  t.same(readdirSync(dir), [BOX_KEY_FILE], 'no temporary file left behind')
  t.equal(loadOrCreateBoxKey(dir).publicKey, createPublicKey(first).export({ format: 'jwk' }).x!.replace(/-/g, '+').replace(/_/g, '/') + '=')
})
