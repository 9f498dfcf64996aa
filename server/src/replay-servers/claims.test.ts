// A box is who it says it is (issue 32): a known deviceId registered again, by anyone, never
// disturbs the box; it is a pending claim an admin decides on, unless it proves the box key.
import t from 'tap'
import { type ReplayServerRegistrationRequest } from '@club/contract'
import { sha256Hex } from '../crypto.js'
import { UnauthorizedError } from '../errors.js'
import { errorOf, testApp } from '../test-support/app.js'
import { KEY_PROOF_WINDOW_MS, MAX_CLAIMS_PER_BOX, MAX_CLAIMS_PER_SOURCE } from './claims.js'
import { authenticateDeviceToken, registerReplayServer, replaceByProof } from './service.js'
import { adoptPolledKey } from './polls.js'
import { ADMIN, REGISTER, adminOf, anotherProcess, approve, area, camera, poll as unsignedPoll, registeredBox } from './test-helpers.js'
import {
  ATTACKER_IP,
  AUDIENCE,
  BOX_URL,
  adminView,
  adoption,
  approvedBox,
  boxKey,
  decide,
  holdAddress,
  poll,
  proven,
  registerFrom,
  signedQuery,
  signers
} from '../test-support/box-keys.js'

/** The key text with the same 32 bytes but the unused low bits of its last character set: not canonical. */
function nonCanonical(publicKey: string): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
  const last = alphabet.indexOf(publicKey[42]!)
  return publicKey.slice(0, 42) + alphabet[last ^ 1] + '='
}

t.test('a re-registration of an approved box without its key is a pending claim: the box goes on as it was', async (t) => {
  const ctx = await testApp(t)
  const box = await approvedBox(t, ctx, boxKey())

  const res = await registerFrom(ctx, ATTACKER_IP, { serverUrl: 'http://attacker.example/', hostname: 'evil' })
  t.equal(res.statusCode, 200, 'answered as the reference says')
  const claim = res.json()
  t.equal(claim.status, 'PENDING')
  t.equal(claim.displayName, 'Court 1 box', 'with the name the box has')
  t.not(claim.serverId, box.serverId)

  const again = await poll(ctx, box.serverId)
  t.equal(again.statusCode, 200, "the box's own serverId still answers")
  t.same(again.json(), box.answer, 'APPROVED with the same token and configuration')
  t.equal((await authenticateDeviceToken(ctx.app.db, box.answer.accessToken)).replayServerId, box.id, 'its token still works')
  t.same((await poll(ctx, claim.serverId)).json(), { status: 'PENDING' }, "the claim's serverId: no token, no configuration")

  const view = await adminView(ctx, box.admin, box.id)
  t.match(view, { status: 'APPROVED', serverUrl: BOX_URL, hostname: 'replay-01', config: { cameras: [camera()] } })
  t.equal(view.claims.length, 1, 'the claim is listed beside the box')
  t.match(view.claims[0], {
    sourceIp: ATTACKER_IP,
    serverUrl: 'http://attacker.example/',
    hostname: 'evil',
    keyFingerprint: null,
    sameKey: false,
    proof: 'NONE',
    proofProblem: null,
    registrations: 1,
    createdDate: ctx.clock.now().toISOString()
  })
  const list = (await ctx.app.inject({ method: 'GET', url: ADMIN, headers: { authorization: box.admin } })).json()
  t.equal(list.items[0].claims[0].id, view.claims[0].id, 'the list shows it too')

  // Rejected: everything stays as it was, the claim's serverId is refused.
  const rejected = await decide(ctx, box.admin, box.id, view.claims[0].id, 'reject')
  t.equal(rejected.statusCode, 200)
  t.same(rejected.json().claims, [])
  t.equal((await poll(ctx, claim.serverId)).statusCode, 404, "the rejected claim's serverId answers 404")
  t.same((await poll(ctx, box.serverId)).json(), box.answer, 'the box is unchanged')
  t.equal((await decide(ctx, box.admin, box.id, view.claims[0].id, 'reject')).statusCode, 404, 'a claim is decided once')
})

