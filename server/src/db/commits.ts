// Which tables a transaction of this process wrote, told to listeners right after it commits. The
// events outbox uses it to wake its delivery worker when a commit wrote events (events/outbox.ts);
// commits by other processes are not seen here (the worker polls for those).
import { writtenTable } from './read-cache.js'

export type CommitListener = (tables: ReadonlySet<string>) => void

/** The tables one connection's open transaction has written so far. */
export class WrittenTables {
  #tables = new Set<string>()

  note(sql: string, readonly: boolean): void {
    if (readonly) return
    const table = writtenTable(sql)
    if (table !== undefined) this.#tables.add(table)
  }

  /** The tables written since the last take (a transaction's begin, commit or rollback). */
  take(): ReadonlySet<string> {
    const tables = this.#tables
    this.#tables = new Set()
    return tables
  }
}

export class CommitListeners {
  readonly #listeners = new Set<CommitListener>()

  add(listener: CommitListener): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** After a commit: a listener's failure is its own and never the committed transaction's. */
  committed(tables: ReadonlySet<string>): void {
    if (tables.size === 0) return
    for (const listener of this.#listeners) {
      try {
        listener(tables)
      } catch {
        // The change is committed whatever a listener does; the worker's poll catches up.
      }
    }
  }
}
