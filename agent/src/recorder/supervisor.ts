// Keeps one ffmpeg per enabled camera recording: restarts it on any exit (ffmpeg may exit 0 when a
// feed drops) with backoff, kills it when its newest segment stops growing, falls back to feed2.
import { access, constants, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Camera } from '@club/contract'
import type { Logger } from '../log.js'
import { recordingArgs } from './pipeline.js'
import { planReconcile } from './reconcile.js'
import { lastLines, type FfmpegProcess, type FfmpegRunner } from './runner.js'
import { listSegments, type Segment } from './segments.js'

/** Failures in a row on one feed before trying the other. */
export const FEED_FAILURES_BEFORE_FALLBACK = 3
/** A camera whose newest segment has not grown for this many segment lengths is stalled. */
export const STALL_SEGMENTS = 3
const RESTART_CAP_MS = 30_000
/** Finished segments kept for the recording rate (bytes per hour) the health report needs. */
const RATE_SEGMENTS = 6
const HOUR_MS = 3_600_000

export type CameraState = 'starting' | 'recording' | 'restarting' | 'stalled' | 'stopped'

export interface CameraStatus {
  id: string
  name?: string
  state: CameraState
  feed: 'feed' | 'feed2'
  pid: number | null
  runningSince: string | null
  restarts: number
  lastSegmentAt: string | null
  /** Why the camera's corrections (its LUT) cannot be applied; recording goes on regardless. */
  error: string | null
}

/** What the supervisor saw of one camera's runs and segments: the facts its health report is made of. */
export interface RecorderFacts {
  /** Whether an ffmpeg runs for it now. */
  running: boolean
  /** Whether the running ffmpeg has written video (its newest segment grew since it started). */
  wroteThisRun: boolean
  /** Runs in a row that ended without recording for STALL_SEGMENTS segment lengths; 0 after a good run. */
  failuresInRow: number
  /** How the last run ended: when, ffmpeg's exit code and last stderr lines, and whether the watchdog stopped it. */
  lastExit: { at: number; code: number | null; stderr: string; stalled: boolean } | null
  /** When ffmpeg was restarted, the last hour's (ms since the epoch). */
  restartTimes: number[]
  /** Its newest finished segments (in ffmpeg's list), oldest first, at most RATE_SEGMENTS. */
  finished: Segment[]
}

/** Restart delay after `failures` quick exits in a row: 1 s doubling, at most 30 s. */
export function restartDelay(failures: number): number {
  return Math.min(1000 * 2 ** Math.max(failures - 1, 0), RESTART_CAP_MS)
}

/** Which feed the next run reads, after `failures` failures in a row on `current`. */
export function nextFeed(camera: Camera, current: 'feed' | 'feed2', failures: number): 'feed' | 'feed2' {
  if (!camera.feed2) return 'feed'
  if (failures > 0 && failures % FEED_FAILURES_BEFORE_FALLBACK === 0) return current === 'feed' ? 'feed2' : 'feed'
  return current
}

export interface CameraRecorderOptions {
  runner: FfmpegRunner
  recordingsDir: string
  segmentSeconds: number
  log: Logger
}

export class CameraRecorder {
  private state: CameraState = 'starting'
  private feed: 'feed' | 'feed2' = 'feed'
  private process?: FfmpegProcess
  private pid: number | null = null
  private runningSince: Date | null = null
  private restarts = 0
  private restartTimes: number[] = []
  private running = false
  private wroteThisRun = false
  private failuresInRow = 0
  private lastExit: RecorderFacts['lastExit'] = null
  private readonly abort = new AbortController()
  private loop?: Promise<void>
  error: string | null = null

  constructor(public camera: Camera, private readonly options: CameraRecorderOptions) {}

  get dir(): string {
    return join(this.options.recordingsDir, this.camera.id)
  }

  get recording(): boolean {
    return this.state === 'recording'
  }

  start(): void {
    this.loop = this.run()
  }

  async stop(): Promise<void> {
    this.abort.abort()
    this.state = 'stopped'
    await this.process?.stop()
    await this.loop
  }

