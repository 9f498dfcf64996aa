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

t.test("a match's upload holds while a player's clip uploads, and keeps to uploadMaxBytesPerSecond; the clip's upload is not paced", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'club-worker-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const match: DeviceReplay = { id: 'match-1', kind: 'MATCH', status: 'REQUESTED', cameraId: 'cam-1', start: '2026-03-01T10:00:00.000Z', end: '2026-03-01T11:30:00.000Z' }
  const clip: DeviceReplay = { id: 'clip-1', kind: 'CLIP', status: 'REQUESTED', cameraId: 'cam-1', start: '2026-03-01T10:10:00.000Z', end: '2026-03-01T10:10:30.000Z' }
  const listed = new Map([[match.id, match]])
  const turns = (n: number) => (async () => { for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r)) })()
  const cap = 64 * 1024
  let matchSlices = 0
  let clipSawPace: boolean | undefined
  let slicesWhileClipUploaded: number | undefined
  let pacedMs = 0
  let capped = false
  let worker!: ReplayWorker
  const abort = new AbortController()
  t.teardown(() => abort.abort())
  const bucket = {
    url: 'file:///clips',
    upload: async (_path: string, key: string, options?: UploadOptions) => {
      if (key.includes('clip-1')) {
        clipSawPace = !!options?.pace
        const before = matchSlices
        await turns(50)
        slicesWhileClipUploaded = matchSlices - before
        return 'file:///clips/clip-1.mp4'
      }
      // The match, in slices of 16 KiB, uncapped at first: the player asks for a clip once it is under
      // way, and the match goes on sending (a turn of the event loop between slices) until it is stored.
      for (let i = 0; i < 4; i++) {
        await options!.pace!(16 * 1024)
        matchSlices++
      }
      listed.set(clip.id, clip)
      void worker.pickUp()
      for (let i = 0; slicesWhileClipUploaded === undefined && i < 100_000; i++) {
        await options!.pace!(16 * 1024)
        matchSlices++
        await turns(1)
      }
      // Then capped: a second's worth at once, and the next 96 KiB over 1.5 s, on any machine.
      capped = true
      const started = performance.now()
      for (let i = 0; i < 10; i++) {
        await options!.pace!(16 * 1024)
        matchSlices++
      }
      pacedMs = performance.now() - started
      return 'file:///clips/match-1.mp4'
    },
    remove: async () => {},
    signedUrl: async () => ''
  } as Bucket
  worker = new ReplayWorker({
    client: {
      waiting: async () => [...listed.values()],
      report: async (id, change) => {
        if (change.status === 'READY') listed.delete(id)
      }
    },
    cut: async (replay) => {
      const path = join(dir, `${replay.id}.mp4`)
      writeFileSync(path, 'footage')
      return { path, duration: 1 }
    },
    bucket: async () => bucket,
    stateDir: dir,
    uploadAttempts: 1,
    flushSeconds: 0,
    uploadMaxBytesPerSecond: () => (capped ? cap : undefined),
    log: createLogger('silent'),
    signal: abort.signal
  })
  await worker.pickUp()
  await worker.matchesDone()
  await worker.pickUp()
  t.equal(clipSawPace, false, "the clip's upload is not paced")
  t.ok(slicesWhileClipUploaded !== undefined && slicesWhileClipUploaded <= 1, `the match sent ${slicesWhileClipUploaded} slice(s) while the clip uploaded (at most the one already let through)`)
  // 160 KiB at 64 KiB/s: the first 64 KiB at once, 96 KiB after; a throttle only ever adds waits.
  t.ok(pacedMs >= 1_450, `the match kept to the cap: ${pacedMs.toFixed(0)} ms for 160 KiB`)
})
