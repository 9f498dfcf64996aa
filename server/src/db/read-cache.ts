// Read-through caches that can never answer from before a write. The database stays the truth: a
// cache entry is kept with the change stamp of the tables it was read from, and the stamp moves on
// every write to those tables by this process's connection and on every commit by any other
// connection to the same database (the `club` CLI, a second server), so the next read after a write
// always goes to the database.

/** Writes whose table is named at the start; anything else that writes moves every stamp. */
const WRITE_TABLE = /^\s*(?:insert(?:\s+or\s+\w+)?\s+into|replace\s+into|update(?:\s+or\s+\w+)?|delete\s+from)\s+"?([A-Za-z_][A-Za-z0-9_]*)"?/i

/** The table a write statement names first (undefined: a read, or a write that names none up front). */
export function writtenTable(sql: string): string | undefined {
  return WRITE_TABLE.exec(sql)?.[1]
}

/**
 * 'changed' when another connection may have committed since the last answer, 'same' when none
 * can have, 'unknown' when it could not tell (the database did not answer), and then no cached
 * answer may be trusted.
 */
export type CommitCheck = 'changed' | 'same' | 'unknown'

/**
 * How a tracker learns of other connections' commits, asked at most once per turn of the event
 * loop. SQLite: PRAGMA data_version, answered at once. PostgreSQL: the transaction snapshot, a query.
 */
export interface OtherCommits {
  check(): CommitCheck | Promise<CommitCheck>
}

/**
 * Statements run by every connection this process opened (the server's, a test's second one, the
 * CLI's when it runs in-process), reads included. A check of other commits is reused only while
 * this count stands still: a connection in this process can commit with no turn of the event loop
 * in between, and any statement (a cache miss's load, a read outside the caches) takes a snapshot
 * that may already hold another process's commit made after the check, which a later cached read
 * must not answer from before.
 */
let processStatements = 0

export class ChangeTracker {
  readonly #tables = new Map<string, number>()
  /** Moves on other connections' commits and on writes this process cannot attribute to a table. */
  #everything = 0
  /** The read of other commits that callers asking now will share, until it starts. */
  #nextRead: Promise<CommitCheck> | null = null
  /** Counts down the stamps given while out of touch: each is unique, so nothing kept under one is reused. */
  #untrusted = 0
  /**
   * The answer of a synchronous check (SQLite's) made in the callback now running, with the count
   * of this process's statements then; cleared before the event loop's next callback (process.nextTick).
   */
  #justChecked: { answer: CommitCheck; processStatements: number } | null = null

  constructor(private readonly others: OtherCommits) {}

  /**
   * Called with every statement about to run on this connection. A write moves its table's stamp
   * before it runs, so a read that starts after it (and takes its stamp first) never keeps an
   * answer under a stamp newer than its data. Cascades and triggers are covered because every
   * cache names the parent tables too (a user's deletion is a write to `users`).
   */
  noteStatement(sql: string, readonly: boolean): void {
    processStatements++
    if (readonly) return
    const table = writtenTable(sql)
    if (table === undefined) this.#everything++
    else this.#tables.set(table, (this.#tables.get(table) ?? 0) + 1)
  }

  /**
   * The change stamp of these tables, once other commits have been asked about after the caller's
   * request arrived: equal stamps mean nothing they hold has changed. Asking (SQLite's data
   * version) costs as much as an indexed read (it takes a WAL read snapshot), and asked once per
   * request it was about a tenth of a cached read's CPU time; so every caller that asks in one turn
   * of the event loop shares one read, made on the next (setImmediate), and callers asking in the
   * callback that made it reuse it (#reusableCheck). Each still sees every commit that finished
   * before it asked, because the read it uses started after that.
   */
  async stamp(tables: readonly string[]): Promise<number> {
    const answer = this.#reusableCheck() ?? (await (this.#nextRead ??= this.#readNext()))
    // Out of touch with other processes' commits: a stamp no entry was ever kept under, so every
    // read goes to the database (and what it loads is never answered again from memory).
    if (answer === 'unknown') return -++this.#untrusted
    // Every counter only grows, so the sum moves whenever one of them does.
    let stamp = this.#everything
    for (const table of tables) stamp += this.#tables.get(table) ?? 0
    return stamp
  }

  /**
   * The check made in the callback now running, if any, and no statement has run in this process
   * since. Every caller asking now is part of a request that arrived before that callback began (no
   * I/O is read in between), so a check made in it started after the request arrived, as a check
   * of its own would: a request whose credential, then data, come from the caches needs no turn of
   * the event loop and no second read of the data version.
   */
  #reusableCheck(): CommitCheck | undefined {
    const just = this.#justChecked
    return just !== null && just.processStatements === processStatements ? just.answer : undefined
  }

  #readNext(): Promise<CommitCheck> {
    return new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      this.#nextRead = null
      const checked = this.others.check()
      const answer = typeof checked === 'string' ? checked : await checked
      // Unknown counts as changed too, so answers kept before it are never reused after it.
      if (answer !== 'same') this.#everything++
      // Only a synchronous answer is kept: an asynchronous one (PostgreSQL's) arrives in a later
      // callback, after I/O that may have brought requests which arrived after the check began.
      if (typeof checked === 'string') {
        this.#justChecked = { answer, processStatements }
        process.nextTick(() => {
          this.#justChecked = null
        })
      }
      return answer
    })
  }
}

/** Other commits to a SQLite file, told by PRAGMA data_version (our own commits leave it alone). */
export function sqliteOtherCommits(sqlite: { prepare(sql: string): { pluck(): { get(): unknown } } }): OtherCommits {
  const dataVersion = sqlite.prepare('PRAGMA data_version').pluck()
  let last = dataVersion.get()
  return {
    check() {
      const now = dataVersion.get()
      if (now === last) return 'same'
      last = now
      return 'changed'
    }
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

  /** `fresh` may refuse a kept answer that its own content says is out of date (one valid until a time). */
  async get(key: string, load: () => Promise<V>, fresh?: (value: V) => boolean): Promise<V> {
    if (this.maxEntries === 0) return load()
    // Taken before the read: a write landing while it runs leaves this entry already stale.
    const stamp = await this.tracker.stamp(this.tables)
    const entry = this.#entries.get(key)
    if (entry !== undefined) {
      this.#entries.delete(key)
      if (entry.stamp === stamp && (fresh === undefined || fresh(entry.value))) {
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
