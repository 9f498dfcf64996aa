// Read-through caches that can never answer from before a write. The database stays the truth: a
// cache entry is kept with the change stamp of the tables it was read from, and the stamp moves on
// every write to those tables by this process's connection and on every commit by any other
// connection to the same file (the `club` CLI, a second server), so the next read after a write
// always goes to SQLite.
import type SQLite from 'better-sqlite3'

/** Writes whose table is named at the start; anything else that writes moves every stamp. */
const WRITE_TABLE = /^\s*(?:insert(?:\s+or\s+\w+)?\s+into|replace\s+into|update(?:\s+or\s+\w+)?|delete\s+from)\s+"?([A-Za-z_][A-Za-z0-9_]*)"?/i

export class ChangeTracker {
  readonly #tables = new Map<string, number>()
  /** Moves on other connections' commits and on writes this process cannot attribute to a table. */
  #everything = 0
  readonly #dataVersion: SQLite.Statement
  #lastDataVersion: unknown
  /** Whether the data version was read since the current request began (and in this turn of the event loop). */
  #checked = false
  readonly #forget = () => {
    this.#checked = false
  }

  constructor(sqlite: SQLite.Database) {
    // PRAGMA data_version changes when another connection commits to the file; our own commits
    // leave it alone, which is why our writes are counted as they are prepared (noteStatement).
    this.#dataVersion = sqlite.prepare('PRAGMA data_version').pluck()
    this.#lastDataVersion = this.#dataVersion.get()
  }

  /**
   * Called with every statement about to run on this connection. A write moves its table's stamp
   * before it runs, so a read that starts after it (and takes its stamp first) never keeps an
   * answer under a stamp newer than its data. Cascades and triggers are covered because every
   * cache names the parent tables too (a user's deletion is a write to `users`).
   */
  noteStatement(sql: string, readonly: boolean): void {
    if (readonly) return
    const table = WRITE_TABLE.exec(sql)?.[1]
    if (table === undefined) this.#everything++
    else this.#tables.set(table, (this.#tables.get(table) ?? 0) + 1)
  }

  /**
   * A request began: the next stamp reads the data version again. Reading it costs as much as an
   * indexed read (it takes a WAL read snapshot), so a request with two cached reads reads it once:
   * any commit that finished before the request began is seen.
   */
  requestStarted(): void {
    this.#checked = false
  }

  /** The change stamp of these tables now: equal stamps mean nothing they hold has changed. */
  stamp(tables: readonly string[]): number {
    if (!this.#checked) {
      const dataVersion = this.#dataVersion.get()
      if (dataVersion !== this.#lastDataVersion) {
        this.#lastDataVersion = dataVersion
        this.#everything++
      }
      // Outside requests (background work, the CLI) the check holds for this turn of the loop only.
      this.#checked = true
      setImmediate(this.#forget)
    }
    // Every counter only grows, so the sum moves whenever one of them does.
    let stamp = this.#everything
    for (const table of tables) stamp += this.#tables.get(table) ?? 0
    return stamp
  }
}

interface Entry<V> {
  stamp: number
  value: V
}

/**
 * A bounded (least recently used) cache of answers read from `tables`. Only answers that loaded
 * are kept: a failure (an unknown token, a missing template) is asked of the database every time,
 * so callers cannot fill the cache with keys that do not exist.
 */
export class ReadCache<V> {
  readonly #entries = new Map<string, Entry<V>>()
  /** Answers given from memory and answers loaded, for the metrics (plain counts: free on the hot path). */
  hits = 0
  misses = 0

  constructor(
    private readonly tracker: ChangeTracker,
    private readonly tables: readonly string[],
    private readonly maxEntries: number
  ) {}

  async get(key: string, load: () => Promise<V>): Promise<V> {
    if (this.maxEntries === 0) return load()
    // Taken before the read: a write landing while it runs leaves this entry already stale.
    const stamp = this.tracker.stamp(this.tables)
    const entry = this.#entries.get(key)
    if (entry !== undefined) {
      this.#entries.delete(key)
      if (entry.stamp === stamp) {
        this.#entries.set(key, entry)
        this.hits++
        return entry.value
      }
    }
    this.misses++
    const value = await load()
    if (this.#entries.size >= this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!)
    this.#entries.set(key, { stamp, value })
    return value
  }

  get size(): number {
    return this.#entries.size
  }
}
