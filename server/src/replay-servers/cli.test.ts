import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { testApp } from '../test-support/app.js'
import { storeRelease } from '../test-support/agent-releases.js'
import { area, camera, club, poll, registeredBox } from './test-helpers.js'

t.test('an operator lists pending boxes, approves one and configures it from a shell', async (t) => {
  const ctx = await testApp(t)
  const areaId = await area(ctx)
  const { id, serverId } = await registeredBox(ctx, { hostname: 'replay-01' })
  ctx.clock.advance(1000)
  await registeredBox(ctx, { deviceId: 'box-2' })

  const pending = await club(ctx, 'devices', 'list', '--status', 'PENDING')
  t.equal(pending.code, 0)
  t.equal(pending.json._total, 2)
  // Newest first: the box plugged in last is on the first line.
  t.same(pending.json.items.map((b: { deviceId: string }) => b.deviceId), ['box-2', 'box-1'])
  t.match(pending.json.items[1], { id, deviceId: 'box-1', hostname: 'replay-01', status: 'PENDING' })
  t.notOk(JSON.stringify(pending.json).includes(serverId))

  const approved = await club(ctx, 'devices', 'approve', id, '--area', areaId, '--display-name', 'Court 1 box')
  t.equal(approved.code, 0)
  t.match(approved.json, { id, status: 'APPROVED', area: { id: areaId }, displayName: 'Court 1 box' })

  const file = join(ctx.dir, 'config.json')
  writeFileSync(file, JSON.stringify({ cameras: [camera('cam-1')] }))
  const configured = await club(ctx, 'devices', 'config', id, '--file', file)
  t.equal(configured.code, 0)
  t.same(configured.json.config, { cleanupEnabled: false, cameras: [camera('cam-1')] })

  const notYet = await club(ctx, 'devices', 'target-version', id, '1.5.0')
  t.not(notYet.code, 0, 'no release of 1.5.0 yet')
  await storeRelease(ctx.app.db, ctx.config, '1.5.0')
  t.equal((await club(ctx, 'devices', 'target-version', id, '1.5.0')).json.targetVersion, '1.5.0')

  const status = (await poll(ctx, serverId, 'version=1.4.0&architecture=arm64')).json()
  t.match(status, { status: 'APPROVED', area: { id: areaId }, config: { cameras: [camera('cam-1')] }, pendingUpdate: { version: '1.5.0', release: { path: '/apis/v2/replay-servers/device/agent-releases/1.5.0/all' } } })

  const shown = await club(ctx, 'devices', 'show', id)
  t.match(shown.json, { id, version: '1.4.0', targetVersion: '1.5.0' })
  t.equal((await club(ctx, 'devices', 'target-version', id, '--clear')).json.targetVersion, null)

  t.equal((await club(ctx, 'devices', 'rotate-token', id)).code, 0)
  t.not((await poll(ctx, serverId)).json().accessToken, status.accessToken, 'the box gets a new token')
  t.equal((await club(ctx, 'devices', 'revoke', id)).json.status, 'REVOKED')
  t.same((await poll(ctx, serverId)).json(), { status: 'REVOKED' })
  t.equal((await club(ctx, 'devices', 'reject', id)).json.status, 'REJECTED')
  t.same((await club(ctx, 'devices', 'delete', id)).json, { id, deleted: true })
  t.equal((await club(ctx, 'devices', 'list')).json._total, 1)
})

t.test('the CLI refuses bad input with a message and a non-zero exit', async (t) => {
  const ctx = await testApp(t)
  const { id } = await registeredBox(ctx)
  const file = join(ctx.dir, 'bad.json')
  writeFileSync(file, JSON.stringify({ cameras: [camera('cam-1', { rotation: 720 })] }))
  const cases: Array<[string[], number, RegExp]> = [
    [['devices', 'config', id, '--file', file], 1, /config\.cameras\.0\.rotation must be <= 360/],
    [['devices', 'config', id, '--file', join(ctx.dir, 'missing.json')], 2, /missing\.json/],
    [['devices', 'approve', id], 2, /missing required flag --area/],
    [['devices', 'approve', id, '--area', 'nowhere'], 1, /areaId nowhere is not a known area/],
    [['devices', 'show'], 2, /usage: club devices show ID/],
    [['devices', 'show', 'no-such-id'], 1, /no replay server no-such-id/],
    [['devices', 'list', '--status', 'LOST'], 1, /flags\.status must be one of PENDING, APPROVED, REJECTED, REVOKED/],
    [['devices', 'list', '--online', 'maybe'], 2, /--online must be true or false/],
    [['devices', 'target-version', id, 'latest'], 1, /body\.version/]
  ]
  for (const [argv, code, message] of cases) {
    const res = await club(ctx, ...argv)
    t.equal(res.code, code, argv.join(' '))
    t.match(res.err, message, argv.join(' '))
  }
  t.same((await club(ctx, 'devices', 'show', id)).json.config, null, 'the bad configuration changed nothing')
})

t.test('an operator sees a claim beside its box and rejects or accepts it from a shell', async (t) => {
  const ctx = await testApp(t)
  const { id, serverId } = await registeredBox(ctx)
  const first = (await ctx.app.inject({ method: 'POST', url: '/apis/v2/replay-servers/device', remoteAddress: '203.0.113.9', payload: { deviceId: 'box-1' } })).json()
  const shown = await club(ctx, 'devices', 'show', id)
  t.match(shown.json.claims, [{ sourceIp: '203.0.113.9', proof: 'NONE' }])
  const rejected = await club(ctx, 'devices', 'reject-claim', id, shown.json.claims[0].id)
  t.equal(rejected.code, 0)
  t.same(rejected.json.claims, [])
  t.equal((await poll(ctx, first.serverId)).statusCode, 404)

  const second = (await ctx.app.inject({ method: 'POST', url: '/apis/v2/replay-servers/device', payload: { deviceId: 'box-1' } })).json()
  const claimId = (await club(ctx, 'devices', 'show', id)).json.claims[0].id
  t.equal((await club(ctx, 'devices', 'approve-claim', id, claimId)).code, 0)
  t.equal((await poll(ctx, serverId)).statusCode, 404, 'the old serverId stops')
  t.same((await poll(ctx, second.serverId)).json(), { status: 'PENDING' }, 'the claim is the box now')
  const usage = await club(ctx, 'devices', 'approve-claim', id)
  t.not(usage.code, 0)
  t.match(usage.err, /usage: club devices approve-claim ID CLAIM_ID/)
})
