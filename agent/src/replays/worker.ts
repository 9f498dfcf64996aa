// Takes up the replays the server lists for this box in two lanes: a player's CLIPs one at a time, as
// they come; MATCHes (a booking's hours, one per camera) one at a time in a lane of their own, so a
// clip never waits behind a match. Cuts each with the box's clip export, uploads it to the
// configuration's bucket with retries and backoff, reports each step, and removes the local clip once
// stored. A clip cut but not yet stored is written down in the state folder first, so a box restarted
// mid-upload uploads it again instead of cutting it again; a match's note also holds where its
// resumable upload stands, so it goes on from the parts the store has. A match's upload is paced:
// held while a clip uploads, and within the configuration's uploadMaxBytesPerSecond.
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { replayClipKey, type DeviceReplay } from '@club/contract'
import type { Bucket, ResumableUpload, UploadOptions } from '@club/storage'
import type { Logger } from '../log.js'
import type { ReplayClient } from './client.js'
import { UploadPace } from './pace.js'
import { askAgainAfterSeconds, cutNotBefore, exportFailureReason, laneSteps, nextUploadAttempt, planReplays, uploadRetryDelay, type ReplayStep } from './plan.js'

/** A clip cut for a replay, as the export answers it. */
export interface CutClip {
  path: string
  duration: number
}

export interface ReplayWorkerOptions {
  client: Pick<ReplayClient, 'waiting' | 'report'>
  /**
   * Cuts the replay's whole interval with the box's export (a MATCH at the lowest priority, with its
   * chapters, outside the local API's export queue: the match lane is its own queue of one). Throws an error with `statusCode`: 404 no
   * footage, 410 the recording ended before the replay's end; 429 (queue full) or 503 (footage still
   * being written) with `retryAfterSeconds` or a `retry-after` header, and the cut is asked for again then.
   */
  cut(replay: DeviceReplay): Promise<CutClip>
  /** The bucket of the configuration now in force; throws when none is configured or it cannot be opened. */
  bucket(): Promise<Bucket>
  /** Where clips cut but not yet stored are written down. */
  stateDir: string
  uploadAttempts: number
  /** Seconds after a replay's end before it is cut (more than the cameras' keyframe interval). */
  flushSeconds: number
  /** The configuration's uploadMaxBytesPerSecond, for a match's upload; undefined: no cap. */
  uploadMaxBytesPerSecond?: () => number | undefined
  now?: () => number
  log: Logger
  signal: AbortSignal
  random?: () => number
}

interface PendingUpload {
  clipPath: string
  duration: number
  /** A match's resumable upload, as far as the store acknowledged it. */
  resume?: ResumableUpload
}

export class ReplayWorker {
  private busy: Promise<void> | undefined
  private again = false
  private readonly pendingDir: string
  /** The match lane: the matches taken (queued or being worked on), in order, and its one running loop. */
  private readonly matchesTaken = new Set<string>()
  private readonly matchQueue: ReplayStep[] = []
  private matchLane: Promise<void> | undefined
  private readonly pace: UploadPace
  private readonly cutting = new Set<string>()

  constructor(private readonly options: ReplayWorkerOptions) {
    this.pendingDir = join(options.stateDir, 'replay-uploads')
    const now = options.now ?? Date.now
    this.pace = new UploadPace({
      maxBytesPerSecond: () => options.uploadMaxBytesPerSecond?.(),
      now,
      sleep: (ms) => sleep(ms, undefined, { signal: options.signal })
    })
  }

  /**
   * Matches being cut now (0 or 1): the box's update waits for them as for an export. One waiting its
   * turn loses nothing to a restart, and one uploading goes on from its parts afterwards.
   */
  get matchesBeingCut(): number {
    return this.cutting.size
  }

  /** Settles once the match lane has nothing left to do (tests; a shutdown that wants to wait). */
  async matchesDone(): Promise<void> {
    while (this.matchLane) await this.matchLane
  }

  /** Fetches the waiting replays and works through them; called again while busy, it fetches once more after. */
  pickUp(): Promise<void> {
    if (this.busy) {
      this.again = true
      return this.busy
    }
    this.busy = this.loop()
    return this.busy
  }

  /**
   * Pick-ups until none was asked for meanwhile. The check and the end are one synchronous step: a
   * pick-up asked for between them (a match's cut starting as the last pick-up ends) is never lost.
   */
  private async loop(): Promise<void> {
    for (;;) {
      this.again = false
      try {
        await this.drain()
      } catch (err) {
        this.options.log.warn({ err: (err as Error).message }, 'fetching waiting replays failed; the next poll tries again')
      }
      if (!this.again || this.options.signal.aborted) {
        this.busy = undefined
        return
      }
    }
  }

