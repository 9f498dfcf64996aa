import t from 'tap'
import type { Camera } from '@club/contract'
import { planReconcile } from './reconcile.js'

const cam = (id: string, extra: Partial<Camera> = {}): Camera => ({ id, feed: `rtsp://10.0.0.1/${id}`, isEnabled: true, ...extra })
const ids = (plan: ReturnType<typeof planReconcile>) => ({
  start: plan.start.map((c) => c.id), stop: plan.stop, restart: plan.restart.map((c) => c.id), update: plan.update.map((c) => c.id)
})

t.test('nothing running: every enabled camera starts', async (t) => {
  t.same(ids(planReconcile([], [cam('a'), cam('b', { isEnabled: false }), cam('c')])), { start: ['a', 'c'], stop: [], restart: [], update: [] })
})

t.test('the same configuration changes nothing', async (t) => {
  t.same(ids(planReconcile([cam('a'), cam('b')], [cam('a'), cam('b')])), { start: [], stop: [], restart: [], update: [] })
})

t.test('disabled and removed cameras stop', async (t) => {
  t.same(ids(planReconcile([cam('a'), cam('b')], [cam('a', { isEnabled: false })])), { start: [], stop: ['a', 'b'], restart: [], update: [] })
})

t.test('a changed feed, fallback feed or audio restarts only that camera', async (t) => {
  const running = [cam('a'), cam('b'), cam('c'), cam('d')]
  const desired = [cam('a', { feed: 'rtsp://10.0.0.9/a' }), cam('b', { feed2: 'rtsp://10.0.0.9/b' }), cam('c', { audioCodec: 'none' }), cam('d')]
  t.same(ids(planReconcile(running, desired)), { start: [], stop: [], restart: ['a', 'b', 'c'], update: [] })
})

t.test('corrections alone restart nothing: the settings are swapped', async (t) => {
  const plan = planReconcile([cam('a'), cam('b')], [cam('a', { rotation: 90, lutPath: '/l.cube', distortion1: 0.1, videoCodec: 'hevc' }), cam('b')])
  t.same(ids(plan), { start: [], stop: [], restart: [], update: ['a'] })
  t.equal(plan.update[0]!.rotation, 90)
})

t.test('aac and an unset audio codec record the same', async (t) => {
  t.same(ids(planReconcile([cam('a')], [cam('a', { audioCodec: 'aac' })])).restart, [])
})

t.test('a mix: start, stop, restart and update at once', async (t) => {
  const plan = planReconcile([cam('a'), cam('b'), cam('c')], [cam('b', { feed: 'rtsp://x/b' }), cam('c', { scale: 0.5 }), cam('d')])
  t.same(ids(plan), { start: ['d'], stop: ['a'], restart: ['b'], update: ['c'] })
})
