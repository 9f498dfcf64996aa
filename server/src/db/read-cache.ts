// Read-through caches that can never answer from before a write: the one module of their rule (the
// services only name each cache's key and tables; reply.ts keeps kept answers' text). The database
// stays the truth: a cache entry is kept with the change stamp of the tables it was read from, and
// the stamp moves on every write to those tables by this process's connections and on every commit
// by any other connection to the same database (the `club` CLI, a second server) that may have
// written them, so the next read after a write always goes to the database.
import type { Kysely } from 'kysely'

/** Writes whose table is named at the start; anything else that writes moves every stamp. */
const WRITE_TABLE = /^\s*(?:insert(?:\s+or\s+\w+)?\s+into|replace\s+into|update(?:\s+or\s+\w+)?|delete\s+from)\s+"?([A-Za-z_][A-Za-z0-9_]*)"?/i

/** The table a write statement names first (undefined: a read, or a write that names none up front). */
export function writtenTable(sql: string): string | undefined {
  return WRITE_TABLE.exec(sql)?.[1]
}

/**
 * 'changed' when another connection may have committed since the last answer, to any table, 'same'
 * when none can have, 'unknown' when it could not tell (the database did not answer), and then no
 * cached answer may be trusted; or, on PostgreSQL, which counted tables those commits wrote.
 */
export type CommitCheck = 'changed' | 'same' | 'unknown' | TableCommits

/**
 * Other connections committed since the last answer: of the tables whose changes the database
 * counts (`counted`, migration 0030), those in `changed` were written; any table not counted may
 * have been.
 */
export interface TableCommits {
  counted: ReadonlySet<string>
  changed: ReadonlySet<string>
}

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
  /** Moves on other connections' commits that may have written any table, and on writes this process cannot attribute to a table. */
  #everything = 0
  /** The tables other connections' commits are told for (TableCommits); empty until the database says. */
  #counted: ReadonlySet<string> = new Set()
  /** Moves on every other connection's commit: what a table not counted has to go by. */
  #uncounted = 0
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
    let uncounted = false
    for (const table of tables) {
      stamp += this.#tables.get(table) ?? 0
      if (!this.#counted.has(table)) uncounted = true
    }
    return uncounted ? stamp + this.#uncounted : stamp
  }

  /**
   * The check made in the callback now running, if any, and no statement has run in this process
   * since. Every caller asking now is part of a request that arrived before that callback began (no
   * I/O is read in between), so a check made in it started after the request arrived, as a check
   * of its own would: a request whose credential, then data, come from the caches needs no turn of
   * the event loop and no second read of the data version.
   */
  #otherCommitsWrote({ counted, changed }: TableCommits): void {
    if (counted !== this.#counted) {
      // Which tables count their own changes decides which counters a stamp sums (see stamp): when
      // it changes, every stamp given from now on must be above every stamp given before.
      this.#everything += this.#uncounted + 1
      this.#counted = counted
    }
    for (const table of changed) this.#tables.set(table, (this.#tables.get(table) ?? 0) + 1)
    this.#uncounted++
  }

  #reusableCheck(): CommitCheck | undefined {
    const just = this.#justChecked
    return just !== null && just.processStatements === processStatements ? just.answer : undefined
  }

  #readNext(): Promise<CommitCheck> {
    return new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      this.#nextRead = null
      const checked = this.others.check()
      const answer = typeof checked === 'string' ? checked : await checked
      if (typeof answer === 'object') this.#otherCommitsWrote(answer)
      // Unknown counts as changed too, so answers kept before it are never reused after it.
      else if (answer !== 'same') this.#everything++
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

/** Told when the read caches lose touch with the database's commits, and when they have it again. */
export interface CacheTrustEvents {
  lost(err: Error): void
  restored(): void
}

/** One row from PostgreSQL (the pool's query, outside Kysely: the check is no statement of a service). */
type QueryRow = (sql: string) => Promise<Record<string, unknown>>

/**
 * Other connections' commits on PostgreSQL, told by one query: the transaction snapshot
 * (pg_current_snapshot(): the oldest transaction still running, the next transaction id, and those
 * in progress) and the change counters of migration 0030's table_changes.
 *
 * The snapshot says whether anything committed: every write transaction takes an id; between two
 * reads of it, one that committed either was in progress at the first (listed, and gone from the
 * second) or began after it (the next id moved), so an unchanged snapshot proves no commit happened
 * in between, anywhere in the cluster. The counters say which of the tables caches read from it
 * wrote: a trigger moves a table's counter in the transaction that writes it, so the query sees the
 * counter and the data move together. A table without a counter goes by the snapshot alone.
 *
 * Why a query per turn of the event loop, and not LISTEN/NOTIFY (a notification per commit): this is
 * read after the requests of that turn arrived, in a snapshot taken then, so a request sent after
 * another process answered always sees that process's commit. A notification arrives on its own
 * connection whenever the database sends it and this process reads it; a client that got the other
 * process's answer can send its next request here first, and the request would be answered from a
 * cache not yet told. Notifications could only spare this query when nothing changed, never replace it.
 *
 * The database not answering is 'unknown': no cached answer is trusted until it answers again, and
 * then, its counters unknown in between, every table counts as changed.
 */
