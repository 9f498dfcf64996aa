// The server on PostgreSQL: a pg pool under Kysely, transactions that keep the one-writer-at-a-time
// rule the services were written for, numbers that come back as numbers, and the change feed that
// tells every process's read caches of the others' commits.
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
import type { OtherCommits } from './read-cache.js'

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
const WRITE_LOCK = 7_314_001

/** int8 (counts, sums) and numeric come back from pg as strings; the services expect numbers. */
function parseNumber(text: string): number {
  const value = Number(text)
  if (!Number.isSafeInteger(value) && Number.isInteger(value)) throw new RangeError(`a number from the database is beyond 2^53: ${text}`)
  return value
}

const INT8 = 20
const NUMERIC = 1700

export const numberTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8 || oid === NUMERIC) return parseNumber
    // pg's own parsers for everything else (the same call its defaults make).
    return (pg.types.getTypeParser as (oid: number, format?: string) => unknown)(oid, format)
  }
} as pg.CustomTypesConfig

export interface PostgresOptions {
  /** Connections in this process's pool (DATABASE_POOL_MAX). */
  poolMax: number
  /** How long a statement waits for a lock (the write lock included) before failing: DATABASE_BUSY_TIMEOUT_MS. */
  lockTimeoutMs: number
  /** Every statement this process runs, before it runs (the read caches count this process's writes there). */
  noteStatement(sql: string, readonly: boolean): void
  /** Closed with the database (the change feed's own connection). */
  onDestroy(): Promise<void>
}

/** Kysely's PostgresDialect with the write lock and statement notes. */
export class ClubPostgresDialect extends PostgresDialect {
  constructor(
    readonly pool: pg.Pool,
    private readonly options: PostgresOptions
  ) {
    super({ pool })
  }

  override createDriver(): Driver {
    return new ClubPostgresDriver(this.pool, this.options)
  }
}

class ClubPostgresDriver extends PostgresDriver {
  constructor(
    pool: pg.Pool,
    private readonly options: PostgresOptions
  ) {
    super({ pool })
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    return new NotedConnection(await super.acquireConnection(), this.options.noteStatement)
  }

  override async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    // PostgresDriver only runs statements on it, as on every connection it is given.
    await super.beginTransaction(connection as never, settings)
    await connection.executeQuery(CompiledQuery.raw(`select pg_advisory_xact_lock(${WRITE_LOCK})`))
  }

  override async releaseConnection(connection: DatabaseConnection): Promise<void> {
    await super.releaseConnection((connection as NotedConnection).inner as never)
  }

  override async destroy(): Promise<void> {
    await this.options.onDestroy()
    await super.destroy()
  }
}

/**
 * Statements that change no table: reads, and the transaction's own commands (SQLite's driver says
 * the same of BEGIN and COMMIT). A with-query may write, so it counts as a write of every table.
 */
const READ = /^\s*(?:select|show|explain|begin|start\s+transaction|commit|rollback|savepoint|release|set|listen)\b/i

class NotedConnection implements DatabaseConnection {
  constructor(
    readonly inner: DatabaseConnection,
    private readonly note: (sql: string, readonly: boolean) => void
  ) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    this.note(query.sql, READ.test(query.sql))
    return this.inner.executeQuery<R>(query)
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    this.note(query.sql, READ.test(query.sql))
    return this.inner.streamQuery<R>(query, chunkSize)
  }
}

export function postgresPool(url: string, options: Pick<PostgresOptions, 'poolMax' | 'lockTimeoutMs'>): pg.Pool {
  return new pg.Pool({
    connectionString: url,
    max: options.poolMax,
    types: numberTypes,
    // A lock held past this is the same answer SQLite gives after busy_timeout (isDatabaseBusy).
    options: `-c lock_timeout=${options.lockTimeoutMs}`
  })
}

/** The channel every table's change trigger notifies (migration 0018), with the table's name. */
export const CHANGE_CHANNEL = 'club_changes'

export interface ChangeFeedEvents {
  /** The feed lost its connection (once per outage). */
  lost(err: Error): void
  /** The feed is listening again; everything read before may have changed. */
  restored(): void
}

/**
 * Other processes' commits, as the change triggers announce them (LISTEN club_changes). PostgreSQL
 * delivers a notification when its transaction commits, to every listening session, ours included;
 * our own writes are counted before they run (noteStatement), so a notification only needs to say
 * "something changed". While the listening connection is down the feed is not trusted (every cached
 * read goes to the database); once it listens again, one change is reported, so answers kept before
 * the outage are not reused.
 */
export class ChangeFeed implements OtherCommits {
  #changed = false
  #listening = false
  #client: pg.Client | null = null
  #closed = false
  #retry: NodeJS.Timeout | null = null
  #delayMs = 100
  #outage = false

  constructor(
    private readonly url: string,
    private readonly events: ChangeFeedEvents
  ) {}

  changed(): boolean {
    const changed = this.#changed
    this.#changed = false
    return changed
  }

  trusted(): boolean {
    return this.#listening
  }

  /** Connects and listens; resolves once listening (or once the first attempt failed: the feed keeps trying). */
  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url })
    this.#client = client
    client.on('notification', () => {
      this.#changed = true
    })
    const lost = (err: Error) => {
      if (this.#client !== client) return
      this.#client = null
      this.#listening = false
      client.removeAllListeners('notification')
      client.end().catch(() => {})
      if (this.#closed) return
      if (!this.#outage) {
        this.#outage = true
        this.events.lost(err)
      }
      this.#retry = setTimeout(() => {
        this.#retry = null
        void this.start()
      }, this.#delayMs)
      this.#delayMs = Math.min(this.#delayMs * 2, 5_000)
    }
    client.on('error', lost)
    client.on('end', () => lost(new Error('the change feed connection ended')))
    try {
      await client.connect()
      await client.query(`listen ${CHANGE_CHANNEL}`)
    } catch (err) {
      lost(err as Error)
      return
    }
    if (this.#client !== client) return
    this.#listening = true
    this.#changed = true
    this.#delayMs = 100
    if (this.#outage) {
      this.#outage = false
      this.events.restored()
    }
  }

  async close(): Promise<void> {
    this.#closed = true
    if (this.#retry) clearTimeout(this.#retry)
    const client = this.#client
    this.#client = null
    this.#listening = false
    await client?.end().catch(() => {})
  }
}
