import t from 'tap'
import type { AgentCamera } from '@club/contract'
import { cameraLines, waitingFor } from './view.js'

const base = { serverUrl: 'https://api.example.org', deviceId: 'box-7', hostname: 'court7', area: null, displayName: null }

t.test('what the box waits for, in words', async (t) => {
  t.match(waitingFor({ ...base, status: 'UNREGISTERED', connected: false }), {
    headline: 'Not registered: the server is unreachable',
    detail: /https:\/\/api\.example\.org cannot be reached/,
    tone: 'bad'
  })
  t.match(waitingFor({ ...base, status: 'PENDING', connected: true }), { headline: 'Waiting for approval', detail: /device id box-7, hostname court7\.$/ })
  t.match(waitingFor({ ...base, status: 'APPROVED', connected: true, area: { id: 'area-1' }, displayName: 'Court 7' }), {
    headline: 'Approved: recording',
    detail: 'Area area-1, as “Court 7”.',
    tone: 'ok'
  })
  t.match(waitingFor({ ...base, status: 'APPROVED', connected: false, area: { id: 'area-1' } }).detail, /last approved configuration/)
  t.match(waitingFor({ ...base, status: 'REJECTED', connected: true }), { headline: 'Rejected', tone: 'bad' })
  t.match(waitingFor({ ...base, status: 'REVOKED', connected: true }), { headline: 'Revoked', tone: 'bad' })
})

const camera = (over: Partial<AgentCamera>): AgentCamera => ({
  id: 'cam-1', state: 'recording', feed: 'feed', pid: 1, runningSince: null, restarts: 0, lastSegmentAt: null, error: null, ...over
})
const NOW = Date.parse('2026-03-01T10:00:00.000Z')

t.test("a camera's state, feed, last segment and problems in words", async (t) => {
  t.same(cameraLines(camera({ lastSegmentAt: '2026-03-01T09:59:58.000Z' }), NOW), { state: 'Recording', feed: 'main feed', lastSegment: 'just now', problems: [] })
  const restarting = cameraLines(camera({ state: 'restarting', restarts: 4, feed: 'feed2' }), NOW)
  t.equal(restarting.feed, 'second feed')
  t.match(restarting.problems, [/^Feed unreachable: .*4 restarts/, /second feed is in use/])
  t.match(cameraLines(camera({ state: 'stalled', lastSegmentAt: '2026-03-01T09:59:00.000Z' }), NOW).problems, [/^Stalled: no new footage since 60 s ago/])
  t.match(cameraLines(camera({ error: 'LUT /etc/c.cube cannot be read (ENOENT)' }), NOW).problems, [/^LUT missing: LUT \/etc\/c\.cube/])
  t.match(cameraLines(camera({ error: 'LUT /etc/c.cube cannot be read (EACCES)' }), NOW).problems, [/^LUT unusable/])
  t.equal(cameraLines(camera({ state: 'stopped' }), NOW).lastSegment, 'none yet')
})
