import t from 'tap'
import type { Camera, DoNotFilm } from '@club/contract'
import { camerasToRecord } from './do-not-film.js'

const cam = (id: string, courtIds: string[], extra: Partial<Camera> = {}): Camera => ({ id, feed: `rtsp://10.0.0.1/${id}`, isEnabled: true, courtIds, ...extra })
const cameras = [cam('a', ['c1']), cam('b', ['c2']), cam('ab', ['c1', 'c2']), cam('none', []), cam('off', ['c1'], { isEnabled: false })]
const camp: DoNotFilm = { court: { id: 'c1' }, start: '2026-03-01T10:00:00.000Z', end: '2026-03-01T12:00:00.000Z' }
const enabled = (plan: ReturnType<typeof camerasToRecord>) => plan.cameras.filter((c) => c.isEnabled !== false).map((c) => c.id)

t.test('before an interval every enabled camera records, and the next decision is at its start', async (t) => {
  const plan = camerasToRecord(cameras, [camp], new Date('2026-03-01T09:00:00Z'))
  t.same(plan.paused, [])
  t.same(enabled(plan), ['a', 'b', 'ab', 'none'])
  t.same(plan.nextChangeAt, new Date(camp.start))
})

t.test("during it, every camera filming the court stops (one filming another court too), the rest go on", async (t) => {
  const plan = camerasToRecord(cameras, [camp], new Date(camp.start))
  t.same(plan.paused, ['a', 'ab'], 'from its very start')
  t.same(enabled(plan), ['b', 'none'])
  t.same(plan.nextChangeAt, new Date(camp.end))
  t.equal(plan.cameras.length, cameras.length, 'paused cameras stay known, for exports of earlier footage')
  t.equal(plan.cameras.find((c) => c.id === 'off')!.isEnabled, false, 'a disabled camera is not "paused": it was off anyway')
})

t.test('at its end the cameras record again; nothing is left to wait for', async (t) => {
  const plan = camerasToRecord(cameras, [camp], new Date(camp.end))
  t.same(plan.paused, [])
  t.equal(plan.nextChangeAt, null)
})

t.test('overlapping intervals of two courts: the earliest boundary comes next', async (t) => {
  const other: DoNotFilm = { court: { id: 'c2' }, start: '2026-03-01T11:00:00.000Z', end: '2026-03-01T11:30:00.000Z' }
  const plan = camerasToRecord(cameras, [camp, other], new Date('2026-03-01T11:10:00Z'))
  t.same(plan.paused, ['a', 'b', 'ab'])
  t.same(plan.nextChangeAt, new Date(other.end))
})

t.test('an interval whose dates do not parse holds nothing off', async (t) => {
  const plan = camerasToRecord(cameras, [{ court: { id: 'c1' }, start: 'soon', end: 'later' }], new Date('2026-03-01T11:00:00Z'))
  t.same(plan.paused, [])
  t.equal(plan.nextChangeAt, null)
})