t.test('an admin accepting a claim switches the box to it', async (t) => {
  const ctx = await testApp(t)
  const box = await approvedBox(t, ctx)
  const replacement = boxKey()
  const claim = (await registerFrom(ctx, '198.51.100.7', proven(ctx, replacement, { serverUrl: 'http://10.0.0.6:8080/' }))).json()
  const { claims } = await adminView(ctx, box.admin, box.id)
  t.match(claims[0], { proof: 'PROVEN', keyFingerprint: /^SHA256:/, sameKey: false }, 'the claimant proved it holds the new key')

  const accepted = await decide(ctx, box.admin, box.id, claims[0].id, 'approve')
  t.equal(accepted.statusCode, 200)
  signers.set(ctx, replacement)
  t.match(accepted.json(), { status: 'APPROVED', serverUrl: 'http://10.0.0.6:8080/', keyFingerprint: claims[0].keyFingerprint, claims: [] })
  const old = await poll(ctx, box.serverId)
  t.equal(old.statusCode, 404, 'the old serverId is refused')
  errorOf(old)
  await t.rejects(authenticateDeviceToken(ctx.app.db, box.answer.accessToken), UnauthorizedError, 'the old token fails')
  const now = (await poll(ctx, claim.serverId)).json()
  t.match(now, { status: 'APPROVED', area: { id: box.areaId }, config: { cameras: [camera()] } }, 'the new serverId has the configuration')
  t.not(now.accessToken, box.answer.accessToken, 'and a new token')
  t.equal((await authenticateDeviceToken(ctx.app.db, now.accessToken)).replayServerId, box.id)
  t.equal((await decide(ctx, box.admin, box.id, '00000000-0000-4000-8000-000000000000', 'approve')).statusCode, 404, 'an unknown claim is 404')
})

t.test('a registration loop keeps one claim per source and key, at most two per source and five per box', async (t) => {
  const ctx = await testApp(t, { REPLAY_REGISTRATION_RATE_LIMIT_MAX: '1000' })
  const box = await approvedBox(t, ctx)
  let last = ''
  for (let i = 0; i < 30; i++) {
    // Keys without a proof, ever new: not kept, so all one claim without a key from this source.
    const res = await registerFrom(ctx, ATTACKER_IP, { serverUrl: `http://attacker.example/${i}`, publicKey: boxKey().publicKey })
    t.equal(res.statusCode, 200)
    if (last) t.equal((await poll(ctx, last)).statusCode, 404, "a repeat replaces the claim's serverId")
    last = res.json().serverId
    ctx.clock.advance(1000)
  }
  let view = await adminView(ctx, box.admin, box.id)
  t.equal(view.claims.length, 1, 'thirty registrations with unproven keys: one claim')
  t.match(view.claims[0], { registrations: 30, serverUrl: 'http://attacker.example/29', keyFingerprint: null, proof: 'NONE' })
  t.same((await poll(ctx, last)).json(), { status: 'PENDING' })

  for (let i = 0; i < 20; i++) {
    t.equal((await registerFrom(ctx, ATTACKER_IP, proven(ctx, boxKey()))).statusCode, 200)
    ctx.clock.advance(1000)
  }
  view = await adminView(ctx, box.admin, box.id)
  t.equal(view.claims.length, MAX_CLAIMS_PER_SOURCE, 'twenty more proven keys from the same source: still two claims from it')
  for (let i = 0; i < 20; i++) {
    t.equal((await registerFrom(ctx, `198.51.100.${i + 1}`, proven(ctx, boxKey()))).statusCode, 200)
    ctx.clock.advance(1000)
  }
  const rows = await ctx.app.db.selectFrom('replay_server_claims').select('id').execute()
  t.equal(rows.length, MAX_CLAIMS_PER_BOX, 'twenty sources more: five rows in the table, the oldest dropped')
  t.same((await poll(ctx, box.serverId)).json(), box.answer, 'the box never noticed')
})

