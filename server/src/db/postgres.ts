// The server on PostgreSQL: a pg pool under Kysely, transactions that keep the services' "at most
// once" rules (their row locks, or one writer at a time for the rest), numbers that come back as
// numbers, and the statements every process's read caches count (how they learn of other processes'
// commits: postgresOtherCommits in read-cache.ts).
import pg from 'pg'
import {
  CompiledQuery,
  PostgresDialect,
  PostgresDriver,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type TransactionSettings
} from 'kysely'
import { WrittenTables, type CommitListeners } from './commits.js'

/** A PostgreSQL connection string selects PostgreSQL; anything else is a SQLite file. */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(?:ql)?:\/\//i.test(url)
}

/**
 * The cluster-wide lock of write transactions (an advisory lock, released at commit or rollback), in
 * two modes. The services' "at most once" rules (a refresh token used once, a redemption per package
 * item, a charge per cycle) read and then write inside one transaction; on SQLite a transaction
 * begins IMMEDIATE and so runs alone. On PostgreSQL:
 * - a transaction whose service guards its rules itself, with row locks (forUpdate in db/sql.ts) and
 *   unique keys, says so first (rowLocked in db/sql.ts) and takes this lock SHARED: such transactions
 *   run side by side, across processes and machines, and wait only for the others;
 * - every other write transaction takes it EXCLUSIVE, as all did before (issue 37): it runs alone, so
 *   a rule not yet written with row locks keeps the guarantee SQLite gives.
 * The number is arbitrary but fixed: every server and CLI of one database must use the same.
 */
export const WRITE_LOCK = 7_314_001

/** The statement rowLocked sends first; a transaction that begins with anything else takes the lock exclusive. */
export const SHARED_WRITE_LOCK_SQL = `select pg_advisory_xact_lock_shared(${WRITE_LOCK})`

const EXCLUSIVE_WRITE_LOCK_SQL = `select pg_advisory_xact_lock(${WRITE_LOCK})`

/** int8 (counts, sums) and numeric come back from pg as strings; the services expect numbers. */
function parseNumber(text: string): number {
  const value = Number(text)
  if (!Number.isSafeInteger(value) && Number.isInteger(value)) throw new RangeError(`a number from the database is beyond 2^53: ${text}`)
  return value
}

const INT8 = 20
const NUMERIC = 1700

const numberTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8 || oid === NUMERIC) return parseNumber
    // pg's own parsers for everything else (the same call its defaults make).
    return (pg.types.getTypeParser as (oid: number, format?: string) => unknown)(oid, format)
  }
} as pg.CustomTypesConfig

/** Every statement this process runs, before it runs (the read caches count this process's writes there). */
type NoteStatement = (sql: string, readonly: boolean) => void

/** Kysely's PostgresDialect with the write lock and statement notes. */
export class ClubPostgresDialect extends PostgresDialect {
  constructor(
    readonly pool: pg.Pool,
    private readonly noteStatement: NoteStatement,
    private readonly commits: CommitListeners
  ) {
    super({ pool })
  }

  override createDriver(): Driver {
    return new ClubPostgresDriver(this.pool, this.noteStatement, this.commits)
  }
}

class ClubPostgresDriver extends PostgresDriver {
  constructor(
    pool: pg.Pool,
    private readonly noteStatement: NoteStatement,
    private readonly commits: CommitListeners
  ) {
    super({ pool })
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    return new NotedConnection(await super.acquireConnection(), this.noteStatement)
  }

  override async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const noted = connection as NotedConnection
    // Writes made outside a transaction on this pooled connection are no part of the next one's.
    noted.written.take()
    if (settings.isolationLevel === undefined && settings.accessMode === undefined) {
      // BEGIN goes with the transaction's first statement, which decides the lock's mode.
      noted.beginPending = true
      return
    }
    // PostgresDriver only runs statements on it, as on every connection it is given.
    await super.beginTransaction(connection as never, settings)
    try {
      await connection.executeQuery(CompiledQuery.raw(EXCLUSIVE_WRITE_LOCK_SQL))
    } catch (err) {
      // Kysely rolls back only a transaction that began; this one did, and its connection goes back
      // to the pool, which must not get it inside an aborted transaction.
      await connection.executeQuery(CompiledQuery.raw('rollback')).catch(() => {})
      throw err
    }
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const noted = connection as NotedConnection
    // A transaction that ran no statement never began: nothing to commit.
    if (noted.beginPending) noted.beginPending = false
    else await super.commitTransaction(connection as never)
    this.commits.committed(noted.written.take())
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const noted = connection as NotedConnection
    noted.written.take()
    if (noted.beginPending) noted.beginPending = false
    else await super.rollbackTransaction(connection as never)
  }

  override async releaseConnection(connection: DatabaseConnection): Promise<void> {
    await super.releaseConnection((connection as NotedConnection).inner as never)
  }
}

/**
 * Statements that change no table: reads, and the transaction's own commands (SQLite's driver says
 * the same of BEGIN and COMMIT). A with-query may write, so it counts as a write of every table.
 */
const READ = /^\s*(?:select|show|explain|begin|start\s+transaction|commit|rollback|savepoint|release|set|listen)\b/i

class NotedConnection implements DatabaseConnection {
  /** The tables this connection's open transaction wrote (told to CommitListeners at its commit). */
  readonly written = new WrittenTables()
  /** A transaction was asked for and its BEGIN not sent yet (it goes with the first statement). */
  beginPending = false
  constructor(
    readonly inner: DatabaseConnection,
    private readonly note: NoteStatement
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.beginPending) {
      this.beginPending = false
      // One round trip for BEGIN and the write lock (a simple query may hold several statements).
      if (query.sql === SHARED_WRITE_LOCK_SQL) return this.inner.executeQuery<R>(CompiledQuery.raw(`begin; ${SHARED_WRITE_LOCK_SQL}`))
      await this.inner.executeQuery(CompiledQuery.raw(`begin; ${EXCLUSIVE_WRITE_LOCK_SQL}`))
    }
    const readonly = READ.test(query.sql)
    this.note(query.sql, readonly)
    this.written.note(query.sql, readonly)
    return this.inner.executeQuery<R>(query)
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    // The server never streams inside a transaction; were it to, the transaction must begin first.
    if (this.beginPending) throw new Error('a transaction cannot begin with a streamed query')
    this.note(query.sql, READ.test(query.sql))
    return this.inner.streamQuery<R>(query, chunkSize)
  }
}

/**
 * `poolMax`: connections in this process's pool (DATABASE_POOL_MAX); `lockTimeoutMs`: how long a
 * statement waits for a lock, the write lock included (DATABASE_BUSY_TIMEOUT_MS).
 */
export function postgresPool(url: string, options: { poolMax: number; lockTimeoutMs: number }): pg.Pool {
  return new pg.Pool({
    connectionString: url,
    max: options.poolMax,
    types: numberTypes,
    // A lock held past this is the same answer SQLite gives after busy_timeout (isDatabaseBusy).
    options: `-c lock_timeout=${options.lockTimeoutMs}`
  })
}
