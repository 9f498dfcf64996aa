import t from 'tap'
import type { DeviceReplay } from '@club/contract'
import { cutNotBefore, exportFailureReason, planReplays, uploadRetryDelay } from './plan.js'

const replay = (id: string, status: DeviceReplay['status']): DeviceReplay => ({ id, status, cameraId: 'cam-a', start: '2026-03-01T10:00:00Z', end: '2026-03-01T10:00:10Z' })

t.test('planReplays: cut what waits, upload again what a restart left cut', async (t) => {
  const waiting = [replay('r1', 'REQUESTED'), replay('r2', 'UPLOADING'), replay('r3', 'UPLOADING'), replay('r4', 'EXPORTING')]
  const steps = planReplays(waiting, new Map([['r2', '/clips/r2.mp4']]))
  t.same(
    steps.map((s) => [s.replay.id, s.kind, 'clipPath' in s ? s.clipPath : null]),
    [
      ['r1', 'export', null],
      ['r2', 'upload', '/clips/r2.mp4'],
      ['r3', 'export', null],
      ['r4', 'export', null]
    ]
  )
})

t.test('uploadRetryDelay doubles from 1 s to at most 30 s, spread by ±10%', async (t) => {
  t.same([1, 2, 3, 4, 5, 6, 7, 20].map((a) => uploadRetryDelay(a, () => 0.5)), [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000])
  t.equal(uploadRetryDelay(1, () => 0), 900)
  t.equal(uploadRetryDelay(1, () => 1), 1100)
})

t.test('exportFailureReason: no footage is its own reason', async (t) => {
  t.equal(exportFailureReason(404), 'no_footage')
  t.equal(exportFailureReason(422), 'camera_error')
  t.equal(exportFailureReason(undefined), 'camera_error')
})

t.test('cutNotBefore: the end plus the keyframe margin', async (t) => {
  t.equal(cutNotBefore({ end: '2026-03-01T10:00:10.000Z' }, 2.5), Date.parse('2026-03-01T10:00:12.500Z'))
})