  private async drain(): Promise<void> {
    const waiting = await this.options.client.waiting()
    await this.forgetUnlisted(waiting)
    const { clips, matches } = laneSteps(planReplays(waiting, await this.pendingUploads()), this.matchesTaken)
    this.takeMatches(matches)
    for (const step of clips) {
      if (this.options.signal.aborted) return
      try {
        await this.run(step)
      } catch (err) {
        // A report the server did not take: the replay is still listed, and the next pick-up does it again.
        this.options.log.warn({ replayId: step.replay.id, err: (err as Error).message }, 'a replay step failed; it is taken up again on the next pick-up')
      }
    }
  }

  /** Queues matches in their lane and starts it if idle: it runs beside the clip lane, one match at a time. */
  private takeMatches(steps: readonly ReplayStep[]): void {
    for (const step of steps) {
      this.matchesTaken.add(step.replay.id)
      this.matchQueue.push(step)
    }
    if (this.matchLane || this.matchQueue.length === 0) return
    this.matchLane = (async () => {
      for (let step = this.matchQueue.shift(); step && !this.options.signal.aborted; step = this.matchQueue.shift()) {
        try {
          await this.run(step)
        } catch (err) {
          this.options.log.warn({ replayId: step.replay.id, err: (err as Error).message }, 'a match step failed; it is taken up again on the next pick-up')
        } finally {
          this.matchesTaken.delete(step.replay.id)
        }
      }
      // Stopping: what was queued is listed again once the box is back.
      for (const step of this.matchQueue.splice(0)) this.matchesTaken.delete(step.replay.id)
    })().finally(() => {
      this.matchLane = undefined
    })
  }

  private async run(step: ReplayStep): Promise<void> {
    const { client, log } = this.options
    const replay = step.replay
    let pending: PendingUpload
    if (step.kind === 'upload') {
      const noted = await this.readPending(replay.id)
      pending = { clipPath: step.clipPath, duration: noted?.duration ?? 0, ...(noted?.resume ? { resume: noted.resume } : {}) }
    } else {
      await client.report(replay.id, { status: 'EXPORTING' })
      const wait = cutNotBefore(replay, this.options.flushSeconds) - (this.options.now ?? Date.now)()
      if (wait > 0) await sleep(wait, undefined, { signal: this.options.signal })
      let clip: CutClip
      try {
        if (replay.kind === 'MATCH') this.cutting.add(replay.id)
        clip = await this.cutWhole(replay).finally(() => this.cutting.delete(replay.id))
      } catch (err) {
        // Stopping: the replay stays EXPORTING, and the box cuts it again once started (planReplays).
        if (this.options.signal.aborted) throw err
        const reason = exportFailureReason((err as { statusCode?: number }).statusCode)
        log.warn({ replayId: replay.id, cameraId: replay.cameraId, reason, err: (err as Error).message }, 'a replay could not be cut')
        await client.report(replay.id, { status: 'FAILED', reason, message: (err as Error).message.slice(0, 500) })
        return
      }
      pending = { clipPath: clip.path, duration: clip.duration }
      await this.writePending(replay.id, pending)
    }
    await client.report(replay.id, { status: 'UPLOADING' })
    const location = await this.upload(replay, pending)
    if (location === null) {
      await client.report(replay.id, { status: 'FAILED', reason: 'upload_failed' })
    } else {
      const { size, sha256 } = await fileFacts(pending.clipPath)
      await client.report(replay.id, { status: 'READY', location, durationSeconds: pending.duration, sizeBytes: size, sha256 })
      log.info({ replayId: replay.id, cameraId: replay.cameraId, sizeBytes: size, durationSeconds: pending.duration }, 'replay stored')
    }
    // Stored (or given up): the box keeps no copy.
    await rm(pending.clipPath, { force: true })
    await rm(this.pendingPath(replay.id), { force: true })
  }

  /**
   * The replay's clip, asked for again as long as each refusal advises (a full export queue, its
   * footage still being written): a clip cut earlier would lack the replay's last seconds.
   */
  private async cutWhole(replay: DeviceReplay): Promise<CutClip> {
    for (;;) {
      try {
        return await this.options.cut(replay)
      } catch (err) {
        const retryInSeconds = askAgainAfterSeconds(err)
        if (retryInSeconds === undefined) throw err
        this.options.log.info({ replayId: replay.id, cameraId: replay.cameraId, retryInSeconds, err: (err as Error).message }, 'a replay cannot be cut yet; asking again')
        await sleep(retryInSeconds * 1000, undefined, { signal: this.options.signal })
      }
    }
  }

