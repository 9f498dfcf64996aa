// SQLite's WAL checkpoints off the request path. With its defaults, SQLite copies the write-ahead
// log back into the database file on the commit that takes the log past 1,000 pages, in the
// committing thread: better-sqlite3 runs in the event loop's thread, so every ~45th redemption
// stopped every request for several milliseconds, and a redemption's commit cost 280 µs of CPU
// where 140 were its own (measured in-process at 500 redemptions, 22 log pages each). Here a worker
// thread with a connection of its own copies the log back every CHECK_MS while anything was
// committed, a PASSIVE checkpoint, which never waits for and never blocks this process's writes.
//
// Only SQLite resets the log (starts writing it from the front again), and only from a writer, once
// every page in it has been copied back; under a steady stream of writes some page always comes
// in while the worker copies. So the connection keeps a checkpoint of its own, at RESET_PAGES
// instead of 1,000: by then the worker has copied all but the last few milliseconds' pages, the
// connection's checkpoint copies those and the next write starts the log afresh. The log stays
// under RESET_PAGES pages (40 MB), as it stayed under 1,000 before.
//
// The worker starts after START_AFTER commits that wrote something, so a short-lived process (the
// CLI, a test's app) never pays for a thread; should it fail, the connection's checkpoints go back
// to SQLite's default. Other processes on the same file (the CLI) keep SQLite's defaults: a
// checkpoint is safe from any connection.
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import type SQLite from 'better-sqlite3'

/** Write commits of this process before the worker starts. */
export const START_AFTER = 500
/** The connection's own checkpoint while the worker runs: where the log is reset. */
export const RESET_PAGES = 10_000
/** SQLite's default, back when the worker fails. */
const SQLITE_DEFAULT_PAGES = 1_000
/** How often the worker looks for new commits (a checkpoint of nothing new costs nothing but a look). */
const CHECK_MS = 25

// The worker's code: CommonJS by eval, so it runs the same from dist/ and under the tests' loader.
// It reports each checkpoint (frames in the log, frames copied back) for the tests to observe.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const db = new Database(workerData.file)
const commits = new Int32Array(workerData.commits)
let seen = 0
const timer = setInterval(() => {
  const now = Atomics.load(commits, 0)
  if (now === seen) return
  seen = now
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)')
    parentPort.postMessage({ log: result.log, checkpointed: result.checkpointed })
  } catch (err) {
    // A lock another connection holds a moment (SQLITE_BUSY): the next look tries again.
    if (!String(err && err.code).startsWith('SQLITE_BUSY')) throw err
    seen = -1
  }
}, workerData.checkMs)
parentPort.on('message', () => {
  clearInterval(timer)
  db.close()
  parentPort.close()
})
`

export interface Checkpoint {
  /** Frames in the log when the worker looked. */
  log: number
  /** Of those, frames copied back into the database file. */
  checkpointed: number
}

export class BackgroundCheckpoints {
  readonly #commits = new Int32Array(new SharedArrayBuffer(4))
  #worker?: Worker
  #stopped = false
  /** Told of each checkpoint the worker ran (tests). */
  onCheckpoint?: (checkpoint: Checkpoint) => void

  constructor(
    private readonly sqlite: SQLite.Database,
    private readonly file: string
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
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), file: this.file, commits: this.#commits.buffer, checkMs: CHECK_MS }
    })
    worker.on('message', (checkpoint: Checkpoint) => this.onCheckpoint?.(checkpoint))
    worker.on('error', () => this.#fellBack())
    worker.on('exit', () => this.#fellBack())
    // The process ends when its work does, whatever the worker is doing (after the listeners: adding
    // a 'message' listener holds the process again).
    worker.unref()
    this.#worker = worker
    this.sqlite.pragma(`wal_autocheckpoint = ${RESET_PAGES}`)
  }

  #fellBack(): void {
    if (this.#worker === undefined) return
    this.#worker = undefined
    if (this.sqlite.open) this.sqlite.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_PAGES}`)
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