t.test('a stranger cannot flush a genuine claim: one source keeps two, and claims without a proven key go first', async (t) => {
  const ctx = await testApp(t, { REPLAY_REGISTRATION_RATE_LIMIT_MAX: '1000' })
  const box = await approvedBox(t, ctx, boxKey())
  // The box reinstalled with a new disk: its new key, proven, from its own address.
  const genuine = await registerFrom(ctx, '10.0.0.5', proven(ctx, boxKey(), { serverUrl: BOX_URL }))
  const genuineId = (await adminView(ctx, box.admin, box.id)).claims[0].id
  ctx.clock.advance(1000)
  for (let i = 0; i < 50; i++) {
    // From one address with proven keys, and from many without a key.
    await registerFrom(ctx, ATTACKER_IP, proven(ctx, boxKey()))
    await registerFrom(ctx, `198.51.100.${i + 1}`, { serverUrl: 'http://attacker.example/' })
    ctx.clock.advance(1000)
  }
  const { claims } = await adminView(ctx, box.admin, box.id)
  t.equal(claims.length, MAX_CLAIMS_PER_BOX)
  t.ok(
    claims.some((c: { id: string }) => c.id === genuineId),
    'the genuine claim, the oldest of all, is still there'
  )
  t.equal(claims.filter((c: { sourceIp: string }) => c.sourceIp === ATTACKER_IP).length, MAX_CLAIMS_PER_SOURCE, 'two from the stranger')
  t.same((await poll(ctx, genuine.json().serverId)).json(), { status: 'PENDING' }, "the genuine claim's serverId still polls")
})

t.test('a claim on a pending box leaves it pending with its own address; approval goes to the box', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const box = await registeredBox(ctx, { serverUrl: BOX_URL })
  const claim = (await registerFrom(ctx, ATTACKER_IP, { serverUrl: 'http://attacker.example/' })).json()
  t.equal(claim.status, 'PENDING')
  t.match(await adminView(ctx, admin, box.id), { status: 'PENDING', serverUrl: BOX_URL, claims: [{ serverUrl: 'http://attacker.example/' }] })
  await approve(ctx, admin, box.id, { areaId: await area(ctx) })
  t.match((await poll(ctx, box.serverId)).json(), { status: 'APPROVED', accessToken: String })
  t.same((await poll(ctx, claim.serverId)).json(), { status: 'PENDING' }, 'the claimant gets nothing')
})

t.test('a rejected box stays rejected when its deviceId registers again; a revoked one proving its key waits for approval, no further', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const key = boxKey()
  const rejected = await registeredBox(ctx, { deviceId: 'box-r' })
  await ctx.app.inject({ method: 'POST', url: `${ADMIN}/${rejected.id}/reject`, headers: { authorization: admin } })
  t.equal((await registerFrom(ctx, ATTACKER_IP, { deviceId: 'box-r' })).json().status, 'PENDING', 'a claim')
  t.same((await poll(ctx, rejected.serverId)).json(), { status: 'REJECTED' })

  const revoked = await approvedBox(t, ctx, key)
  await ctx.app.inject({ method: 'POST', url: `${ADMIN}/${revoked.id}/revoke`, headers: { authorization: admin } })
  t.same((await poll(ctx, revoked.serverId)).json(), { status: 'REVOKED' })
  ctx.clock.advance(1000)
  const back = await registerFrom(ctx, '10.0.0.5', proven(ctx, key))
  t.equal(back.json().status, 'PENDING', 'its own key brings a revoked box back to waiting for approval, no further')
  t.same((await poll(ctx, back.json().serverId)).json(), { status: 'PENDING' })
})

