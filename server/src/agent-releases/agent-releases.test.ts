// The releases routes as an admin and a box use them: upload of a real Debian package (built here
// with dpkg-deb), its refusals, the list, the public key that verifies the signature, and the box's
// download with Range (a cut download resumes).
import { execFileSync } from 'node:child_process'
import { createHash, createPublicKey, verify } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../cli.js'
import { errorOf, testApp, userWithToken, type TestApp } from '../test-support/app.js'
import { adminOf, approve, area, poll, registeredBox } from '../replay-servers/test-helpers.js'
import { generateReleaseKey } from './service.js'

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

async function upload(ctx: TestApp, authorization: string | undefined, body: Buffer | string, type = 'application/vnd.debian.binary-package') {
  return ctx.app.inject({ method: 'POST', url: RELEASES, headers: { ...(authorization ? { authorization } : {}), 'content-type': type }, payload: body })
}

t.test('an admin uploads a package: stored with its size, SHA-256 and a signature the public key verifies', async (t) => {
  const ctx = await testApp(t)
  const { fingerprint } = generateReleaseKey(ctx.config)
  const admin = await adminOf(ctx)
  const bytes = debianPackage({ version: '1.2.0' })

  const res = await upload(ctx, admin, bytes)
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
  t.equal(fingerprint, openssl, 'the one keygen gave the admin')

  const list = await ctx.app.inject({ url: RELEASES, headers: { authorization: admin } })
  t.equal(list.statusCode, 200)
  t.same(list.json().items.map((r: { version: string }) => r.version), ['1.2.0'])

  const again = await upload(ctx, admin, bytes)
  t.equal(again.statusCode, 409, 'the same version and architecture twice: a box must never meet other bytes under one name')
  t.match(errorOf(again).message, /1\.2\.0 for amd64 is already a release/)
  t.same(readdirSync(ctx.config.AGENT_RELEASES_DIR), ['club-agent_1.2.0_amd64.deb'], 'no temporary file left behind')
})

t.test('a release is a row and its file or nothing: a file that cannot be put in place leaves no release', async (t) => {
  const ctx = await testApp(t)
  generateReleaseKey(ctx.config)
  const admin = await adminOf(ctx)
  // A folder where the package's file belongs: the rename into place fails.
  const blocked = join(ctx.config.AGENT_RELEASES_DIR, 'club-agent_1.4.0_amd64.deb')
  mkdirSync(join(blocked, 'in-the-way'), { recursive: true })
  const bytes = debianPackage({ version: '1.4.0' })
  t.equal((await upload(ctx, admin, bytes)).statusCode, 500)
  t.same((await ctx.app.inject({ url: RELEASES, headers: { authorization: admin } })).json().items, [], 'no release without its file')
  t.same(readdirSync(ctx.config.AGENT_RELEASES_DIR), ['club-agent_1.4.0_amd64.deb'], 'the upload left no temporary file')
  rmSync(blocked, { recursive: true })
  t.equal((await upload(ctx, admin, bytes)).statusCode, 201, 'stored once the way is clear')

  t.equal((await upload(ctx, admin, debianPackage({ version: '1.5.0', architecture: 'all' }))).statusCode, 201)
  t.equal((await upload(ctx, admin, debianPackage({ version: '1.5.0', architecture: 'amd64' }))).statusCode, 201, 'a version stored for all may have its own amd64 package')
})

t.test('club agent-releases keygen answers the fingerprint the key route answers, to give whoever sets up a box', async (t) => {
  const ctx = await testApp(t)
  let out = ''
  const env = { DATABASE_URL: ctx.config.DATABASE_URL, LOG_LEVEL: 'silent', AGENT_RELEASE_KEY_FILE: ctx.config.AGENT_RELEASE_KEY_FILE }
  t.equal(await runCli(['agent-releases', 'keygen'], env, (s) => (out += s), () => {}), 0)
  const made = JSON.parse(out)
  t.same((await ctx.app.inject({ url: '/apis/v2/agent-releases/key' })).json(), { publicKey: made.publicKey, fingerprint: made.fingerprint })
  t.match(made, { keyFile: ctx.config.AGENT_RELEASE_KEY_FILE, fingerprint: /^[0-9a-f]{64}$/, note: /Give the fingerprint to whoever sets up a box/ })
})

t.test('what is not a club-agent package is refused with a 400 naming why, and nothing is stored', async (t) => {
  const ctx = await testApp(t)
  generateReleaseKey(ctx.config)
  const admin = await adminOf(ctx)
  const cases: Array<[string, Buffer, RegExp]> = [
    ['random bytes', Buffer.from('not a package at all'), /not a Debian package/],
    ['another package', debianPackage({ package: 'other-tool', version: '1.0.0' }), /the package is other-tool, not club-agent/],
    ['a version that is not semantic', debianPackage({ version: '1.0' }), /version 1\.0 is not a semantic version/],
    ['a version with build metadata', debianPackage({ version: '1.0.0+build.5' }), /version 1\.0\.0\+build\.5 carries build metadata .* systemd allows no \+/],
    ['an empty body', Buffer.alloc(0), /send the \.deb itself as the body/]
  ]
  for (const [name, body, message] of cases) {
    const res = await upload(ctx, admin, body)
    t.equal(res.statusCode, 400, name)
    t.match(errorOf(res).message, message, name)
  }
  const json = await upload(ctx, admin, '{"version":"1.0.0"}', 'application/json')
  t.equal(json.statusCode, 400, 'JSON is not a package')
  t.match(errorOf(json).message, /send the \.deb itself as the body/)
  t.same((await ctx.app.db.selectFrom('agent_releases').select('id').execute()).length, 0)
})

t.test('only admins upload and list; without a release key an upload says how to make one', async (t) => {
  const ctx = await testApp(t)
  const member = (await userWithToken(ctx, 'member')).authorization
  const staff = (await userWithToken(ctx, 'staff')).authorization
  const bytes = debianPackage({ version: '1.0.0' })
  t.equal((await upload(ctx, undefined, bytes)).statusCode, 401)
  t.equal((await upload(ctx, member, bytes)).statusCode, 403)
  t.equal((await upload(ctx, staff, bytes)).statusCode, 403)
  t.equal((await ctx.app.inject({ url: RELEASES, headers: { authorization: member } })).statusCode, 403)
  const keyless = await upload(ctx, await adminOf(ctx), bytes)
  t.equal(keyless.statusCode, 404)
  t.match(errorOf(keyless).message, /club agent-releases keygen/)
})

t.test("a box downloads a release with its token, whole or from where a cut download stopped", async (t) => {
  const ctx = await testApp(t)
  generateReleaseKey(ctx.config)
  const admin = await adminOf(ctx)
  const bytes = debianPackage({ version: '1.3.0' })
  const { path } = (await upload(ctx, admin, bytes)).json()

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
