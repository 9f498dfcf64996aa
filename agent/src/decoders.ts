// The decoding ffmpeg processes the box runs besides its recorders: snapshots and clip exports. They
// share a box-wide cap, so no flood of requests can take the CPU and memory the recordings need. The
// decisions are pure functions of a small state (tested alone); Decoders is the shell that holds the
// state, starts the work it is handed and shares its results.
import { randomUUID } from 'node:crypto'
import type { Clock } from './clock.js'
import type { Logger } from './log.js'

export interface DecoderLimits {
  /** Snapshot and export processes at once, box-wide; the recording processes are not counted. */
  maxDecoders: number
  /** Exports at once; the others wait their turn in order. */
  maxExports: number
  /** Exports allowed to wait; one more is refused with 429. */
  maxQueuedExports: number
  /** A camera's picture this young is served again without a new process. */
  snapshotReuseMs: number
}

export interface DecoderState {
  /** Cameras whose snapshot process runs now. */
  snapshotsRunning: ReadonlySet<string>
  /** When each camera's last good picture was taken (ms since the epoch). */
  lastPictureAt: ReadonlyMap<string, number>
  exportsRunning: number
  exportsQueued: number
}

export type SnapshotDecision =
  | { action: 'reuse' }
  | { action: 'join' }
  | { action: 'start' }
  | { action: 'refuse'; retryAfterSeconds: number }

export type ExportAdmission = { action: 'queue'; position: number } | { action: 'refuse'; retryAfterSeconds: number }

export function decodersInUse(state: DecoderState): number {
  return state.snapshotsRunning.size + state.exportsRunning
}

export function decideSnapshot(state: DecoderState, cameraId: string, now: number, limits: DecoderLimits): SnapshotDecision {
  const takenAt = state.lastPictureAt.get(cameraId)
  if (takenAt !== undefined && now - takenAt < limits.snapshotReuseMs) return { action: 'reuse' }
  if (state.snapshotsRunning.has(cameraId)) return { action: 'join' }
  // A waiting export goes first: exports are what the box is for, and a snapshot can be asked again.
  if (state.exportsQueued > 0 || decodersInUse(state) >= limits.maxDecoders) return { action: 'refuse', retryAfterSeconds: 1 }
  return { action: 'start' }
}

/** A new export waits at the end of the queue, unless the queue is full. Position 1 is the next to start. */
export function admitExport(state: DecoderState, limits: DecoderLimits): ExportAdmission {
  if (state.exportsQueued >= limits.maxQueuedExports) return { action: 'refuse', retryAfterSeconds: 30 }
  return { action: 'queue', position: state.exportsQueued + 1 }
}

/** Whether the first waiting export may start now. */
export function mayStartExport(state: DecoderState, limits: DecoderLimits): boolean {
  return state.exportsQueued > 0 && state.exportsRunning < limits.maxExports && decodersInUse(state) < limits.maxDecoders
}

/** Refused for want of a decoder; `retryAfterSeconds` goes to the Retry-After header. */
export class DecodersBusyError extends Error {
  override name = 'DecodersBusyError'
  readonly statusCode = 429
  constructor(message: string, readonly retryAfterSeconds: number) {
    super(message)
  }
}

export type ExportJobState = 'queued' | 'running' | 'done' | 'failed'

/** An export as its caller can follow it: `position` is its place among the waiting (1 is next), null once started. */
export interface ExportJobView<Result> {
  id: string
  cameraId: string
  state: ExportJobState
  position: number | null
  queuedAt: string
  startedAt: string | null
  finishedAt: string | null
  clip?: Result
  error?: { statusCode: number; error: string; message: string }
  /** A failure refused for now: when to ask again (a synchronous caller's Retry-After). */
  retryAfterSeconds?: number
}

interface ExportJob<Request, Result> {
  view: Omit<ExportJobView<Result>, 'position'>
  request: Request
  finished: Promise<Result>
  settle: { resolve(result: Result): void; reject(err: unknown): void }
}

export interface DecodersOptions<Request, Result> {
  limits: DecoderLimits
  clock: Clock
  /** Runs one snapshot process for a camera and answers its JPEG. */
  takeSnapshot(cameraId: string): Promise<Buffer>
  /** Runs one export. */
  runExport(request: Request): Promise<Result>
  /** What a failed export's job shows (the HTTP status, message and Retry-After a synchronous caller would get). */
  describeError(err: unknown): { statusCode: number; error: string; message: string; retryAfterSeconds?: number | undefined }
  log: Logger
  /** Finished jobs kept for their callers to read, newest last. */
  keepFinished?: number
}