t.test('a re-registration that proves the box key replaces the serverId at once; a replayed, stale or foreign proof is a claim', async (t) => {
  const ctx = await testApp(t)
  const key = boxKey()
  const box = await approvedBox(t, ctx, key)

  ctx.clock.advance(60_000)
  const body = proven(ctx, key, { serverUrl: 'http://10.0.0.8:8080/', hostname: 'replay-01' })
  const res = await registerFrom(ctx, '10.0.0.8', body)
  t.equal(res.statusCode, 200)
  t.match(res.json(), { status: 'APPROVED', displayName: 'Court 1 box' })
  const fresh = res.json().serverId
  t.equal((await poll(ctx, box.serverId)).statusCode, 404, 'the old serverId stops')
  await t.rejects(authenticateDeviceToken(ctx.app.db, box.answer.accessToken), UnauthorizedError, 'the old token fails')
  const answer = (await poll(ctx, fresh)).json()
  t.match(answer, { status: 'APPROVED', area: { id: box.areaId }, config: { cameras: [camera()] } }, 'the same configuration')
  t.not(answer.accessToken, box.answer.accessToken, 'a fresh token')
  t.match(await adminView(ctx, box.admin, box.id), { serverUrl: 'http://10.0.0.8:8080/', claims: [] })

  // The box's key is public (every poll names it): with a proof that fails, it is no claim, it is refused.
  const refused = async (name: string, body: Record<string, unknown>, statusCode: number, message: RegExp) => {
    const res = await registerFrom(ctx, ATTACKER_IP, body)
    t.equal(res.statusCode, statusCode, name)
    t.match(errorOf(res), { statusCode, message }, name)
    t.same((await poll(ctx, fresh)).json(), answer, `${name}: the box kept its serverId`)
    t.same((await adminView(ctx, box.admin, box.id)).claims, [], `${name}: nothing stored, nothing for an admin to mistake for the box`)
  }
  // The very same proof again (an eavesdropper's replay).
  await refused('a replayed proof', body, 409, /keyProof: this proof, or a newer one, was already used/)
  await refused("the box's key without a proof", { publicKey: key.publicKey, serverUrl: BOX_URL }, 400, /keyProof: missing/)
  // Made too long ago, or too far ahead, by the server's clock: the box with a wrong clock learns so.
  for (const offset of [-(KEY_PROOF_WINDOW_MS + 1000), KEY_PROOF_WINDOW_MS + 1000]) {
    const stale = proven(ctx, key, {}, new Date(ctx.clock.now().getTime() + offset).toISOString())
    await refused(`a proof ${offset} ms off`, stale, 400, /not within 120 s of the server's clock/)
  }
  // The signature binds the serverUrl and the server: the box's proof moved elsewhere does not verify.
  ctx.clock.advance(1000)
  const moved = { ...proven(ctx, key, { serverUrl: 'http://10.0.0.8:8080/' }), serverUrl: 'http://attacker.example/' }
  await refused('a proof moved to another serverUrl', moved, 400, /signature does not verify/)
  await refused('a proof made for another server', proven(ctx, key, {}, undefined, 'https://other-club.example'), 400, /signature does not verify/)
  // Nor does it when the request names that other server in Host (or, behind a proxy, X-Forwarded-Host):
  // the audience is this server's PUBLIC_BASE_URL, never what the sender writes.
  const forged = async (headers: Record<string, string>) => {
    ctx.clock.advance(1000)
    const res = await ctx.app.inject({ method: 'POST', url: REGISTER, remoteAddress: ATTACKER_IP, headers, payload: proven(ctx, key, {}, undefined, 'https://other-club.example') })
    t.equal(res.statusCode, 400, `a proof for another server, with ${JSON.stringify(headers)}`)
    t.match(errorOf(res).message, /signature does not verify/)
    t.same((await poll(ctx, fresh)).json(), answer, 'the box kept its serverId')
  }
  await forged({ host: 'other-club.example' })
  await forged({ host: 'other-club.example', 'x-forwarded-host': 'other-club.example', 'x-forwarded-proto': 'https' })

  // Signed by another key, however well: a claim, with that key.
  const other = await registerFrom(ctx, ATTACKER_IP, proven(ctx, boxKey()))
  t.equal(other.json().status, 'PENDING')
  t.match((await adminView(ctx, box.admin, box.id)).claims, [{ sameKey: false, proof: 'PROVEN', keyFingerprint: /^SHA256:/ }])
  t.same((await poll(ctx, fresh)).json(), answer, 'the box kept its serverId through all of it')
})

t.test("the proof's audience is PUBLIC_BASE_URL's origin, whatever Host or X-Forwarded-Host the request names", async (t) => {
  const ctx = await testApp(t, { TRUST_PROXY: 'true', PUBLIC_BASE_URL: 'https://club.example/base' })
  const key = boxKey()
  const register = (audience: string, headers: Record<string, string>) =>
    ctx.app.inject({ method: 'POST', url: REGISTER, remoteAddress: ATTACKER_IP, headers, payload: proven(ctx, key, {}, undefined, audience) })
  const box = await register('https://club.example', { host: 'box-lan-name:8080' })
  signers.set(ctx, key)
  t.equal(box.statusCode, 200, 'made for this server, it holds whichever name the request came by')
  t.match((await ctx.app.inject({ method: 'GET', url: `${ADMIN}?deviceId=box-1`, headers: { authorization: await adminOf(ctx) } })).json(), {
    items: [{ keyFingerprint: /^SHA256:/ }]
  })
  for (const headers of [{ host: 'other-club.example' }, { 'x-forwarded-host': 'other-club.example', 'x-forwarded-proto': 'https' }] as Array<Record<string, string>>) {
    ctx.clock.advance(1000)
    const res = await register('https://other-club.example', headers)
    t.equal(res.statusCode, 400, `made for another server, refused with ${JSON.stringify(headers)}`)
    t.match(errorOf(res).message, /signature does not verify/)
  }
  t.equal((await poll(ctx, box.json().serverId)).json().status, 'PENDING', 'the box kept its serverId')
})

t.test('one proof sent twice at once, to two processes, replaces the serverId once', async (t) => {
  // Write transactions take turns (BEGIN IMMEDIATE; pg_advisory_xact_lock on PostgreSQL), so the
  // second reads the first's key_proof_at: this shows what the box sees, the stale-row test below is
  // the one that decides on the conditional update itself.
  const ctx = await testApp(t)
  const other = await anotherProcess(t, ctx)
  const key = boxKey()
  const box = await approvedBox(t, ctx, key)
  ctx.clock.advance(1000)
  const body = proven(ctx, key) as unknown as ReplayServerRegistrationRequest
  const statuses = await Promise.all([
    registerFrom(ctx, '10.0.0.5', body as unknown as Record<string, unknown>).then((res) => res.statusCode),
    registerReplayServer(other.db, body, { sourceIp: ATTACKER_IP, audience: AUDIENCE }, other.deps).then(
      () => 200,
      (err: { statusCode?: number }) => err.statusCode
    )
  ])
  t.same(statuses.sort(), [200, 409])
  t.same((await adminView(ctx, box.admin, box.id)).claims, [])
})

t.test('a proven replacement over a record that moved on since it was read changes nothing', async (t) => {
  const ctx = await testApp(t)
  const other = await anotherProcess(t, ctx)
  const key = boxKey()
  const box = await approvedBox(t, ctx, key)
  const replacement = boxKey()
  const claim = (await registerFrom(ctx, '10.0.0.6', proven(ctx, replacement))).json()
  const read = await other.stored(box.id)
  // Between that read and the proof's write, an admin accepts the claim (another key, another serverId).
  const { claims } = await adminView(ctx, box.admin, box.id)
  t.equal((await decide(ctx, box.admin, box.id, claims[0].id, 'approve')).statusCode, 200)
  signers.set(ctx, replacement)
  ctx.clock.advance(1000)
  const late = { input: proven(ctx, key) as unknown as ReplayServerRegistrationRequest, serverIdHash: sha256Hex('late'), sourceIp: ATTACKER_IP }
  const written = await replaceByProof(
    other.db,
    read,
    { ...late, proofAt: ctx.clock.now().toISOString(), now: ctx.clock.now().toISOString(), displayName: null },
    other.deps
  )
  t.equal(written, null, "the old key's proof does not undo the admin's decision")
  t.match((await poll(ctx, claim.serverId)).json(), { status: 'APPROVED' }, 'the accepted claim is the box')
  t.equal((await adminView(ctx, box.admin, box.id)).keyFingerprint, claims[0].keyFingerprint)

  // The same with the proof time: one proof written, the same time again over the row read before it.
  const before = await other.stored(box.id)
  ctx.clock.advance(1000)
  const at = ctx.clock.now().toISOString()
  const again = { input: proven(ctx, replacement) as unknown as ReplayServerRegistrationRequest, proofAt: at, sourceIp: '10.0.0.6', now: at, displayName: null }
  t.equal(await replaceByProof(other.db, before, { ...again, serverIdHash: sha256Hex('first') }, other.deps), 'APPROVED')
  t.equal(await replaceByProof(other.db, before, { ...again, serverIdHash: sha256Hex('second') }, other.deps), null, 'a proof replaces once')
  t.equal((await other.stored(box.id)).server_id_hash, sha256Hex('first'))
  t.equal((await other.stored(box.id)).key_proof_at, at, 'an accepted claim kept the last proof time; a proof moves it on')
})

t.test('a malformed key or proof is a 400 naming the field, and stores nothing', async (t) => {
  const ctx = await testApp(t)
  const key = boxKey()
  const good = proven(ctx, key)
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['publicKey not base64', { publicKey: '!'.repeat(43) + '=' }, /body\.publicKey/],
    ['publicKey too short', { publicKey: key.publicKey.slice(4) }, /body\.publicKey/],
    ['publicKey not in canonical base64', { publicKey: nonCanonical(key.publicKey) }, /body\.publicKey is not an Ed25519 public key in canonical base64/],
    ['publicKey not a string', { publicKey: 42 }, /body\.publicKey/],
    ['signature too short', { ...good, keyProof: { ...good.keyProof, signature: 'AAAA' } }, /body\.keyProof\.signature/],
    ['timestamp not a date', { ...good, keyProof: { ...good.keyProof, timestamp: 'yesterday' } }, /body\.keyProof\.timestamp/],
    ['keyProof without its key', { keyProof: good.keyProof }, /body\.keyProof needs body\.publicKey/],
    ['an unknown proof field', { ...good, keyProof: { ...good.keyProof, nonce: 1 } }, /body\.keyProof\.nonce is not allowed/]
  ]
  for (const [name, body, message] of cases) {
    const res = await registerFrom(ctx, ATTACKER_IP, body)
    t.equal(res.statusCode, 400, name)
    const error = errorOf(res)
    t.match(error, { statusCode: 400, error: 'Bad Request' }, name)
    t.match(error.message, message, name)
  }
  t.equal((await ctx.app.db.selectFrom('replay_servers').select('id').execute()).length, 0, 'nothing was stored')
})

