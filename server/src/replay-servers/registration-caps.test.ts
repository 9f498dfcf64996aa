// Registration caps that hold whatever the address (issue 47): an IPv6 /64 or a forwarded address
// per request is one source, a claim without a proven key never pushes out one with a key, boxes never
// approved are bounded and their registrations told a bounded number of times.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { testApp } from '../test-support/app.js'
import { MAX_CLAIMS_PER_BOX, claimsToDrop, sourceOf } from './claims.js'
import { MAX_WAITING_BOXES, MAX_WAITING_BOXES_TOLD } from './service.js'
import { REGISTER, adminOf, approve, area } from './test-helpers.js'
import { adminView, approvedBox, boxKey, decide, poll, proven, registerFrom, signers } from '../test-support/box-keys.js'

t.test("a reinstalled box's proven claim outlasts a stranger rotating IPv6 addresses in a /64 or X-Forwarded-For under TRUST_PROXY", async (t) => {
  const ctx = await testApp(t, { REPLAY_REGISTRATION_RATE_LIMIT_MAX: '1000', TRUST_PROXY: 'true' })
  const box = await approvedBox(t, ctx)
  const newKey = boxKey()
  const reinstalled = await registerFrom(ctx, '198.51.100.7', proven(ctx, newKey, { serverUrl: 'http://10.0.0.6:8080/' }))
  const genuine = (await adminView(ctx, box.admin, box.id)).claims[0]
  t.match(genuine, { proof: 'PROVEN' })
  for (let i = 1; i <= 20; i++) {
    ctx.clock.advance(1000)
    t.equal((await registerFrom(ctx, `2001:db8:1:2::${i.toString(16)}`, { serverUrl: `http://attacker.example/${i}` })).statusCode, 200)
    const forged = await ctx.app.inject({
      method: 'POST',
      url: REGISTER,
      remoteAddress: '127.0.0.1',
      headers: { 'x-forwarded-for': `192.0.2.${i}` },
      payload: { deviceId: 'box-1', serverUrl: `http://forged.example/${i}` }
    })
    t.equal(forged.statusCode, 200)
  }
  const { claims } = await adminView(ctx, box.admin, box.id)
  t.ok(claims.length <= MAX_CLAIMS_PER_BOX)
  t.equal(claims.filter((c: { sourceIp: string }) => c.sourceIp.startsWith('2001:db8:1:2:')).length, 1, 'a /64 is one source: one claim without a key')
  t.equal(claims.filter((c: { sourceIp: string }) => c.sourceIp.endsWith('(forwarded, not verified)')).length, 1, 'so are all forwarded addresses')
  t.match(claims.find((c: { id: string }) => c.id === genuine.id), { proof: 'PROVEN', sourceIp: '198.51.100.7' }, "the reinstalled box's claim stays, with its id")
  t.equal((await decide(ctx, box.admin, box.id, genuine.id, 'approve')).statusCode, 200, "so the admin's Accept works")
  signers.set(ctx, newKey)
  t.match((await poll(ctx, reinstalled.json().serverId)).json(), { status: 'APPROVED' })
})

t.test('claims without a proven key never push out claims with one, from however many addresses', async (t) => {
  const ctx = await testApp(t, { REPLAY_REGISTRATION_RATE_LIMIT_MAX: '1000' })
  const box = await approvedBox(t, ctx)
  for (let i = 1; i <= MAX_CLAIMS_PER_BOX; i++) {
    await registerFrom(ctx, `198.51.100.${i}`, proven(ctx, boxKey()))
    ctx.clock.advance(1000)
  }
  const provenIds = (await adminView(ctx, box.admin, box.id)).claims.map((c: { id: string }) => c.id).sort()
  t.equal(provenIds.length, MAX_CLAIMS_PER_BOX)
  for (let i = 1; i <= 20; i++) {
    const res = await registerFrom(ctx, `203.0.113.${i}`, { serverUrl: 'http://attacker.example/' })
    t.equal(res.statusCode, 200)
    t.equal((await poll(ctx, res.json().serverId)).statusCode, 404, 'no room: the unproven claim is dropped, not a proven one')
    ctx.clock.advance(1000)
  }
  t.same((await adminView(ctx, box.admin, box.id)).claims.map((c: { id: string }) => c.id).sort(), provenIds, 'the proven claims stay, ids unchanged')
})

t.test('boxes never approved are bounded overall, the oldest expiring; their registrations are told a bounded number of times', async (t) => {
  const ctx = await testApp(t, { REPLAY_REGISTRATION_RATE_LIMIT_MAX: '1000' })
  const first = (await registerFrom(ctx, '198.51.100.1', { deviceId: 'first-box' })).json()
  for (let i = 0; i < MAX_WAITING_BOXES + 20; i++) {
    ctx.clock.advance(1000)
    t.equal((await registerFrom(ctx, `2001:db8::${i.toString(16)}`, { deviceId: randomUUID() })).statusCode, 200)
  }
  const waiting = await ctx.app.db.selectFrom('replay_servers').select('device_id').where('status', '=', 'PENDING').execute()
  t.equal(waiting.length, MAX_WAITING_BOXES, 'at most this many wait')
  t.notOk(waiting.some((row) => row.device_id === 'first-box'), 'the oldest expired')
  t.equal((await poll(ctx, first.serverId)).statusCode, 404, 'its serverId answers 404: a real box registers again')
  const told = await ctx.app.db.selectFrom('outbox_events').select('id').where('type', '=', 'replay_server.registered').execute()
  t.equal(told.length, MAX_WAITING_BOXES_TOLD, 'registrations told while few wait, then no more')
  const admin = await adminOf(ctx)
  const areaId = await area(ctx)
  const newest = await ctx.app.db.selectFrom('replay_servers').select('id').orderBy('created_at', 'desc').executeTakeFirstOrThrow()
  t.equal((await approve(ctx, admin, newest.id, { areaId })).statusCode, 200, 'an admin approves the box they expect as before')
})

t.test('sourceOf and claimsToDrop: an IPv6 /64 is one source; unproven claims never push out proven ones', async (t) => {
  t.equal(sourceOf('2001:db8:1:2::1'), sourceOf('2001:0db8:0001:0002:ffff:0:0:9'))
  t.not(sourceOf('2001:db8:1:2::1'), sourceOf('2001:db8:1:3::1'))
  t.equal(sourceOf('203.0.113.9'), '203.0.113.9')
  t.equal(sourceOf('10.0.0.1 (forwarded, not verified)'), sourceOf('10.0.0.2 (forwarded, not verified)'))
  const claim = (id: string, source: string, proven: boolean, updatedAt: string) => ({ id, source, proven, updatedAt })
  const others = [claim('a', 's1', true, '1'), claim('b', 's2', false, '2'), claim('c', 's1', false, '3')]
  t.same(claimsToDrop(claim('new', 's1', false, '9'), others), ['c'], 'from its source, the unproven one')
  t.same(claimsToDrop(claim('new', 's1', false, '9'), [claim('a', 's1', true, '1'), claim('c', 's1', true, '3')]), ['new'], 'no unproven one to drop: itself')
  t.same(claimsToDrop(claim('new', 's1', true, '9'), [claim('a', 's1', true, '1'), claim('c', 's1', true, '3')]), ['a'], 'a proven one pushes out the least recent')
})
