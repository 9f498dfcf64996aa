import t from 'tap'
import type { DeviceReplay } from '@club/contract'
import { clipHttpError } from '../agent.js'
import { ClipError } from '../clips/export.js'
import { DecodersBusyError } from '../decoders.js'
import { HttpError } from '../http.js'
import { askAgainAfterSeconds, cutNotBefore, exportFailureReason, laneSteps, nextUploadAttempt, planReplays, uploadRetryDelay } from './plan.js'

const replay = (id: string, status: DeviceReplay['status']): DeviceReplay => ({ id, kind: 'CLIP', status, cameraId: 'cam-a', start: '2026-03-01T10:00:00Z', end: '2026-03-01T10:00:10Z' })

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
  t.equal(exportFailureReason(410), 'recording_ended', 'a recording that ended before the replay did: its own reason, not a short clip')
  t.equal(exportFailureReason(422), 'camera_error')
  t.equal(exportFailureReason(undefined), 'camera_error')
})

t.test('cutNotBefore: the end plus the keyframe margin', async (t) => {
  t.equal(cutNotBefore({ end: '2026-03-01T10:00:10.000Z' }, 2.5), Date.parse('2026-03-01T10:00:12.500Z'))
})

t.test('askAgainAfterSeconds: a full queue or footage still being written is waited for as advised; anything else is final', async (t) => {
  const writing = new ClipError(503, 'the footage of camera cam-a up to 10:00:10 is still being written: ask again in 4 s', 4)
  t.equal(askAgainAfterSeconds(writing), 4, "the exporter's 503")
  t.equal(askAgainAfterSeconds(clipHttpError(writing)), 4, 'the same through the decoders, as the local API answers it (its Retry-After)')
  t.equal(askAgainAfterSeconds(new DecodersBusyError('2 exports are already waiting', 30)), 30, 'a full queue')
  t.equal(askAgainAfterSeconds(new HttpError(503, 'no Retry-After')), undefined, 'a 503 that does not say when: final')
  t.equal(askAgainAfterSeconds(new HttpError(503, 'nonsense', { 'retry-after': 'soon' })), undefined)
  t.equal(askAgainAfterSeconds(new ClipError(410, 'the recording of camera cam-a ended')), undefined, 'a recording that ended: final')
  t.equal(askAgainAfterSeconds(new ClipError(404, 'no footage')), undefined)
  t.equal(askAgainAfterSeconds(new Error('ffmpeg failed')), undefined)
  t.equal(askAgainAfterSeconds(undefined), undefined)
})

t.test('laneSteps: clips in their lane as listed; matches in theirs, each taken once', async (t) => {
  const match = (id: string): DeviceReplay => ({ ...replay(id, 'REQUESTED'), kind: 'MATCH' })
  const steps = planReplays([match('m1'), replay('c1', 'REQUESTED'), match('m2'), replay('c2', 'EXPORTING')], new Map())
  const lanes = laneSteps(steps, new Set(['m1']))
  t.same(lanes.clips.map((s) => s.replay.id), ['c1', 'c2'], 'a clip listed after a match is not behind it')
  t.same(lanes.matches.map((s) => s.replay.id), ['m2'], 'a match the lane already holds is not taken again')
  const older = { ...replay('old', 'REQUESTED') } as Partial<DeviceReplay>
  delete older.kind
  t.same(laneSteps(planReplays([older as DeviceReplay], new Map()), new Set()).clips.map((s) => s.replay.id), ['old'], 'no kind: a clip')
})

t.test('nextUploadAttempt: attempts in a row without progress are counted; progress starts the count again', async (t) => {
  t.equal(nextUploadAttempt(1, false, 3), 2)
  t.equal(nextUploadAttempt(3, false, 3), undefined, 'given up')
  t.equal(nextUploadAttempt(3, true, 3), 2, 'the store took more parts: not given up')
  t.equal(nextUploadAttempt(1, true, 1), 2)
  t.equal(nextUploadAttempt(2, false, 1), undefined)
})