t.test('a box registered before it had a key adopts the one its own poll proves, once', async (t) => {
  const ctx = await testApp(t)
  const box = await approvedBox(t, ctx)
  const key = boxKey()
  const bare = `publicKey=${encodeURIComponent(key.publicKey)}`
  t.match((await poll(ctx, box.serverId, bare)).json(), { status: 'APPROVED', accessToken: box.answer.accessToken })
  t.equal((await adminView(ctx, box.admin, box.id)).keyFingerprint, null, 'a key named in a poll is not enough: it is public')
  await poll(ctx, box.serverId, adoption(ctx, key, box.serverId, 'another-server-id'))
  t.equal((await adminView(ctx, box.admin, box.id)).keyFingerprint, null, 'nor one signed for another serverId')
  const bad = await poll(ctx, box.serverId, 'publicKey=abc')
  t.equal(bad.statusCode, 400)
  t.match(errorOf(bad).message, /publicKey/)

  holdAddress(ctx)
  t.match((await poll(ctx, box.serverId, adoption(ctx, key, box.serverId))).json(), { status: 'APPROVED' })
  signers.set(ctx, key)
  const view = await adminView(ctx, box.admin, box.id)
  t.match(view, { keyFingerprint: /^SHA256:/, keyAdoptedDate: ctx.clock.now().toISOString(), keyAdoptedFrom: '127.0.0.1' }, 'adopted, when and from where')
  await poll(ctx, box.serverId, adoption(ctx, boxKey(), box.serverId))
  t.equal((await adminView(ctx, box.admin, box.id)).keyFingerprint, view.keyFingerprint, 'a poll never replaces a key')

  ctx.clock.advance(1000)
  const res = await registerFrom(ctx, '10.0.0.5', proven(ctx, key, { serverUrl: BOX_URL }))
  t.equal(res.json().status, 'APPROVED', 'from then on it proves itself')
  t.equal((await poll(ctx, box.serverId)).statusCode, 404)
})

