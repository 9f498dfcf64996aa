// Opens the SQLite database with every pragma the server relies on, and migrates it.
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import SQLite from 'better-sqlite3'
import {
  sql,
  CompiledQuery,
  Kysely,
  Migrator,
  SqliteAdapter,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  type SqliteDialectConfig,
  type Transaction
} from 'kysely'
import type { Database } from './schema.js'
import { migrations } from './migrations/index.js'
import { isPostgres, PostgresTypes } from './migrations/dialect.js'
import { attachReadCaches, postgresOtherCommits, ReadCaches, sqliteOtherCommits, type CacheTrustEvents, type ChangeTracker } from './read-cache.js'
import { CommitListeners, WrittenTables, type CommitListener } from './commits.js'
import { BackgroundCheckpoints } from './checkpoints.js'
import { ClubPostgresDialect, isPostgresUrl, postgresPool } from './postgres.js'

export type Db = Kysely<Database>

/** A service function takes either the database or a transaction as its first argument. */
export type DbOrTx = Kysely<Database> | Transaction<Database>

export interface OpenOptions {
  /** Entries each read cache keeps (see readCache); 0 turns the caches off. */
  readCacheEntries?: number
  /** How long a statement waits for another process's write lock before SQLite answers SQLITE_BUSY. */
  busyTimeoutMs?: number
  /** PostgreSQL: connections in this process's pool. */
  poolMax?: number
  /** PostgreSQL: told when the read caches lose touch with the database and when it is back (the app logs both). */
  cacheTrust?: Partial<CacheTrustEvents>
  /** SQLite: told when the background checkpoint worker fails, and checkpoints are the connection's again (checkpoints.ts; the app logs it). */
  checkpointsFailed?: (err: Error) => void
}

/** Told the duration of every query that ran (see observeQueries). */
export type QueryObserver = (durationMs: number, sql: string) => void

/** What openDatabase keeps beside a database it opened (its read caches are read-cache.ts's). */
interface Opened {
  /** The SQLite connection; undefined on PostgreSQL. */
  sqlite?: SQLite.Database
  /** A SQLite file's checkpoints (checkpoints.ts); undefined in memory and on PostgreSQL. */
  checkpoints?: BackgroundCheckpoints
  queryObserver?: QueryObserver
  commits: CommitListeners
}

const openedOf = new WeakMap<object, Opened>()

/** Opens DATABASE_URL: a postgres:// URL is PostgreSQL, anything else a SQLite file (or :memory:). */
export function openDatabase(url: string, options: OpenOptions = {}): Db {
  return isPostgresUrl(url) ? openPostgres(url, options) : openSqlite(url, options)
}