export function postgresOtherCommits(queryRow: QueryRow, events: CacheTrustEvents): OtherCommits {
  let lastSnapshot: string | undefined
  let lastCounters: string | undefined
  let counters = new Map<string, number>()
  let counted: ReadonlySet<string> = new Set()
  let lost = false
  return {
    async check() {
      let row: Record<string, unknown>
      try {
        row = await queryRow(
          'select pg_current_snapshot()::text as snapshot, (select json_object_agg(table_name, counter order by table_name) from table_changes)::text as counters'
        )
      } catch (err) {
        lastSnapshot = lastCounters = undefined
        if (!lost) events.lost(err as Error)
        lost = true
        return 'unknown'
      }
      if (lost) events.restored()
      lost = false
      const snapshot = row.snapshot as string
      const text = (row.counters as string | null) ?? '{}'
      if (snapshot === lastSnapshot && text === lastCounters) return 'same'
      const known = lastSnapshot !== undefined
      lastSnapshot = snapshot
      if (text === lastCounters) return { counted, changed: new Set() }
      lastCounters = text
      const now = new Map(Object.entries(JSON.parse(text) as Record<string, number>))
      // The same set while the same tables are counted: the tracker compares it by identity.
      if (now.size !== counters.size || [...now.keys()].some((table) => !counters.has(table))) counted = new Set(now.keys())
      // Counters never read before (the first check, or back from 'unknown'): every table may have changed.
      const changed = known ? new Set([...now].filter(([table, counter]) => counters.get(table) !== counter).map(([table]) => table)) : counted
      counters = now
      return { counted, changed }
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

/** A kind of answer kept in memory: its name, the tables it is read from, its part of READ_CACHE_ENTRIES. */
export interface ReadCacheSpec {
  name: string
  tables: readonly string[]
  /** The part of READ_CACHE_ENTRIES this cache keeps (1 unless its answers are large). */
  share?: number
}

/** The read caches of one database opened by openDatabase, with the tracker of its changes. */
export class ReadCaches {
  readonly tracker: ChangeTracker
  readonly #byName = new Map<string, ReadCache<unknown>>()

  constructor(
    others: OtherCommits,
    /** Entries each cache keeps (READ_CACHE_ENTRIES, times its share); 0 turns the caches off. */
    private readonly maxEntries: number
  ) {
    this.tracker = new ChangeTracker(others)
  }

  cache<V>(spec: ReadCacheSpec): ReadCache<V> {
    let cache = this.#byName.get(spec.name)
    if (!cache) {
      cache = new ReadCache<unknown>(this.tracker, spec.tables, Math.ceil(this.maxEntries * (spec.share ?? 1)))
      this.#byName.set(spec.name, cache)
    }
    return cache as ReadCache<V>
  }

  stats(): Array<{ name: string; hits: number; misses: number }> {
    return [...this.#byName].map(([name, cache]) => ({ name, hits: cache.hits, misses: cache.misses }))
  }
}

/** By database: a transaction is another object, so it finds none (see readCache). */
const readCachesOf = new WeakMap<object, ReadCaches>()

/** Gives a database opened by openDatabase its read caches. */
export function attachReadCaches(db: Kysely<any>, caches: ReadCaches): void {
  readCachesOf.set(db, caches)
}

/**
 * The read cache of a database opened by openDatabase for one kind of answer, kept valid against
 * writes to its tables. Undefined inside a transaction: what a transaction reads may be its own
 * uncommitted writes, and it must see them, not a cached answer.
 */
export function readCache<V>(db: Kysely<any>, spec: ReadCacheSpec): ReadCache<V> | undefined {
  return readCachesOf.get(db)?.cache<V>(spec)
}

/** The answer for `key` from the read cache, or `load` when there is none (a transaction, caches off). */
export function readThrough<V>(db: Kysely<any>, spec: ReadCacheSpec, key: string, load: () => Promise<V>, fresh?: (value: V) => boolean): Promise<V> {
  const cache = readCache<V>(db, spec)
  return cache ? cache.get(key, load, fresh) : load()
}

/** Each read cache's hits and misses so far, by its name (the metrics show them). */
export function readCacheStats(db: Kysely<any>): Array<{ name: string; hits: number; misses: number }> {
  return readCachesOf.get(db)?.stats() ?? []
}