  status(): CameraStatus {
    const newest = listSegments(this.dir).at(-1)
    return {
      id: this.camera.id,
      ...(this.camera.name ? { name: this.camera.name } : {}),
      state: this.state,
      feed: this.feed,
      pid: this.pid,
      runningSince: this.runningSince?.toISOString() ?? null,
      restarts: this.restarts,
      lastSegmentAt: newest ? new Date(newest.mtimeMs).toISOString() : null,
      error: this.error
    }
  }

  /** The facts for the health report; its folder read as the watchdog reads it (every half segment), once more per report. */
  facts(now = Date.now()): RecorderFacts {
    this.restartTimes = this.restartTimes.filter((at) => now - at < HOUR_MS)
    return {
      running: this.running,
      wroteThisRun: this.wroteThisRun,
      failuresInRow: this.failuresInRow,
      lastExit: this.lastExit,
      restartTimes: [...this.restartTimes],
      finished: finishedSegments(listSegments(this.dir))
    }
  }

  private async run(): Promise<void> {
    const { log, segmentSeconds } = this.options
    const signal = this.abort.signal
    let failures = 0
    while (!signal.aborted) {
      const feedUrl = this.feed === 'feed2' && this.camera.feed2 ? this.camera.feed2 : this.camera.feed
      await mkdir(this.dir, { recursive: true })
      // stop() may have come while the folder was made; it had no process to stop yet.
      if (signal.aborted) break
      const startedAt = Date.now()
      const args = recordingArgs({ camera: this.camera, feed: feedUrl, dir: this.dir, segmentSeconds, runId: startedAt.toString(36) })
      const proc = this.options.runner.start(args)
      this.process = proc
      this.pid = (await proc.pid) ?? null
      this.runningSince = new Date(startedAt)
      this.state = 'recording'
      this.running = true
      this.wroteThisRun = false
      log.info({ cameraId: this.camera.id, feed: this.feed, pid: this.pid }, 'recording')
      const grew = { value: false }
      const watchdog = this.watch(proc, startedAt, grew)
      const exit = await proc.exited
      clearInterval(watchdog)
      this.pid = null
      this.runningSince = null
      this.running = false
      if (signal.aborted) break
      // A run that kept producing video for a while was a success, whatever its exit code says.
      failures = grew.value && Date.now() - startedAt > STALL_SEGMENTS * segmentSeconds * 1000 ? 0 : failures + 1
      this.failuresInRow = failures
      this.lastExit = { at: Date.now(), code: exit.code, stderr: lastLines(exit.stderr, 5), stalled: (this.state as CameraState) === 'stalled' }
      this.feed = nextFeed(this.camera, this.feed, failures)
      this.restarts += 1
      this.restartTimes = [...this.restartTimes.filter((at) => Date.now() - at < HOUR_MS), Date.now()]
      if ((this.state as CameraState) !== 'stalled') this.state = 'restarting'
      const delay = restartDelay(failures)
      log.warn({ cameraId: this.camera.id, code: exit.code, signal: exit.signal, stderr: lastLines(exit.stderr, 3), retryInMs: delay, feed: this.feed }, 'ffmpeg exited; restarting')
      try {
        await sleep(delay, undefined, { signal })
      } catch {
        break
      }
    }
    this.state = 'stopped'
  }

  /** Kills the process when the newest segment has not grown for STALL_SEGMENTS segment lengths. */
  private watch(proc: FfmpegProcess, startedAt: number, grew: { value: boolean }): NodeJS.Timeout {
    const limitMs = STALL_SEGMENTS * this.options.segmentSeconds * 1000
    let lastSize = -1
    let lastPath = ''
    let lastGrowth = startedAt
    const timer = setInterval(() => {
      const newest = listSegments(this.dir).at(-1)
      if (newest && newest.mtimeMs >= startedAt - 1000 && (newest.path !== lastPath || newest.size !== lastSize)) {
        lastPath = newest.path
        lastSize = newest.size
        lastGrowth = Date.now()
        grew.value = true
        this.wroteThisRun = true
        if (this.state === 'stalled') this.state = 'recording'
        return
      }
      if (Date.now() - lastGrowth > limitMs && this.state === 'recording') {
        this.state = 'stalled'
        this.options.log.warn({ cameraId: this.camera.id, silentForMs: Date.now() - lastGrowth }, 'recording stalled; restarting ffmpeg')
        void proc.stop()
      }
    }, Math.max(500, (this.options.segmentSeconds * 1000) / 2))
    timer.unref()
    return timer
  }
}

