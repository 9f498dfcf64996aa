// Test support: Decoders whose processes are promises the test settles, counting every start.
import pino from 'pino'
import { ManualClock } from './clock.js'
import { Decoders, type DecoderLimits } from './decoders.js'

const limits: DecoderLimits = { maxDecoders: 2, maxExports: 1, maxQueuedExports: 2, snapshotReuseMs: 1000 }

interface Deferred<T> {
  promise: Promise<T>
  resolve(value: T): void
  reject(err: unknown): void
}
function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void
  let reject!: (e: unknown) => void
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)))
  return { promise, resolve, reject }
}

/** Decoders whose processes are promises the test settles; counts every start and the most at once. */
export function countingDecoders(clock = new ManualClock(), custom: Partial<DecoderLimits> = {}) {
  const counts = { snapshots: 0, exports: 0, running: 0, mostAtOnce: 0 }
  const pendingSnapshots = new Map<string, Deferred<Buffer>>()
  const pendingExports: Array<Deferred<{ cameraId: string }>> = []
  const track = <T>(p: Promise<T>) => {
    counts.running++
    counts.mostAtOnce = Math.max(counts.mostAtOnce, counts.running)
    return p.finally(() => counts.running--)
  }
  const decoders = new Decoders<{ cameraId: string }, { cameraId: string }>({
    limits: { ...limits, ...custom },
    clock,
    takeSnapshot: (cameraId) => {
      counts.snapshots++
      const d = deferred<Buffer>()
      pendingSnapshots.set(cameraId, d)
      return track(d.promise)
    },
    runExport: () => {
      counts.exports++
      const d = deferred<{ cameraId: string }>()
      pendingExports.push(d)
      return track(d.promise)
    },
    describeError: (err) => ({ statusCode: 500, error: 'Internal Server Error', message: (err as Error).message }),
    log: pino({ level: 'silent' })
  })
  return { decoders, counts, pendingSnapshots, pendingExports, clock }
}

