// The releases routes as an admin and a box use them: upload of a real Debian package (built here
// with dpkg-deb) with its offline signature, its refusals, the list, the trusted public keys, and the
// box's download with Range (a cut download resumes).
import { execFileSync } from 'node:child_process'
import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../cli.js'
import { loadConfig } from '../config.js'
import { leftoverReleaseKeyWarnings } from './keys.js'
import { errorOf, testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { releaseSignature, testReleaseKey, trustedKeysSetting } from '../test-support/agent-releases.js'
import { adminOf, approve, area, poll, registeredBox } from '../replay-servers/test-helpers.js'

const RELEASES = '/apis/v2/admin/agent-releases'

/** A minimal Debian package: only its control file and one file, enough for dpkg-deb to read. */
function debianPackage(fields: { package?: string; version: string; architecture?: string }): Buffer {
  const root = mkdtempSync(join(tmpdir(), 'club-deb-'))
  try {
    mkdirSync(join(root, 'DEBIAN'))
    mkdirSync(join(root, 'usr', 'share', 'doc', 'x'), { recursive: true })
    writeFileSync(join(root, 'usr', 'share', 'doc', 'x', 'README'), `release ${fields.version}\n`.repeat(200))
    writeFileSync(
      join(root, 'DEBIAN', 'control'),
      [
        `Package: ${fields.package ?? 'club-agent'}`,
        `Version: ${fields.version}`,
        `Architecture: ${fields.architecture ?? 'amd64'}`,
        'Maintainer: Club <ops@example.org>',
        'Description: test package',
        ''
      ].join('\n')
    )
    const out = join(root, 'out.deb')
    execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z1', '--build', root, out], { stdio: 'ignore' })
    return readFileSync(out)
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

/** The signature `club agent-releases sign` makes of a package's bytes, by the test key unless told another. */
function signatureOf(bytes: Buffer, version: string, architecture = 'amd64', privateKey = testReleaseKey.privateKey): string {
  return releaseSignature({ version, architecture, sha256: createHash('sha256').update(bytes).digest('hex') }, privateKey)
}

async function upload(
  ctx: TestApp,
  authorization: string | undefined,
  body: Buffer | string,
  type = 'application/vnd.debian.binary-package',
  signature?: string
) {
  const headers = { ...(authorization ? { authorization } : {}), 'content-type': type, ...(signature !== undefined ? { 'x-release-signature': signature } : {}) }
  return ctx.app.inject({ method: 'POST', url: RELEASES, headers, payload: body })
}

t.test('an admin uploads a package with its offline signature: stored with its size, SHA-256 and that signature', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const bytes = debianPackage({ version: '1.2.0' })

  const res = await upload(ctx, admin, bytes, undefined, signatureOf(bytes, '1.2.0'))
  t.equal(res.statusCode, 201, res.body)
  const release = res.json()
  const sha256 = createHash('sha256').update(bytes).digest('hex')
  t.match(release, { version: '1.2.0', architecture: 'amd64', size: bytes.length, sha256, path: '/apis/v2/replay-servers/device/agent-releases/1.2.0/amd64' })
  const key = await ctx.app.inject({ url: '/apis/v2/agent-releases/key' })
  t.equal(key.statusCode, 200, 'the public key needs no credential (a box reads it at setup)')
  const signed = Buffer.from(`club-agent\n1.2.0\namd64\n${sha256}`)
  t.ok(verify(null, signed, createPublicKey(key.json().publicKey), Buffer.from(release.signature, 'base64')), 'the signature covers name, version, architecture and SHA-256')
  t.notMatch(key.body, /PRIVATE/, 'only the public half is ever answered')
  const openssl = execFileSync('sh', ['-c', 'openssl pkey -pubin -outform DER | sha256sum'], { input: key.json().publicKey, encoding: 'utf8' }).split(' ')[0]
  t.equal(key.json().fingerprint, openssl, "the key's fingerprint, as openssl computes it")
  t.same(key.json().keys, [{ publicKey: key.json().publicKey, fingerprint: openssl }], 'the one trusted key')

  const list = await ctx.app.inject({ url: RELEASES, headers: { authorization: admin } })
  t.equal(list.statusCode, 200)
  t.same(list.json().items.map((r: { version: string }) => r.version), ['1.2.0'])
  t.match(list.json(), { _total: 1, _links: { self: { href: RELEASES } } }, 'the collection shape')

  const again = await upload(ctx, admin, bytes, undefined, signatureOf(bytes, '1.2.0'))
  t.equal(again.statusCode, 409, 'the same version and architecture twice: a box must never meet other bytes under one name')
  t.match(errorOf(again).message, /1\.2\.0 for amd64 is already a release/)
  t.same(readdirSync(ctx.config.AGENT_RELEASES_DIR), ['club-agent_1.2.0_amd64.deb'], 'no temporary file left behind')
})

t.test('a release is a row and its file or nothing: a file that cannot be put in place leaves no release', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  // A folder where the package's file belongs: the rename into place fails.
  const blocked = join(ctx.config.AGENT_RELEASES_DIR, 'club-agent_1.4.0_amd64.deb')
  mkdirSync(join(blocked, 'in-the-way'), { recursive: true })
  const bytes = debianPackage({ version: '1.4.0' })
  const signed = signatureOf(bytes, '1.4.0')
  t.equal((await upload(ctx, admin, bytes, undefined, signed)).statusCode, 500)
  t.same((await ctx.app.inject({ url: RELEASES, headers: { authorization: admin } })).json().items, [], 'no release without its file')
  t.same(readdirSync(ctx.config.AGENT_RELEASES_DIR), ['club-agent_1.4.0_amd64.deb'], 'the upload left no temporary file')
  rmSync(blocked, { recursive: true })
  t.equal((await upload(ctx, admin, bytes, undefined, signed)).statusCode, 201, 'stored once the way is clear')

  const all = debianPackage({ version: '1.5.0', architecture: 'all' })
  t.equal((await upload(ctx, admin, all, undefined, signatureOf(all, '1.5.0', 'all'))).statusCode, 201)
  const amd64 = debianPackage({ version: '1.5.0', architecture: 'amd64' })
  t.equal((await upload(ctx, admin, amd64, undefined, signatureOf(amd64, '1.5.0'))).statusCode, 201, 'a version stored for all may have its own amd64 package')
})

t.test('an upload without a signature, or signed by a key the server does not trust, is a 400 and stores nothing; a rotated key is accepted', async (t) => {
  const rotated = generateKeyPairSync('ed25519')
  const ctx = await testApp(t, { AGENT_RELEASE_PUBLIC_KEYS: trustedKeysSetting(testReleaseKey.publicKey, rotated.publicKey) })
  const admin = await adminOf(ctx)
  const bytes = debianPackage({ version: '2.0.0' })

  const unsigned = await upload(ctx, admin, bytes)
  t.equal(unsigned.statusCode, 400)
  t.match(errorOf(unsigned), { statusCode: 400, error: 'Bad Request', message: /without its signature: sign it offline \(club agent-releases sign/ })
  const stranger = generateKeyPairSync('ed25519').privateKey
  const wrongKey = await upload(ctx, admin, bytes, undefined, signatureOf(bytes, '2.0.0', 'amd64', stranger))
  t.equal(wrongKey.statusCode, 400)
  t.match(errorOf(wrongKey).message, /the signature is not one of a trusted release key .* over club-agent 2\.0\.0 for amd64/)
  const otherVersion = await upload(ctx, admin, bytes, undefined, signatureOf(bytes, '1.9.0'))
  t.equal(otherVersion.statusCode, 400, "a trusted key's signature of another version")
  for (const garbage of ['not base64 at all!', 'AAAA', '\u00e9']) {
    t.equal((await upload(ctx, admin, bytes, undefined, garbage)).statusCode, 400, `signature ${JSON.stringify(garbage)}`)
  }
  t.same(await ctx.app.db.selectFrom('agent_releases').select('id').execute(), [], 'nothing stored')
  t.same(readdirSync(ctx.config.AGENT_RELEASES_DIR), [], 'no file left behind')

  const byRotated = await upload(ctx, admin, bytes, undefined, signatureOf(bytes, '2.0.0', 'amd64', rotated.privateKey))
  t.equal(byRotated.statusCode, 201, 'signed by the second trusted key')
  const keys = (await ctx.app.inject({ url: '/apis/v2/agent-releases/key' })).json().keys
  t.equal(keys.length, 2, 'boxes are told both keys')
  t.ok(verify(null, Buffer.from(`club-agent\n2.0.0\namd64\n${byRotated.json().sha256}`), createPublicKey(keys[1].publicKey), Buffer.from(byRotated.json().signature, 'base64')))
})

t.test('keygen writes the private key where the operator says, never in the server\'s data; sign works offline; add takes the signature', async (t) => {
  const ctx = await testApp(t)
  const offline = mkdtempSync(join(tmpdir(), 'club-offline-'))
  t.teardown(() => rmSync(offline, { recursive: true, force: true }))
  const cli = async (args: string[], env: Record<string, string>) => {
    let out = ''
    let err = ''
    const code = await runCli(args, env, (s) => (out += s), (s) => (err += s))
    return { code, out, err }
  }
  // The offline machine: no setting of the server at all, no database.
  const refused = await cli(['agent-releases', 'keygen', '--out', join(ctx.config.AGENT_RELEASES_DIR, 'key.pem')], { AGENT_RELEASES_DIR: ctx.config.AGENT_RELEASES_DIR })
  t.equal(refused.code, 1)
  t.match(refused.err, /inside the server's data folder/)
  // keygen opens no database: a SQLite file's folder is the server's data, whichever database this run uses.
  const beside = await cli(['agent-releases', 'keygen', '--out', join(ctx.dir, 'release-key.pem')], { DATABASE_URL: join(ctx.dir, 'club.db') })
  t.equal(beside.code, 1, "beside the server's SQLite database")
  t.same(readdirSync(ctx.dir).filter((f) => f.endsWith('.pem')), [], 'no key written there')

  // On PostgreSQL too, the default data folder ./data is the server's, reached by any path or link.
  const cwd = process.cwd()
  const serverRoot = mkdtempSync(join(tmpdir(), 'club-server-root-'))
  t.teardown(() => { process.chdir(cwd); rmSync(serverRoot, { recursive: true, force: true }) })
  mkdirSync(join(serverRoot, 'data'))
  symlinkSync(join(serverRoot, 'data'), join(serverRoot, 'link-to-data'))
  process.chdir(serverRoot)
  for (const out of ['data/release-key.pem', join(serverRoot, 'link-to-data', 'new', 'release-key.pem')]) {
    const onPostgres = await cli(['agent-releases', 'keygen', '--out', out], { DATABASE_URL: 'postgres://club@localhost/club' })
    t.equal(onPostgres.code, 1, out)
    t.match(onPostgres.err, /inside the server's data folder/)
  }
  t.same(readdirSync(join(serverRoot, 'data')), [], 'no key written in ./data')
  process.chdir(cwd)

  const keyFile = join(offline, 'keys', 'release-key.pem')
  const made = await cli(['agent-releases', 'keygen', '--out', keyFile], {})
  t.equal(made.code, 0, made.err)
  const key = JSON.parse(made.out)
  t.match(key, { keyFile, fingerprint: /^[0-9a-f]{64}$/, publicKeySetting: /^MCowBQYDK2VwAyEA/, note: /give the fingerprint to whoever sets up a box/ })
  t.equal(statSync(keyFile).mode & 0o777, 0o600)
  t.equal((await cli(['agent-releases', 'keygen', '--out', keyFile], {})).code, 1, 'never over an existing key')

  const deb = join(offline, 'club-agent_3.0.0_amd64.deb')
  writeFileSync(deb, debianPackage({ version: '3.0.0' }))
  const signed = await cli(['agent-releases', 'sign', deb, '--key', keyFile], {})
  t.equal(signed.code, 0, signed.err)
  t.match(JSON.parse(signed.out), { version: '3.0.0', architecture: 'amd64', fingerprint: key.fingerprint, signatureFile: `${deb}.sig` })
  const env = { DATABASE_URL: ctx.config.DATABASE_URL, LOG_LEVEL: 'silent', AGENT_RELEASES_DIR: ctx.config.AGENT_RELEASES_DIR }

  const untrusted = await cli(['agent-releases', 'add', deb], { ...env, AGENT_RELEASE_PUBLIC_KEYS: ctx.config.AGENT_RELEASE_PUBLIC_KEYS })
  t.equal(untrusted.code, 1, 'a key the server does not trust yet')
  t.match(untrusted.err, /not one of a trusted release key/)
  const trusted = { ...env, AGENT_RELEASE_PUBLIC_KEYS: `${ctx.config.AGENT_RELEASE_PUBLIC_KEYS},${key.publicKeySetting}` }
  const other = join(offline, 'other.deb')
  writeFileSync(other, debianPackage({ version: '3.1.0' }))
  const missing = await cli(['agent-releases', 'add', other], trusted)
  t.equal(missing.code, 2)
  t.match(missing.err, /no signature at .*other\.deb\.sig: sign the package offline first/)
  writeFileSync(`${other}.sig`, readFileSync(`${deb}.sig`))
  t.match((await cli(['agent-releases', 'add', other], trusted)).err, /the signature is not one of a trusted release key/, "another package's signature")
  const added = await cli(['agent-releases', 'add', deb], trusted)
  t.equal(added.code, 0, added.err)
  t.match(JSON.parse(added.out), { version: '3.0.0', architecture: 'amd64' })
})

t.test('a server upgraded from holding the release key warns while the old setting or key file is left', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'club-upgraded-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  t.same(leftoverReleaseKeyWarnings({}, root), [], 'a fresh server: nothing')
  mkdirSync(join(root, 'data'))
  writeFileSync(join(root, 'data', 'agent-release-key.pem'), 'old key')
  const warnings = leftoverReleaseKeyWarnings({ AGENT_RELEASE_KEY_FILE: '/etc/club/key.pem' }, root)
  t.equal(warnings.length, 2)
  t.match(warnings[0], /AGENT_RELEASE_KEY_FILE is still set \(\/etc\/club\/key\.pem\).*rotate the release key/)
  t.match(warnings[1], /a release key is still on the server at .*data\/agent-release-key\.pem: boxes trust it until it is rotated out/)
})

t.test('AGENT_RELEASE_PUBLIC_KEYS is checked at start: a private key or anything else is refused', async (t) => {
  const pair = generateKeyPairSync('ed25519')
  const privateDer = pair.privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64')
  t.throws(() => loadConfig({ AGENT_RELEASE_PUBLIC_KEYS: privateDer }), /AGENT_RELEASE_PUBLIC_KEYS is not valid: entry 1 is not a public key/)
  t.throws(() => loadConfig({ AGENT_RELEASE_PUBLIC_KEYS: `${trustedKeysSetting()},-----BEGIN` }), /entry 2 is not a public key/)
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'der' }).toString('base64')
  t.throws(() => loadConfig({ AGENT_RELEASE_PUBLIC_KEYS: rsa }), /entry 1 is a rsa key, not Ed25519/)
  t.equal(loadConfig({ AGENT_RELEASE_PUBLIC_KEYS: trustedKeysSetting(pair.publicKey) }).AGENT_RELEASE_PUBLIC_KEYS, trustedKeysSetting(pair.publicKey))
})

t.test('what is not a club-agent package is refused with a 400 naming why, and nothing is stored', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const cases: Array<[string, Buffer, RegExp]> = [
    ['random bytes', Buffer.from('not a package at all'), /not a Debian package/],
    ['another package', debianPackage({ package: 'other-tool', version: '1.0.0' }), /the package is other-tool, not club-agent/],
    ['a version that is not semantic', debianPackage({ version: '1.0' }), /version 1\.0 is not a semantic version/],
    ['a version with build metadata', debianPackage({ version: '1.0.0+build.5' }), /version 1\.0\.0\+build\.5 carries build metadata .* systemd allows no \+/],
    ['an empty body', Buffer.alloc(0), /send the \.deb itself as the body/]
  ]
  for (const [name, body, message] of cases) {
    const res = await upload(ctx, admin, body, undefined, 'c2lnbmF0dXJl')
    t.equal(res.statusCode, 400, name)
    t.match(errorOf(res).message, message, name)
  }
  const json = await upload(ctx, admin, '{"version":"1.0.0"}', 'application/json')
  t.equal(json.statusCode, 400, 'JSON is not a package')
  t.match(errorOf(json).message, /send the \.deb itself as the body/)
  t.same((await ctx.app.db.selectFrom('agent_releases').select('id').execute()).length, 0)
})