export class Decoders<Request extends { cameraId: string }, Result> {
  private readonly snapshots = new Map<string, Promise<Buffer>>()
  private readonly pictures = new Map<string, { takenAt: number; picture: Buffer }>()
  private readonly queue: Array<ExportJob<Request, Result>> = []
  private readonly jobs = new Map<string, ExportJob<Request, Result>>()
  private exportsRunning = 0

  constructor(private readonly options: DecodersOptions<Request, Result>) {}

  state(): DecoderState {
    return {
      snapshotsRunning: new Set(this.snapshots.keys()),
      lastPictureAt: new Map([...this.pictures].map(([id, p]) => [id, p.takenAt])),
      exportsRunning: this.exportsRunning,
      exportsQueued: this.queue.length
    }
  }

  /** The camera's picture: a young one again, the one being taken, or a new one if a decoder is free. */
  async snapshot(cameraId: string): Promise<Buffer> {
    const decision = decideSnapshot(this.state(), cameraId, this.options.clock.now().getTime(), this.options.limits)
    switch (decision.action) {
      case 'reuse':
        return this.pictures.get(cameraId)!.picture
      case 'join':
        return this.snapshots.get(cameraId)!
      case 'refuse':
        throw new DecodersBusyError('the box is busy making pictures and clips: try again shortly', decision.retryAfterSeconds)
      case 'start': {
        const taking = this.options
          .takeSnapshot(cameraId)
          .then((picture) => {
            this.pictures.set(cameraId, { takenAt: this.options.clock.now().getTime(), picture })
            return picture
          })
          .finally(() => {
            this.snapshots.delete(cameraId)
            this.pump()
          })
        this.snapshots.set(cameraId, taking)
        return taking
      }
    }
  }

  /** Queues an export and answers its job at once; `finished` settles with the export. */
  submitExport(request: Request): { job: ExportJobView<Result>; finished: Promise<Result> } {
    const admission = admitExport(this.state(), this.options.limits)
    if (admission.action === 'refuse') {
      throw new DecodersBusyError(`${this.queue.length} exports are already waiting: try again later`, admission.retryAfterSeconds)
    }
    let settle!: ExportJob<Request, Result>['settle']
    const finished = new Promise<Result>((resolve, reject) => (settle = { resolve, reject }))
    // Nobody may be waiting on it (an asynchronous request): its failure is in the job, not unhandled.
    finished.catch(() => {})
    const job: ExportJob<Request, Result> = {
      view: { id: randomUUID(), cameraId: request.cameraId, state: 'queued', queuedAt: this.now(), startedAt: null, finishedAt: null },
      request,
      finished,
      settle
    }
    this.remember(job)
    this.queue.push(job)
    this.pump()
    return { job: this.view(job), finished }
  }

  job(id: string): ExportJobView<Result> | undefined {
    const job = this.jobs.get(id)
    return job && this.view(job)
  }

  /** Every export the box knows of: running and waiting ones in order, then the recently finished. */
  listJobs(): Array<ExportJobView<Result>> {
    const order: Record<ExportJobState, number> = { running: 0, queued: 1, done: 2, failed: 2 }
    return [...this.jobs.values()].map((j) => this.view(j)).sort((a, b) => order[a.state] - order[b.state] || (a.position ?? 0) - (b.position ?? 0))
  }

  private view(job: ExportJob<Request, Result>): ExportJobView<Result> {
    const index = this.queue.indexOf(job)
    return { ...job.view, position: index === -1 ? null : index + 1 }
  }

  private pump(): void {
    while (mayStartExport(this.state(), this.options.limits)) {
      const job = this.queue.shift()!
      this.exportsRunning++
      job.view = { ...job.view, state: 'running', startedAt: this.now() }
      this.options.log.debug({ jobId: job.view.id, cameraId: job.view.cameraId, waiting: this.queue.length }, 'export started')
      this.options
        .runExport(job.request)
        .then(
          (clip) => {
            job.view = { ...job.view, state: 'done', finishedAt: this.now(), clip }
            job.settle.resolve(clip)
          },
          (err: unknown) => {
            const { retryAfterSeconds, ...error } = this.options.describeError(err)
            job.view = { ...job.view, state: 'failed', finishedAt: this.now(), error, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) }
            job.settle.reject(err)
          }
        )
        .finally(() => {
          this.exportsRunning--
          this.pump()
        })
    }
  }

  /** Keeps every unfinished job and the newest finished ones, so the map cannot grow without end. */
  private remember(job: ExportJob<Request, Result>): void {
    this.jobs.set(job.view.id, job)
    const finished = [...this.jobs.values()].filter((j) => j.view.state === 'done' || j.view.state === 'failed')
    for (const old of finished.slice(0, Math.max(0, finished.length - (this.options.keepFinished ?? 50)))) this.jobs.delete(old.view.id)
  }

  private now(): string {
    return this.options.clock.now().toISOString()
  }
}
