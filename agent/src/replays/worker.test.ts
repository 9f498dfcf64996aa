// The replay worker's local clips: one cut for a replay the server no longer lists (its player
// deleted it, or staff took it down, while the box uploaded) does not stay on the box.
import t from 'tap'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DeviceReplay } from '@club/contract'
import { createLogger } from '../log.js'
import { ReplayWorker } from './worker.js'

t.test('a cut clip of a replay no longer listed is removed at the next pick-up; a listed one is kept for its upload', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'club-worker-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const pendingDir = join(dir, 'replay-uploads')
  mkdirSync(pendingDir)
  const clip = (id: string) => {
    const clipPath = join(dir, `${id}.mp4`)
    writeFileSync(clipPath, 'people on court')
    writeFileSync(join(pendingDir, `${id}.json`), JSON.stringify({ clipPath, duration: 10 }))
    return clipPath
  }
  const gone = clip('deleted-replay')
  const kept = clip('listed-replay')
  const listed: DeviceReplay = { id: 'listed-replay', kind: 'CLIP', status: 'UPLOADING', cameraId: 'cam-1', start: '2026-03-01T10:00:00.000Z', end: '2026-03-01T10:00:10.000Z' }
  const abort = new AbortController()
  const reports: string[] = []
  const worker = new ReplayWorker({
    client: {
      waiting: async () => [listed],
      report: async (id, change) => {
        reports.push(`${id}:${change.status}`)
        // Stop after the first report: what is checked is what the pick-up did before its steps.
        abort.abort()
        throw new Error('not now')
      }
    },
    cut: async () => {
      throw new Error('no cut expected')
    },
    bucket: async () => {
      throw new Error('no bucket')
    },
    stateDir: dir,
    uploadAttempts: 1,
    flushSeconds: 0,
    log: createLogger('silent'),
    signal: abort.signal
  })
  await worker.pickUp()
  t.notOk(existsSync(gone), 'the clip of the replay the server no longer lists is removed')
  t.notOk(existsSync(join(pendingDir, 'deleted-replay.json')), 'and its note')
  t.ok(existsSync(kept), 'the listed one stays for its upload')
  t.same(reports, ['listed-replay:UPLOADING'], 'the listed one is taken up')
})