t.test('only admins upload and list; while the server trusts no key an upload says how to add one', async (t) => {
  const ctx = await testApp(t, { AGENT_RELEASE_PUBLIC_KEYS: '' })
  const member = (await userWithToken(ctx, 'member')).authorization
  const staff = (await userWithToken(ctx, 'staff')).authorization
  const bytes = debianPackage({ version: '1.0.0' })
  t.equal((await upload(ctx, undefined, bytes)).statusCode, 401)
  t.equal((await upload(ctx, member, bytes)).statusCode, 403)
  t.equal((await upload(ctx, staff, bytes)).statusCode, 403)
  t.equal((await ctx.app.inject({ url: RELEASES, headers: { authorization: member } })).statusCode, 403)
  const keyless = await upload(ctx, await adminOf(ctx), bytes, undefined, signatureOf(bytes, '1.0.0'))
  t.equal(keyless.statusCode, 400)
  t.match(errorOf(keyless).message, /trusts no release key: set AGENT_RELEASE_PUBLIC_KEYS/)
  t.equal((await ctx.app.inject({ url: '/apis/v2/agent-releases/key' })).statusCode, 404)
})

t.test("a box downloads a release with its token, whole or from where a cut download stopped", async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const bytes = debianPackage({ version: '1.3.0' })
  const { path } = (await upload(ctx, admin, bytes, undefined, signatureOf(bytes, '1.3.0'))).json()

  t.equal((await ctx.app.inject({ url: path })).statusCode, 401, 'a box token is needed')
  const { serverId, id } = await registeredBox(ctx, { version: '1.0.0' })
  await approve(ctx, admin, id, { areaId: await area(ctx) })
  const authorization = `Bearer ${(await poll(ctx, serverId)).json().accessToken}`

  const whole = await ctx.app.inject({ url: path, headers: { authorization } })
  t.equal(whole.statusCode, 200)
  t.equal(whole.headers['accept-ranges'], 'bytes')
  t.same(whole.rawPayload, bytes)

  const rest = await ctx.app.inject({ url: path, headers: { authorization, range: 'bytes=100-' } })
  t.equal(rest.statusCode, 206)
  t.equal(rest.headers['content-range'], `bytes 100-${bytes.length - 1}/${bytes.length}`)
  t.same(rest.rawPayload, bytes.subarray(100), 'the missing tail, byte for byte')

  const beyond = await ctx.app.inject({ url: path, headers: { authorization, range: `bytes=${bytes.length}-` } })
  t.equal(beyond.statusCode, 416)
  t.equal(beyond.headers['content-range'], `bytes */${bytes.length}`)

  const unknown = await ctx.app.inject({ url: path.replace('1.3.0', '9.9.9'), headers: { authorization } })
  t.equal(unknown.statusCode, 404)

  rmSync(join(ctx.config.AGENT_RELEASES_DIR, 'club-agent_1.3.0_amd64.deb'))
  const gone = await ctx.app.inject({ url: path, headers: { authorization } })
  t.equal(gone.statusCode, 404, 'a release whose file was removed by hand')
  t.match(errorOf(gone).message, /the file of club-agent 1\.3\.0 for amd64 is missing/)
})