t.test('adoption is one conditional write: a poll read before another adopted a key adopts nothing', async (t) => {
  const ctx = await testApp(t)
  const other = await anotherProcess(t, ctx)
  const box = await approvedBox(t, ctx)
  const read = await other.stored(box.id)
  const [first, second] = [boxKey(), boxKey()]
  holdAddress(ctx)
  await poll(ctx, box.serverId, adoption(ctx, first, box.serverId))
  t.equal(await adoptPolledKey(other.db, read, second.publicKey, ATTACKER_IP, ctx.clock.now()), false)
  const stored = await other.stored(box.id)
  t.equal(stored.public_key, first.publicKey, 'the first key stays')
  t.equal(stored.key_adopted_from, '127.0.0.1')
})

t.test('a claim with the box key a poll adopted later cannot be accepted: the box proves that key itself', async (t) => {
  const ctx = await testApp(t)
  const box = await approvedBox(t, ctx)
  const key = boxKey()
  // Someone holding the key registers first (a claim), then the box's own poll adopts the same key.
  await registerFrom(ctx, ATTACKER_IP, proven(ctx, key))
  holdAddress(ctx)
  await poll(ctx, box.serverId, adoption(ctx, key, box.serverId))
  signers.set(ctx, key)
  const { claims } = await adminView(ctx, box.admin, box.id)
  t.match(claims, [{ sameKey: true, proof: 'PROVEN' }])
  const res = await decide(ctx, box.admin, box.id, claims[0].id, 'approve')
  t.equal(res.statusCode, 409)
  t.match(errorOf(res), { statusCode: 409, error: 'Conflict', message: /the box's own key/ })
  t.same((await poll(ctx, box.serverId)).json(), box.answer, 'the box is unchanged')
  t.equal((await adminView(ctx, box.admin, box.id)).claims.length, 1, 'the claim stays, for a reject')
})

t.test('a claim registered again while an admin looks at it has a new id: the stale Accept is 404', async (t) => {
  const ctx = await testApp(t)
  const box = await approvedBox(t, ctx)
  await registerFrom(ctx, ATTACKER_IP, { serverUrl: 'http://10.0.0.6:8080/', hostname: 'replay-01' })
  const seen = (await adminView(ctx, box.admin, box.id)).claims[0]
  // The same source registers again with another serverUrl while the admin reads the first.
  await registerFrom(ctx, ATTACKER_IP, { serverUrl: 'http://attacker.example/', hostname: 'replay-01' })
  const res = await decide(ctx, box.admin, box.id, seen.id, 'approve')
  t.equal(res.statusCode, 404)
  t.same((await poll(ctx, box.serverId)).json(), box.answer, 'the box is unchanged')
  t.match((await adminView(ctx, box.admin, box.id)).claims, [{ serverUrl: 'http://attacker.example/', registrations: 2 }])
  t.not((await adminView(ctx, box.admin, box.id)).claims[0].id, seen.id)
})

t.test('first registrations of one deviceId at once: one record, the others claims, none a 500', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const { deps } = await anotherProcess(t, ctx)
  // Several rounds, each registering a new deviceId three times at once (on PostgreSQL, through
  // three pooled connections; two SQLite connections in one process would wait on each other's lock
  // with the event loop blocked). Today every write transaction waits its turn (BEGIN IMMEDIATE; pg_advisory_xact_lock in
  // db/postgres.ts), so this holds even without the insert's "on conflict do nothing": the test
  // guards the behaviour should that lock ever go, it cannot show the race.
  for (let round = 0; round < 3; round++) {
    const deviceId = `box-new-${round}`
    const answers = await Promise.all(
      [1, 2, 3].map((i) =>
        registerReplayServer(ctx.app.db, { deviceId }, { sourceIp: `198.51.100.${i}`, audience: AUDIENCE }, deps).then(
          (answer) => answer,
          (err: Error) => err
        )
      )
    )
    t.same(answers.map((a) => (a instanceof Error ? a.message : a.status)), ['PENDING', 'PENDING', 'PENDING'], `${deviceId}: none failed`)
    const rows = await ctx.app.db.selectFrom('replay_servers').select('id').where('device_id', '=', deviceId).execute()
    t.equal(rows.length, 1, `${deviceId}: one record`)
    t.equal((await adminView(ctx, admin, rows[0]!.id)).claims.length, 2, `${deviceId}: the later ones are claims beside it`)
  }
})

t.test('a new record keeps only a key its registration proved', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const unproven = await registeredBox(ctx, { deviceId: 'box-a', publicKey: boxKey().publicKey })
  t.equal((await adminView(ctx, admin, unproven.id)).keyFingerprint, null, 'a key without a proof is not kept')
  const key = boxKey()
  const box = await registeredBox(ctx, proven(ctx, key, { deviceId: 'box-b' }))
  t.match((await adminView(ctx, admin, box.id)).keyFingerprint, /^SHA256:/)
  t.equal((await registerFrom(ctx, ATTACKER_IP, proven(ctx, key, { deviceId: 'box-b' }))).statusCode, 409, 'its first proof is used up')
})

