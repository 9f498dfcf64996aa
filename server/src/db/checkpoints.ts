// SQLite's WAL checkpoints off the request path. With its defaults, SQLite copies the write-ahead
// log back into the database file on the commit that takes the log past 1,000 pages, in the
// committing thread, with two disk syncs: better-sqlite3 runs in the event loop's thread, so about
// every 45th redemption stopped every request for ~9 ms, and a redemption's commit took 288 µs of
// wall time where 161 were its own (in-process, 6,000 redemptions, 22 log pages each). Here a worker
// thread with a connection of its own looks every CHECK_MS after a commit and, once COPY_PAGES have
// piled up, copies them back: a PASSIVE checkpoint, which never waits for and never blocks this
// process's writes.
//
// Only SQLite resets the log (starts writing it from the front again), and only from a writer, once
// every page in it has been copied back; under a steady stream of writes some page always comes
// in while the worker copies. So the connection keeps a checkpoint of its own, at RESET_PAGES
// instead of 1,000: by then the worker has copied all but the last pages, the connection's
// checkpoint copies those and the next write starts the log afresh. The log file grows to at most
// about RESET_PAGES pages (40 MB) and keeps that size until the last connection closes.
//
// The worker starts after START_AFTER commits that wrote something, so a process that writes little
// (most `club` commands, a test's app) never starts a thread; should it fail, the connection's
// checkpoints go back to SQLite's default. Other processes on the same file keep SQLite's defaults:
// a checkpoint is safe from any connection.
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import type SQLite from 'better-sqlite3'

/** Write commits of this process before the worker starts. */
export const START_AFTER = 500
/** The connection's own checkpoint while the worker runs: where the log is reset. */
export const RESET_PAGES = 10_000
/** SQLite's default, back when the worker fails. */
const SQLITE_DEFAULT_PAGES = 1_000
/** How often the worker looks for new commits. */
const CHECK_MS = 25
/**
 * What the worker lets pile up before it copies the log back: SQLite's own 1,000 pages. Copying after
 * every commit would leave the log wholly copied whenever writes are more than CHECK_MS apart, and
 * the next commit would then start it over, which syncs it, in the event loop's thread: a sync per
 * write under light load, where SQLite's default costs two per 1,000 pages.
 */
const COPY_PAGES = 1_000
/** wal_checkpoint(NOOP), which the worker measures the log with, came with SQLite 3.51.0; before it the pragma checkpoints. */
const NOOP_SINCE = [3, 51, 0]

// The worker's code: CommonJS by eval, so it runs the same from dist/ and under the tests' loader.
// It reports each look (frames in the log, frames copied back, whether it copied) for the tests to observe.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
// better-sqlite3's errors reach the parent without their message (SqliteError does not survive the
// copy between threads): a plain Error with the code in it does.
const plain = (err) => new Error((err.code ? err.code + ': ' : '') + err.message)
let db
try {
  // Never a file of its own: one deleted under the server stays deleted.
  db = new Database(workerData.file, { fileMustExist: true })
} catch (err) {
  throw plain(err)
}
const commits = new Int32Array(workerData.commits)
let seen = 0
const timer = setInterval(() => {
  const now = Atomics.load(commits, 0)
  if (now === seen) return
  seen = now
  try {
    // NOOP copies nothing: it answers how much of the log is not yet copied back.
    const [size] = db.pragma('wal_checkpoint(NOOP)')
    const copied = size.log - size.checkpointed >= workerData.copyPages
    if (copied) {
      const [result] = db.pragma('wal_checkpoint(PASSIVE)')
      // Another connection checkpointing at the same moment: the next look tries again.
      if (result.busy) seen = -1
      else parentPort.postMessage({ log: result.log, checkpointed: result.checkpointed, copied })
    } else {
      parentPort.postMessage({ log: size.log, checkpointed: size.checkpointed, copied })
    }
  } catch (err) {
    throw plain(err)
  }
}, workerData.checkMs)
parentPort.on('message', () => {
  clearInterval(timer)
  db.close()
  parentPort.close()
})
`

/** Whether a version ("3.53.2") is at least `least` ([3, 51, 0]). */
export function atLeast(version: string, least: readonly number[]): boolean {
  const parts = version.split('.').map(Number)
  for (const [i, wanted] of least.entries()) {
    const part = parts[i] ?? 0
    if (part !== wanted) return part > wanted
  }
  return true
}

/** One look of the worker's, after a commit. */
export interface Checkpoint {
  /** Frames in the log. */
  log: number
  /** Of those, frames copied back into the database file. */
  checkpointed: number
  /** Whether this look copied any back (only once COPY_PAGES have piled up). */
  copied: boolean
}

export class BackgroundCheckpoints {
  readonly #commits = new Int32Array(new SharedArrayBuffer(4))
  #worker?: Worker
  #stopped = false
  /** Told of each look the worker took (tests). */
  onCheckpoint?: (checkpoint: Checkpoint) => void

  constructor(
    private readonly sqlite: SQLite.Database,
    private readonly file: string,
    /** Told when the worker fails and the connection's checkpoints go back to SQLite's default (the app logs it). */
    private readonly failed?: (err: Error) => void
  ) {}

  /** After each commit of a transaction that wrote something. */
  committed(): void {
    const commits = Atomics.add(this.#commits, 0, 1) + 1
    if (commits === START_AFTER && !this.#stopped) this.#start()
  }

  /** Whether the worker copies the log back now. */
  get running(): boolean {
    return this.#worker !== undefined
  }

  #start(): void {
    // An older SQLite (a better-sqlite3 below the lockfile's) keeps its own checkpoints.
    if (!atLeast((this.sqlite.prepare('select sqlite_version() as v').get() as { v: string }).v, NOOP_SINCE)) return
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), file: this.file, commits: this.#commits.buffer, checkMs: CHECK_MS, copyPages: COPY_PAGES }
    })
    worker.on('message', (checkpoint: Checkpoint) => this.onCheckpoint?.(checkpoint))
    worker.on('error', (err) => this.#fellBack(err))
    worker.on('exit', (code) => this.#fellBack(new Error(`the checkpoint worker exited with code ${code}`)))
    // The process ends when its work does, whatever the worker is doing (after the listeners: adding
    // a 'message' listener holds the process again).
    worker.unref()
    this.#worker = worker
    this.sqlite.pragma(`wal_autocheckpoint = ${RESET_PAGES}`)
  }

  #fellBack(err: Error): void {
    // Stopping (stop() lets go of the worker first) or already fallen back: nothing failed now.
    if (this.#worker === undefined) return
    this.#worker = undefined
    if (this.sqlite.open) this.sqlite.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_PAGES}`)
    this.failed?.(err)
  }

  /**
   * Before the connection closes: the worker closes its own first, so that the connection is the
   * file's last and SQLite checkpoints and removes the log as it always did.
   */
  async stop(): Promise<void> {
    this.#stopped = true
    const worker = this.#worker
    if (worker === undefined) return
    this.#worker = undefined
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()))
    // Held by the worker until it has closed: unreferenced, the process could end before it does.
    worker.ref()
    worker.postMessage('stop')
    await exited
  }
}
