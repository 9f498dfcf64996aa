// `club rollouts ...` against the test app's database, as an operator without a token would.
import t from 'tap'
import { testApp } from '../test-support/app.js'
import { storeRelease } from '../test-support/agent-releases.js'
import { approve, area, adminOf, club, registeredBox } from '../replay-servers/test-helpers.js'

t.test('an operator creates, lists, shows, pauses, resumes and cancels a rollout from a shell', async (t) => {
  const ctx = await testApp(t)
  const admin = await adminOf(ctx)
  const areaId = await area(ctx)
  await storeRelease(ctx.app.db, ctx.config, '1.1.0')
  const ids: string[] = []
  for (const deviceId of ['box-a', 'box-b', 'box-c']) {
    const { id } = await registeredBox(ctx, { deviceId })
    t.equal((await approve(ctx, admin, id, { areaId })).statusCode, 200)
    ids.push(id)
  }

  const made = await club(ctx, 'rollouts', 'create', '1.1.0', '--canaries', ids[0]!, '--groups', '50,50', '--error-threshold', '10', '--health-seconds', '0', '--area', areaId)
  t.equal(made.code, 0, made.err)
  t.match(made.json, { version: '1.1.0', status: 'RUNNING', createdBy: null, area: { id: areaId }, healthSeconds: 0, errorThresholdPercent: 10 })
  t.same(made.json.groups.map((g: any) => [g.percent, g.boxes.length, g.status]), [[null, 1, 'OPEN'], [50, 1, 'WAITING'], [50, 1, 'WAITING']])
  const id = made.json.id

  const listed = await club(ctx, 'rollouts', 'list', '--status', 'RUNNING')
  t.equal(listed.code, 0)
  t.match(listed.json, { items: [{ id }], _total: 1 })
  t.match((await club(ctx, 'rollouts', 'show', id)).json, { id, groups: [{ boxes: [{ id: ids[0], state: 'OFFERED' }] }] })

  t.equal((await club(ctx, 'rollouts', 'pause', id)).json.status, 'PAUSED')
  const twice = await club(ctx, 'rollouts', 'pause', id)
  t.equal(twice.code, 1)
  t.match(twice.err, /the rollout is PAUSED; only a RUNNING rollout can be paused/)
  t.equal((await club(ctx, 'rollouts', 'resume', id)).json.status, 'RUNNING')
  t.equal((await club(ctx, 'rollouts', 'cancel', id)).json.status, 'CANCELLED')

  const bad = await club(ctx, 'rollouts', 'create', '9.9.9', '--groups', '100', '--error-threshold', '10')
  t.equal(bad.code, 1)
  t.match(bad.err, /version 9\.9\.9 is not an uploaded release/)
  const sum = await club(ctx, 'rollouts', 'create', '1.1.0', '--groups', '50,40', '--error-threshold', '10')
  t.match(sum.err, /groups: the percents sum to 90/)
  const range = await club(ctx, 'rollouts', 'create', '1.1.0', '--groups', '100', '--error-threshold', '150')
  t.match(range.err, /errorThresholdPercent/)
  const word = await club(ctx, 'rollouts', 'create', '1.1.0', '--groups', 'half', '--error-threshold', '10')
  t.match(word.err, /--groups must be a number/)
  t.equal((await club(ctx, 'rollouts', 'create', '1.1.0', '--error-threshold', '10')).code, 2, 'no groups: a usage error')
})
