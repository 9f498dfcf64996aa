// A box is who it says it is (issue 32): a known deviceId registered again, by anyone, never
// disturbs the box; it is a pending claim an admin decides on, unless it proves the box key.
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import t from 'tap'
import { boxKeyProofText, type ReplayServerRegistrationRequest } from '@club/contract'
import { UnauthorizedError } from '../errors.js'
import { errorOf, testApp, type TestApp } from '../test-support/app.js'
import { KEY_PROOF_WINDOW_MS, MAX_CLAIMS_PER_BOX } from './claims.js'
import { authenticateDeviceToken, registerReplayServer } from './service.js'
import { ADMIN, REGISTER, adminOf, anotherProcess, approve, area, camera, poll, putConfig, registeredBox } from './test-helpers.js'

const ATTACKER_IP = '203.0.113.9'
const BOX_URL = 'http://10.0.0.5:8080/'

interface BoxKey {
  publicKey: string
  privateKey: KeyObject
}

function boxKey(): BoxKey {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519')
  return { publicKey: Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64'), privateKey }
}

/** A registration body proving `key`, made at `timestamp` (the server's clock by default). */
function proven(ctx: TestApp, key: BoxKey, body: Record<string, unknown> = {}, timestamp = ctx.clock.now().toISOString()) {
  const deviceId = (body.deviceId as string | undefined) ?? 'box-1'
  const serverUrl = body.serverUrl as string | undefined
  const text = boxKeyProofText({ deviceId, publicKey: key.publicKey, timestamp, serverUrl })
  return { deviceId, ...body, publicKey: key.publicKey, keyProof: { timestamp, signature: sign(null, Buffer.from(text), key.privateKey).toString('base64') } }
}

function registerFrom(ctx: TestApp, remoteAddress: string, body: Record<string, unknown>) {
  return ctx.app.inject({ method: 'POST', url: REGISTER, remoteAddress, payload: { deviceId: 'box-1', ...body } })
}

/** An approved box with a camera, a serverUrl and (optionally) a key, as it polls before any claim. */
async function approvedBox(t: Tap.Test, ctx: TestApp, key?: BoxKey) {
  const admin = await adminOf(ctx)
  const areaId = await area(ctx)
  const box = await registeredBox(ctx, { serverUrl: BOX_URL, hostname: 'replay-01', ...(key ? { publicKey: key.publicKey } : {}) })
  t.equal((await approve(ctx, admin, box.id, { areaId, displayName: 'Court 1 box' })).statusCode, 200)
  t.equal((await putConfig(ctx, admin, box.id, { cameras: [camera()] })).statusCode, 200)
  const answer = (await poll(ctx, box.serverId)).json()
  t.match(answer, { status: 'APPROVED', area: { id: areaId }, config: { cameras: [camera()] } })
  return { ...box, admin, areaId, answer }
}

const adminView = async (ctx: TestApp, admin: string, id: string) =>
  (await ctx.app.inject({ method: 'GET', url: `${ADMIN}/${id}`, headers: { authorization: admin } })).json()

const decide = (ctx: TestApp, admin: string, id: string, claimId: string, decision: 'approve' | 'reject') =>
  ctx.app.inject({ method: 'POST', url: `${ADMIN}/${id}/claims/${claimId}/${decision}`, headers: { authorization: admin } })

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
  const claim = (await registerFrom(ctx, '198.51.100.7', { serverUrl: 'http://10.0.0.6:8080/', publicKey: replacement.publicKey })).json()
  const { claims } = await adminView(ctx, box.admin, box.id)

  const accepted = await decide(ctx, box.admin, box.id, claims[0].id, 'approve')
  t.equal(accepted.statusCode, 200)
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

t.test('a registration loop keeps one claim per key and at most five per box', async (t) => {
  const ctx = await testApp(t, { REPLAY_REGISTRATION_RATE_LIMIT_MAX: '1000' })
  const box = await approvedBox(t, ctx)
  let last = ''
  for (let i = 0; i < 30; i++) {
    const res = await registerFrom(ctx, ATTACKER_IP, { serverUrl: `http://attacker.example/${i}` })
    t.equal(res.statusCode, 200)
    if (last) t.equal((await poll(ctx, last)).statusCode, 404, "a repeat replaces the claim's serverId")
    last = res.json().serverId
    ctx.clock.advance(1000)
  }
  let view = await adminView(ctx, box.admin, box.id)
  t.equal(view.claims.length, 1, 'thirty registrations without a key: one claim')
  t.match(view.claims[0], { registrations: 30, serverUrl: 'http://attacker.example/29' })
  t.same((await poll(ctx, last)).json(), { status: 'PENDING' })

  for (let i = 0; i < 20; i++) {
    t.equal((await registerFrom(ctx, ATTACKER_IP, { publicKey: boxKey().publicKey })).statusCode, 200)
    ctx.clock.advance(1000)
  }
  view = await adminView(ctx, box.admin, box.id)
  t.equal(view.claims.length, MAX_CLAIMS_PER_BOX, 'twenty more keys: still five claims, the oldest dropped')
  const rows = await ctx.app.db.selectFrom('replay_server_claims').select('id').execute()
  t.equal(rows.length, MAX_CLAIMS_PER_BOX, 'and five rows in the table')
  t.same((await poll(ctx, box.serverId)).json(), box.answer, 'the box never noticed')
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

t.test('a rejected box stays rejected and a revoked one stays revoked when its deviceId registers again', async (t) => {
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

  // The very same proof again (an eavesdropper's replay): a claim, the box unaffected.
  const replayed = await registerFrom(ctx, ATTACKER_IP, body)
  t.equal(replayed.json().status, 'PENDING')
  t.same((await poll(ctx, fresh)).json(), answer, 'a replayed proof changes nothing')
  t.match((await adminView(ctx, box.admin, box.id)).claims, [{ sameKey: true, proof: 'REFUSED', proofProblem: /already used/ }])

  // Made too long ago, or too far ahead, by the server's clock.
  for (const offset of [-(KEY_PROOF_WINDOW_MS + 1000), KEY_PROOF_WINDOW_MS + 1000]) {
    const stale = await registerFrom(ctx, ATTACKER_IP, proven(ctx, key, {}, new Date(ctx.clock.now().getTime() + offset).toISOString()))
    t.equal(stale.json().status, 'PENDING', `a proof ${offset} ms off is refused`)
    t.same((await poll(ctx, fresh)).json(), answer)
  }
  t.match((await adminView(ctx, box.admin, box.id)).claims, [{ proofProblem: /not within 120 s/ }])

  // Signed by another key, however well: a claim.
  const other = await registerFrom(ctx, ATTACKER_IP, proven(ctx, boxKey()))
  t.equal(other.json().status, 'PENDING')
  const claims = (await adminView(ctx, box.admin, box.id)).claims
  t.equal(claims.length, 2, "the box's key (refused proofs) and the other key: one claim each")
  t.match(
    claims.find((c: { sameKey: boolean }) => !c.sameKey),
    { proof: 'REFUSED', proofProblem: /another key/ }
  )
  // The signature binds the serverUrl: the box's proof with another address does not verify.
  ctx.clock.advance(1000)
  const moved = { ...proven(ctx, key, { serverUrl: 'http://10.0.0.8:8080/' }), serverUrl: 'http://attacker.example/' }
  t.equal((await registerFrom(ctx, ATTACKER_IP, moved)).json().status, 'PENDING', 'a proof cannot be moved to another serverUrl')
  t.same((await poll(ctx, fresh)).json(), answer, 'the box kept its serverId through all of it')
})

t.test('one proof sent twice at once, to two processes, replaces the serverId once', async (t) => {
  const ctx = await testApp(t)
  const other = await anotherProcess(t, ctx)
  const key = boxKey()
  const box = await approvedBox(t, ctx, key)
  const body = proven(ctx, key) as unknown as ReplayServerRegistrationRequest
  const statuses = await Promise.all([
    registerFrom(ctx, '10.0.0.5', body as unknown as Record<string, unknown>).then((res) => res.json().status),
    registerReplayServer(other.db, body, ATTACKER_IP, other.deps).then((answer) => answer.status)
  ])
  t.same(statuses.sort(), ['APPROVED', 'PENDING'])
  t.equal((await adminView(ctx, box.admin, box.id)).claims.length, 1)
})

t.test('a malformed key or proof is a 400 naming the field, and stores nothing', async (t) => {
  const ctx = await testApp(t)
  const key = boxKey()
  const good = proven(ctx, key)
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['publicKey not base64', { publicKey: '!'.repeat(43) + '=' }, /body\.publicKey/],
    ['publicKey too short', { publicKey: key.publicKey.slice(4) }, /body\.publicKey/],
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

t.test('a box registered before it had a key adopts the one its own polls report, once', async (t) => {
  const ctx = await testApp(t)
  const box = await approvedBox(t, ctx)
  const key = boxKey()
  const query = `publicKey=${encodeURIComponent(key.publicKey)}`
  t.match((await poll(ctx, box.serverId, query)).json(), { status: 'APPROVED', accessToken: box.answer.accessToken })
  const fingerprint = (await adminView(ctx, box.admin, box.id)).keyFingerprint
  t.match(fingerprint, /^SHA256:/, 'the record holds the key now')
  await poll(ctx, box.serverId, `publicKey=${encodeURIComponent(boxKey().publicKey)}`)
  t.equal((await adminView(ctx, box.admin, box.id)).keyFingerprint, fingerprint, 'a poll never replaces a key')
  const bad = await poll(ctx, box.serverId, 'publicKey=abc')
  t.equal(bad.statusCode, 400)
  t.match(errorOf(bad).message, /publicKey/)

  ctx.clock.advance(1000)
  const res = await registerFrom(ctx, '10.0.0.5', proven(ctx, key, { serverUrl: BOX_URL }))
  t.equal(res.json().status, 'APPROVED', 'from then on it proves itself')
  t.equal((await poll(ctx, box.serverId)).statusCode, 404)
})