function openSqlite(file: string, options: OpenOptions): Db {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
  const sqlite = new SQLite(file)
  // First, so that every later statement (switching to WAL included) waits for another process's
  // lock instead of failing at once.
  sqlite.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`)
  sqlite.pragma('journal_mode = WAL')
  sqlite.pragma('foreign_keys = ON')
  // WAL with synchronous=NORMAL is durable across application crashes; only an OS crash may lose
  // the last transactions, which is the usual trade for an API server.
  sqlite.pragma('synchronous = NORMAL')
  const readCaches = new ReadCaches(sqliteOtherCommits(sqlite), options.readCacheEntries ?? 10_000)
  const commits = new CommitListeners()
  // One connection, one transaction at a time (Kysely's SqliteDriver holds it for the transaction).
  const written = new WrittenTables()
  const checkpoints = file === ':memory:' || file === '' ? undefined : new BackgroundCheckpoints(sqlite, file, options.checkpointsFailed)
  if (checkpoints) commits.add(() => checkpoints.committed())
  const opened: Opened = { sqlite, commits, ...(checkpoints ? { checkpoints } : {}) }
  const statements = withStatementCache(sqlite, readCaches.tracker, written)
  const db = new Kysely<Database>({
    dialect: new ImmediateSqliteDialect({ database: statements }, commits, written, checkpoints, (sql, parameters) => {
      // As Kysely's SqliteConnection runs a statement, timed for the metrics as its log option does.
      const started = performance.now()
      try {
        const statement = statements.prepare(sql)
        if (statement.reader) return statement.all(parameters)
        statement.run(parameters)
        return []
      } finally {
        opened.queryObserver?.(performance.now() - started, sql)
      }
    }),
    // Kysely times every query it runs when given a log function; the metrics read it from here.
    log: (event) => opened.queryObserver?.(event.queryDurationMillis, event.query.sql)
  })
  openedOf.set(db, opened)
  attachReadCaches(db, readCaches)
  return db
}

function openPostgres(url: string, options: OpenOptions): Db {
  const pool = postgresPool(url, { poolMax: options.poolMax ?? 10, lockTimeoutMs: options.busyTimeoutMs ?? 5000 })
  // A connection lost while idle in the pool is the pool's to drop; one lost while checked out
  // between two statements (inside a transaction) has no listener of the pool's, and pg would throw
  // its error as an uncaught exception, ending the process. Either way the next statement on it
  // fails and the request answers 503 (isDatabaseUnreachable): never the process's end.
  pool.on('error', () => {})
  pool.on('connect', (client) => client.on('error', () => {}))
  const otherCommits = postgresOtherCommits(async (text) => (await pool.query(text)).rows[0], {
    lost: (err) => options.cacheTrust?.lost?.(err),
    restored: () => options.cacheTrust?.restored?.()
  })
  const readCaches = new ReadCaches(otherCommits, options.readCacheEntries ?? 10_000)
  const commits = new CommitListeners()
  const opened: Opened = { commits }
  const db = new Kysely<Database>({
    dialect: new ClubPostgresDialect(pool, (sql, readonly) => readCaches.tracker.noteStatement(sql, readonly), commits),
    log: (event) => opened.queryObserver?.(event.queryDurationMillis, event.query.sql)
  })
  openedOf.set(db, opened)
  attachReadCaches(db, readCaches)
  return db
}

/**
 * The column that names a row physically, for batched deletes and updates (LIMIT inside a
 * subquery): SQLite's rowid, PostgreSQL's ctid (stable within the transaction that uses it).
 */
export function rowidOf(db: Kysely<any>) {
  return sql.raw(dialectOf(db) === 'postgres' ? 'ctid' : 'rowid')
}

/** Runs `work` in the caller's transaction when given one, else in a transaction of its own. */
export async function inTransaction<T>(db: DbOrTx, work: (tx: Transaction<Database>) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db as Transaction<Database>) : (db as Db).transaction().execute(work)
}

/** Which database a Kysely instance (or a transaction of it) runs on. */
export function dialectOf(db: Kysely<any>): 'sqlite' | 'postgres' {
  return isPostgres(db) ? 'postgres' : 'sqlite'
}

/** Calls `observer` with every query's duration from now on (one observer: the app's metrics). */
export function observeQueries(db: Db, observer: QueryObserver | undefined): void {
  const opened = openedOf.get(db)
  if (opened) opened.queryObserver = observer
}

/**
 * Calls `listener` right after each commit of a transaction of this process that wrote a table, with
 * the tables it wrote (the events outbox wakes its delivery worker so). Answers the unsubscribe.
 */
export function onCommit(db: Db, listener: CommitListener): () => void {
  const opened = openedOf.get(db)
  if (!opened) throw new Error('not a database opened by openDatabase')
  return opened.commits.add(listener)
}

/** A SQLite file's background checkpoints (checkpoints.ts); undefined in memory and on PostgreSQL. */
export function checkpointsOf(db: Db): BackgroundCheckpoints | undefined {
  return openedOf.get(db)?.checkpoints
}

/** The better-sqlite3 connection under a database opened by openDatabase (backups use its online backup). */
export function sqliteOf(db: Db): SQLite.Database {
  const sqlite = openedOf.get(db)?.sqlite
  if (!sqlite) throw new Error('not a SQLite database opened by openDatabase')
  return sqlite
}

/**
 * Every transaction begins IMMEDIATE. A plain BEGIN reads first and asks for the write lock at its
 * first write; when another process (the CLI, a second server) committed in between, SQLite must
 * refuse that upgrade with SQLITE_BUSY at once, whatever busy_timeout says, because the snapshot the
 * transaction read is already stale. Asking for the lock at BEGIN makes the transaction wait its
 * turn (busy_timeout) and then read what the other process wrote. Every transaction of this server
 * may write; read-only work runs outside transactions (WAL readers never wait).
 */
class ImmediateSqliteDriver extends SqliteDriver {
  constructor(
    config: SqliteDialectConfig,
    private readonly commits: CommitListeners,
    private readonly written: WrittenTables,
    private readonly checkpoints: BackgroundCheckpoints | undefined
  ) {
    super(config)
  }

  override async destroy(): Promise<void> {
    // The checkpoint worker's connection closes first, so that this one is the file's last (checkpoints.ts).
    await this.checkpoints?.stop()
    await super.destroy()
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'))
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await super.commitTransaction(connection)
    this.commits.committed(this.written.take())
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    this.written.take()
    await super.rollbackTransaction(connection)
  }
}

/**
 * SQLite runs DDL inside transactions; Kysely's adapter says it does not, so its migrator would run
 * each migration unguarded. Saying it does makes every migrator run one IMMEDIATE transaction: two
 * processes starting on a new file migrate one after the other, and a failed migration leaves
 * nothing half-applied.
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  constructor(readonly direct: DirectStatements) {
    super()
  }
  override get supportsTransactionalDdl(): boolean {
    return true
  }
}

/** Runs one statement on the SQLite connection itself, answering its rows (none for a write without RETURNING). */
type DirectStatements = (sql: string, parameters: readonly unknown[]) => unknown[]

/**
 * The SQLite connection itself for a transaction of it; undefined anywhere else (PostgreSQL, outside
 * a transaction, a plugin installed). Kysely's way to a statement (executor, connection provider,
 * its mutex, logging, result plugins) costs about 4 µs over better-sqlite3's own 0.5, some 35 µs of
 * a redemption's ten statements (db/compiled.ts). Inside a transaction the connection is the
 * transaction's alone (Kysely's SQLite driver holds it until commit), so a statement may go to it
 * directly; outside one it may not: another request's transaction may hold the connection, and the
 * statement would run inside it.
 */
export function directStatements(db: DbOrTx): DirectStatements | undefined {
  if (!db.isTransaction) return undefined
  const executor = db.getExecutor()
  return executor.adapter instanceof TransactionalDdlSqliteAdapter && executor.plugins.length === 0 ? executor.adapter.direct : undefined
}

class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig
  constructor(
    config: SqliteDialectConfig,
    private readonly commits: CommitListeners,
    private readonly written: WrittenTables,
    private readonly checkpoints: BackgroundCheckpoints | undefined,
    private readonly direct: DirectStatements
  ) {
    super(config)
    this.#config = config
  }
  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config, this.commits, this.written, this.checkpoints)
  }
  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter(this.direct)
  }
}

/** What a caller is told when another process held the write lock past busy_timeout. */
export const DATABASE_BUSY_MESSAGE = "the database stayed locked by another process's write past DATABASE_BUSY_TIMEOUT_MS; nothing was changed, try again"

/**
 * Another process held a lock past the timeout: SQLite's SQLITE_BUSY (and its extended codes), or
 * PostgreSQL's lock_not_available (55P03, lock_timeout) and deadlock_detected (40P01).
 */
export function isDatabaseBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === '55P03' || code === '40P01')
}

/** What a caller is told when the database server could not be reached (PostgreSQL only: SQLite is a file). */
export const DATABASE_UNREACHABLE_MESSAGE = 'the database could not be reached; try again shortly'

/** Node's answers when a connection cannot be made or was cut. */
const CONNECTION_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH'])

/**
 * The database server cannot be reached or went away: a connection refused or cut, PostgreSQL's
 * connection exceptions (class 08), shutting down or starting up (57P01–57P03), out of connections
 * (53300), or pg's own "Connection terminated" (no code). An outage, not a bug in the request.
 */
export function isDatabaseUnreachable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null
  const code = typeof e?.code === 'string' ? e.code : ''
  if (CONNECTION_ERRORS.has(code) || code.startsWith('08') || ['57P01', '57P02', '57P03', '53300'].includes(code)) return true
  return code === '' && typeof e?.message === 'string' && /^Connection terminated/.test(e.message)
}

/** A write broke a UNIQUE constraint (SQLITE_CONSTRAINT_UNIQUE, PostgreSQL's 23505): the race-safe way to tell a duplicate. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505'
}

const STATEMENT_CACHE_SIZE = 500

/**
 * Kysely's SQLite driver prepares every query anew, and preparing cost as much as running the
 * query on the hot paths (a token look-up, a status poll). The same SQL text is prepared once and
 * reused; the cache is bounded (LRU) because IN-lists of different lengths make distinct texts.
 * Safe because the server never streams (iterates) a statement while another query runs.
 */
/** A transaction's own commands, which change no table. */
const TRANSACTION_COMMAND = /^\s*(?:begin|commit|end|rollback|savepoint|release)\b/i

function withStatementCache(sqlite: SQLite.Database, tracker: ChangeTracker, written: WrittenTables) {
  const cache = new Map<string, SQLite.Statement>()
  return {
    close: () => sqlite.close(),
    prepare(sql: string) {
      let statement = cache.get(sql)
      if (statement) {
        cache.delete(sql)
      } else {
        statement = sqlite.prepare(sql)
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!)
      }
      cache.set(sql, statement)
      // Kysely prepares right before it runs: this is where every statement passes. better-sqlite3
      // calls BEGIN IMMEDIATE, COMMIT and ROLLBACK not read-only, and they name no table: counted as
      // writes, every write transaction retired every cached answer of every table (a redemption
      // emptied the credential cache), so they are the transaction's commands, not writes.
      const readonly = statement.readonly || TRANSACTION_COMMAND.test(sql)
      tracker.noteStatement(sql, readonly)
      // Only a transaction's writes: one outside any (a migration's, a pragma) is told to nobody.
      if (sqlite.inTransaction) written.note(sql, readonly)
      return statement
    }
  }
}

export class MigrationError extends Error {
  override name = 'MigrationError'
}

/** Applies every pending migration; throws when one fails, so nothing starts on a half-migrated schema. */
/** The migrator of this server's migrations over `db`, with PostgreSQL's column types when on PostgreSQL. */
export function migratorFor(db: Kysely<any>): Migrator {
  return new Migrator({ db: dialectOf(db) === 'postgres' ? db.withPlugin(new PostgresTypes()) : db, provider: { getMigrations: async () => migrations } })
}

export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const migrator = migratorFor(db)
  const { error, results } = await migrator.migrateToLatest()
  const failed = results?.find((r) => r.status === 'Error')
  // Another process held the lock past the timeout: say that, as every busy write does.
  if (isDatabaseBusy(error)) throw error
  if (error || failed) {
    const cause = error instanceof Error ? error.message : String(error ?? 'unknown error')
    throw new MigrationError(`migration ${failed?.migrationName ?? ''} failed: ${cause}`.replace('  ', ' '))
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