t.test("a box with a key answers only polls its key signs: a serverId read in a proxy's log yields no token, configuration or report", async (t) => {
  const ctx = await testApp(t)
  const key = boxKey()
  const box = await approvedBox(t, ctx, key)
  const viewBefore = await adminView(ctx, box.admin, box.id)
  const stolen = (query: string, headers: Record<string, string> = {}) =>
    ctx.app.inject({ method: 'GET', url: `${REGISTER}/${box.serverId}/status${query ? `?${query}` : ''}`, remoteAddress: ATTACKER_IP, headers })

  for (const [name, query] of [
    ['the serverId alone', ''],
    ['a report of its own', 'serverUrl=http%3A%2F%2Fattacker.example%2F'],
    ['the box key named, unsigned', `publicKey=${encodeURIComponent(key.publicKey)}`],
    ["another key's signature", signedQuery(ctx, boxKey(), box.serverId)]
  ]) {
    const res = await stolen(query!)
    t.equal(res.statusCode, 401, name)
    t.notMatch(res.body, /accessToken|cameras/, `${name}: no token, no configuration`)
    t.match(errorOf(res).message, /signed by it/)
  }
  t.equal((await stolen('', { 'if-none-match': '*' })).statusCode, 401, 'nor a "not modified" for an unsigned poll')
  // A signed poll copied from a log and sent again: each signature counts once.
  const signed = signedQuery(ctx, key, box.serverId)
  t.equal((await unsignedPoll(ctx, box.serverId, signed)).statusCode, 200, 'the box signs its poll')
  const replayed = await stolen(signed)
  t.equal(replayed.statusCode, 401, 'the same signed query again')
  t.match(errorOf(replayed).message, /already used/)

  const view = await adminView(ctx, box.admin, box.id)
  t.equal(view.serverUrl, viewBefore.serverUrl, 'the serverUrl the server calls is unchanged')
  t.match((await poll(ctx, box.serverId)).json(), { status: 'APPROVED', accessToken: box.answer.accessToken }, 'the box goes on as it was')
})