  /**
   * Uploads with retries and backoff; answers the location, or null once every attempt failed. A
   * clip's upload holds the matches' uploads while it runs. A match's is resumable (where it stands is
   * written down with its note after each part) and paced; an attempt that got further does not count
   * towards giving up.
   */
  private async upload(replay: DeviceReplay, pending: PendingUpload): Promise<string | null> {
    const { uploadAttempts, log, signal } = this.options
    const random = this.options.random ?? Math.random
    for (let attempt = 1; ;) {
      let progressed = false
      const options: UploadOptions | undefined = replay.kind === 'MATCH'
        ? {
            ...(pending.resume ? { resume: pending.resume } : {}),
            onProgress: async (state) => {
              progressed = true
              pending.resume = structuredClone(state)
              await this.writePending(replay.id, pending)
            },
            pace: async (bytes) => {
              // Stopping: the match stops where it is, and goes on from there once the box is back.
              signal.throwIfAborted()
              await this.pace.match(bytes)
            }
          }
        : undefined
      const clipUploaded = options ? undefined : this.pace.clipUploading()
      try {
        const bucket = await this.options.bucket()
        // The one key the server takes as this replay's clip.
        return await bucket.upload(pending.clipPath, replayClipKey(replay), options)
      } catch (err) {
        if (signal.aborted) throw err
        const next = nextUploadAttempt(attempt, progressed, uploadAttempts)
        if (next === undefined) {
          log.error({ replayId: replay.id, attempts: attempt, err: (err as Error).message }, 'a replay could not be uploaded')
          return null
        }
        const retryInMs = uploadRetryDelay(attempt, random)
        log.warn({ replayId: replay.id, attempt, progressed, retryInMs, err: (err as Error).message }, 'uploading a replay failed; trying again')
        attempt = next
        await sleep(retryInMs, undefined, { signal })
      } finally {
        clipUploaded?.()
      }
    }
  }

  private pendingPath(id: string): string {
    return join(this.pendingDir, `${id.replace(/[^A-Za-z0-9-]/g, '_')}.json`)
  }

  private async writePending(id: string, pending: PendingUpload): Promise<void> {
    await mkdir(this.pendingDir, { recursive: true, mode: 0o700 })
    await writeFile(this.pendingPath(id), JSON.stringify(pending))
  }

  private async readPending(id: string): Promise<PendingUpload | undefined> {
    try {
      return JSON.parse(await readFile(this.pendingPath(id), 'utf8')) as PendingUpload
    } catch {
      return undefined
    }
  }

  /**
   * Removes the clips cut for replays the server no longer lists (deleted by their player or taken
   * down while this box worked on them, or READY before the clip was removed here): no step would ever
   * take them up, and a clip of people is not kept on the box for nothing.
   */
  private async forgetUnlisted(waiting: readonly DeviceReplay[]): Promise<void> {
    const listed = new Set(waiting.map((replay) => this.pendingPath(replay.id)))
    let names: string[] = []
    try {
      names = await readdir(this.pendingDir)
    } catch {
      return
    }
    for (const name of names.filter((n) => n.endsWith('.json'))) {
      const path = join(this.pendingDir, name)
      if (listed.has(path)) continue
      const pending = await this.readPending(name.slice(0, -'.json'.length))
      if (pending) await rm(pending.clipPath, { force: true })
      await rm(path, { force: true })
      this.options.log.info({ replayId: name.slice(0, -'.json'.length) }, 'a cut clip of a replay the server no longer lists was removed')
    }
  }

  /** Clips cut and not yet stored whose file is still there, by replay id. */
  private async pendingUploads(): Promise<Map<string, string>> {
    const found = new Map<string, string>()
    let names: string[] = []
    try {
      names = await readdir(this.pendingDir)
    } catch {
      return found
    }
    for (const name of names.filter((n) => n.endsWith('.json'))) {
      const id = name.slice(0, -'.json'.length)
      const pending = await this.readPending(id)
      if (pending && (await stat(pending.clipPath).then(() => true, () => false))) found.set(id, pending.clipPath)
    }
    return found
  }
}

async function fileFacts(path: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256')
  let size = 0
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk as Buffer)
    size += (chunk as Buffer).length
  }
  return { size, sha256: hash.digest('hex') }
}
