// The server on PostgreSQL: a pg pool under Kysely, transactions that keep the one-writer-at-a-time
// rule the services were written for, numbers that come back as numbers, and the statements every
// process's read caches count (how they learn of other processes' commits: postgresOtherCommits in read-cache.ts).
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
 * The one lock every write transaction takes first (pg_advisory_xact_lock, released at commit or
 * rollback). On SQLite a transaction begins IMMEDIATE and so runs alone; the services' "at most
 * once" rules (a refresh token used once, a redemption per package item, a charge per cycle) read
 * and then write inside one transaction and rely on that. Taking this lock gives them the same
 * guarantee on PostgreSQL across every process and machine, at the cost of one writer at a time,
 * which SQLite has too. Reads outside transactions never wait for it. The number is arbitrary but
 * fixed: every server and CLI of one database must use the same.
 */
export const WRITE_LOCK = 7_314_001

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
    // Writes made outside a transaction on this pooled connection are no part of the next one's.
    ;(connection as NotedConnection).written.take()
    // PostgresDriver only runs statements on it, as on every connection it is given.
    await super.beginTransaction(connection as never, settings)
    try {
      await connection.executeQuery(CompiledQuery.raw(`select pg_advisory_xact_lock(${WRITE_LOCK})`))
    } catch (err) {
      // Kysely rolls back only a transaction that began; this one did, and its connection goes back
      // to the pool, which must not get it inside an aborted transaction.
      await connection.executeQuery(CompiledQuery.raw('rollback')).catch(() => {})
      throw err
    }
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await super.commitTransaction(connection as never)
    this.commits.committed((connection as NotedConnection).written.take())
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    ;(connection as NotedConnection).written.take()
    await super.rollbackTransaction(connection as never)
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
  constructor(
    readonly inner: DatabaseConnection,
    private readonly note: NoteStatement
  ) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const readonly = READ.test(query.sql)
    this.note(query.sql, readonly)
    this.written.note(query.sql, readonly)
    return this.inner.executeQuery<R>(query)
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
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