/** The facts of a camera without a recorder (held off, disabled, or not yet started): its folder's segments only. */
export function idleFacts(dir: string): RecorderFacts {
  return { running: false, wroteThisRun: false, failuresInRow: 0, lastExit: null, restartTimes: [], finished: finishedSegments(listSegments(dir)) }
}

function finishedSegments(segments: readonly Segment[]): Segment[] {
  return segments.filter((s) => s.duration !== undefined).slice(-RATE_SEGMENTS)
}

/** Every camera's recorder; applies configurations one at a time. */
export class Recorder {
  private readonly recorders = new Map<string, CameraRecorder>()
  private cameras: Camera[] = []
  private applying: Promise<void> = Promise.resolve()

  constructor(private readonly options: CameraRecorderOptions) {}

  apply(cameras: readonly Camera[]): Promise<void> {
    this.applying = this.applying.then(() => this.reconcile([...cameras]))
    return this.applying
  }

  stopAll(): Promise<void> {
    return this.apply([])
  }

  camera(id: string): Camera | undefined {
    return this.cameras.find((c) => c.id === id)
  }

  /** Whether any camera records now; reads no file, so the unauthenticated liveness probe costs nothing. */
  recording(): boolean {
    return [...this.recorders.values()].some((r) => r.recording)
  }

  /** The facts of each camera recorded now (a camera held off or disabled has no recorder). */
  facts(now = Date.now()): Map<string, RecorderFacts> {
    return new Map([...this.recorders].map(([id, r]) => [id, r.facts(now)]))
  }

  correctionError(id: string): string | null {
    return this.recorders.get(id)?.error ?? null
  }

  status(): CameraStatus[] {
    return this.cameras.map((camera) => {
      const recorder = this.recorders.get(camera.id)
      if (recorder) return recorder.status()
      return { id: camera.id, ...(camera.name ? { name: camera.name } : {}), state: 'stopped', feed: 'feed', pid: null, runningSince: null, restarts: 0, lastSegmentAt: null, error: null }
    })
  }

  private async reconcile(desired: Camera[]): Promise<void> {
    const { log } = this.options
    const running = [...this.recorders.values()].map((r) => r.camera)
    const plan = planReconcile(running, desired)
    if (plan.start.length + plan.stop.length + plan.restart.length + plan.update.length > 0) {
      log.info({ start: plan.start.map((c) => c.id), stop: plan.stop, restart: plan.restart.map((c) => c.id), update: plan.update.map((c) => c.id) }, 'applying camera configuration')
    }
    const stopping = [...plan.stop, ...plan.restart.map((c) => c.id)]
    await Promise.all(stopping.map(async (id) => {
      await this.recorders.get(id)?.stop()
      this.recorders.delete(id)
    }))
    for (const camera of [...plan.start, ...plan.restart]) {
      const recorder = new CameraRecorder(camera, this.options)
      this.recorders.set(camera.id, recorder)
      recorder.start()
    }
    for (const camera of plan.update) this.recorders.get(camera.id)!.camera = camera
    this.cameras = desired
    await Promise.all([...this.recorders.values()].map(async (r) => (r.error = await lutProblem(r.camera))))
  }
}

/** Why a camera's LUT cannot be used, or null. */
export async function lutProblem(camera: Camera): Promise<string | null> {
  if (!camera.lutPath) return null
  try {
    await access(camera.lutPath, constants.R_OK)
    return null
  } catch (err) {
    return `LUT ${camera.lutPath} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`
  }
}