t.test('a keyless box adopts a key only from the address its polls have come from for a while, not from one a serverId holder just polled from', async (t) => {
  const ctx = await testApp(t, { TRUST_PROXY: 'true' })
  const box = await approvedBox(t, ctx)
  const attacker = boxKey()
  holdAddress(ctx)
  const from = (remoteAddress: string, query = '', headers: Record<string, string> = {}) =>
    ctx.app.inject({ method: 'GET', url: `${REGISTER}/${box.serverId}/status${query ? `?${query}` : ''}`, remoteAddress, headers })

  // The holder of the serverId polls once from elsewhere (its address becomes the recorded one), then offers its key.
  t.equal((await from(ATTACKER_IP)).statusCode, 200)
  t.equal((await from(ATTACKER_IP, adoption(ctx, attacker, box.serverId))).statusCode, 200)
  t.equal((await adminView(ctx, box.admin, box.id)).keyFingerprint, null, 'not adopted from an address just taken')
  ctx.clock.advance(1000)
  // Nor through a header it writes itself.
  const forwarded = { 'x-forwarded-for': '127.0.0.1' }
  t.equal((await from('127.0.0.1', '', forwarded)).statusCode, 200)
  holdAddress(ctx)
  t.equal((await from('127.0.0.1', adoption(ctx, attacker, box.serverId), forwarded)).statusCode, 200)
  t.equal((await adminView(ctx, box.admin, box.id)).keyFingerprint, null, 'nor from a forwarded address no one vouches for')

  // The box, polling from its own address for three poll intervals, adopts its key.
  const own = boxKey()
  await from('127.0.0.1')
  holdAddress(ctx)
  await from('127.0.0.1', adoption(ctx, own, box.serverId))
  t.match(await adminView(ctx, box.admin, box.id), { keyFingerprint: /^SHA256:/, keyAdoptedFrom: '127.0.0.1' })
  signers.set(ctx, own)
  t.match((await poll(ctx, box.serverId)).json(), { status: 'APPROVED' })
  t.equal((await from(ATTACKER_IP)).statusCode, 401, 'from then on the serverId alone gets nothing')
})
