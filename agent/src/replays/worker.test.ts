// The replay worker's local clips: one cut for a replay the server no longer lists (its player
// deleted it, or staff took it down, while the box uploaded) does not stay on the box.
import t from 'tap'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DeviceReplay } from '@club/contract'
import type { Bucket, ResumableUpload, UploadOptions } from '@club/storage'
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

t.test("a match's upload cut off with the box stopping goes on, once it is back, from where the store acknowledged it", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'club-worker-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const clipPath = join(dir, 'match.mp4')
  const match: DeviceReplay = { id: 'match-1', kind: 'MATCH', status: 'REQUESTED', cameraId: 'cam-1', start: '2026-03-01T10:00:00.000Z', end: '2026-03-01T11:30:00.000Z' }
  const acknowledged: ResumableUpload = { scheme: 's3', key: 'x', size: 15, partSize: 8, uploadId: 'up-1', parts: [{ number: 1, etag: '"a"' }] }
  const calls: Array<{ resume?: ResumableUpload; paced: boolean }> = []
  const reports: string[] = []
  /** A worker as the box starts it: its own abort, the server listing `listed`, and a store that runs `upload`. */
  const box = (listed: DeviceReplay, upload: (options: UploadOptions, abort: AbortController) => Promise<string>) => {
    const abort = new AbortController()
    const bucket = {
      url: 's3://clips',
      upload: async (_path: string, _key: string, options?: UploadOptions) => {
        calls.push({ ...(options?.resume ? { resume: structuredClone(options.resume) } : {}), paced: !!options?.pace })
        return upload(options!, abort)
      },
      remove: async () => {},
      signedUrl: async () => ''
    } as Bucket
    const worker = new ReplayWorker({
      client: { waiting: async () => (reports.some((r) => r.endsWith('READY')) ? [] : [listed]), report: async (id, change) => void reports.push(`${id}:${change.status}`) },
      cut: async () => {
        writeFileSync(clipPath, 'a whole match...')
        return { path: clipPath, duration: 5400 }
      },
      bucket: async () => bucket,
      stateDir: dir,
      uploadAttempts: 3,
      flushSeconds: 0,
      log: createLogger('silent'),
      signal: abort.signal,
      random: () => 0
    })
    return { worker, abort }
  }
  const first = box(match, async (options, abort) => {
    await options.onProgress!(acknowledged)
    await options.pace!(8)
    // The box is stopped mid-way, its connection with it.
    abort.abort()
    throw new Error('the connection dropped')
  })
  await first.worker.pickUp()
  await first.worker.matchesDone()
  t.same(reports, ['match-1:EXPORTING', 'match-1:UPLOADING'], 'stopped while uploading: neither READY nor FAILED')
  t.ok(existsSync(clipPath), 'the cut match is kept for its upload')

  const second = box({ ...match, status: 'UPLOADING' }, async (options) => {
    await options.pace!(7)
    return 's3://clips/match-1.mp4'
  })
  await second.worker.pickUp()
  await second.worker.matchesDone()
  t.same(calls, [{ paced: true }, { resume: acknowledged, paced: true }], 'the second upload is handed where the first stopped')
  t.same(reports.slice(2), ['match-1:UPLOADING', 'match-1:READY'], 'not cut again: uploaded from the note, READY')
  t.notOk(existsSync(clipPath), 'the box keeps no copy once stored')
})
