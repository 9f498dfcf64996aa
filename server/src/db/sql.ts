// The few SQL functions that SQLite and PostgreSQL spell differently, as expressions a service puts in
// its query: the services call these and hold no dialect branch of their own. (A row's identity needs
// none: PostgreSQL's template_search has a real `rowid` column, SQLite's FTS5 table its implicit one.)
import { sql, type Expression, type Kysely, type RawBuilder, type SqlBool, type Transaction } from 'kysely'
import { dialectOf, type Db } from './database.js'
import { SHARED_WRITE_LOCK_SQL } from './postgres.js'
import type { Database } from './schema.js'

/** The larger of two values: PostgreSQL's greatest, SQLite's two-argument max. */
export function greatest<T>(db: Kysely<any>, a: Expression<T>, b: Expression<T>): RawBuilder<T> {
  return sql<T>`${sql.raw(dialectOf(db) === 'postgres' ? 'greatest' : 'max')}(${a}, ${b})`
}

/** The smaller of two values: PostgreSQL's least, SQLite's two-argument min. */
export function least<T>(db: Kysely<any>, a: Expression<T>, b: Expression<T>): RawBuilder<T> {
  return sql<T>`${sql.raw(dialectOf(db) === 'postgres' ? 'least' : 'min')}(${a}, ${b})`
}

/** A value as a floating-point number: PostgreSQL's double precision, SQLite's real. */
export function castToReal(db: Kysely<any>, value: Expression<unknown>): RawBuilder<number | null> {
  return sql<number | null>`cast(${value} as ${sql.raw(dialectOf(db) === 'postgres' ? 'double precision' : 'real')})`
}

/**
 * The elements of a JSON array (a text column or parameter) as a table `alias` with one column,
 * `value`, each element as JSON: `alias.value ->> 0`, `alias.value -> 'product' ->> 'id'` read the same
 * on both (PostgreSQL's jsonb_array_elements, SQLite's json_each).
 */
export function jsonArrayElements(db: Kysely<any>, array: Expression<string | null> | string, alias: string): RawBuilder<unknown> {
  return dialectOf(db) === 'postgres'
    ? sql`jsonb_array_elements(${array}::jsonb) as ${sql.id(alias)}(value)`
    : sql`json_each(${array}) as ${sql.id(alias)}`
}

/**
 * Whether a row of the search table `table` (under `alias` in the query) holds `search` in any of its
 * `columns`, whatever the case. The table is, on SQLite, an FTS5 trigram table: three characters or
 * more are its index's (MATCH), shorter ones a scan. On PostgreSQL it is a plain table under
 * pg_trgm's GIN indexes on lower(column) (lower(coalesce(column, '')) for a nullable one), which
 * answer LIKE over the same expressions; `columns` must be the table's every column, as MATCH reads
 * them all.
 */
export function textContains(
  db: Kysely<any>,
  table: string,
  columns: Array<{ name: string; nullable: boolean }>,
  search: string,
  alias = table
): RawBuilder<SqlBool> {
  const lowered = columns.map(({ name, nullable }) => {
    const column = sql.ref(`${alias}.${name}`)
    return nullable ? sql`lower(coalesce(${column}, ''))` : sql`lower(${column})`
  })
  const any = (tests: RawBuilder<unknown>[]) => sql<SqlBool>`(${sql.join(tests, sql` or `)})`
  if (dialectOf(db) === 'postgres') {
    const pattern = `%${search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`
    return any(lowered.map((column) => sql`${column} like ${pattern}`))
  }
  // An FTS5 table's hidden column of its own name: `alias MATCH` is refused, `alias.table MATCH` is not.
  if ([...search].length >= 3) return sql<SqlBool>`${sql.ref(`${alias}.${table}`)} match ${`"${search.replaceAll('"', '""')}"`}`
  const needle = search.toLowerCase()
  return any(lowered.map((column) => sql`instr(${column}, ${needle}) > 0`))
}

/**
 * The rows of the search table `table` holding `search` (textContains), to select from as
 * `matches`, in `matches.rowid`'s order when asked for it. On SQLite that is the FTS5
 * table itself, which walks its matches in rowid order and stops at the LIMIT. On PostgreSQL it is
 * a materialized CTE: left to choose, the planner walked the rowid index testing every row, or the
 * templates in list order, where the trigram indexes find the ~1% that match (EXPLAIN ANALYZE at
 * 100,000 templates: 1,061 ms and 299 ms against 24 ms).
 */
export function searchMatches(db: Kysely<any>, table: string, columns: Array<{ name: string; nullable: boolean }>, search: string) {
  if (dialectOf(db) === 'postgres') {
    return db
      .with(
        (cte) => cte('matches').materialized(),
        (w) => w.selectFrom(table).select(`${table}.rowid`).where(textContains(db, table, columns, search))
      )
      .selectFrom('matches')
  }
  return db.selectFrom(`${table} as matches`).where(textContains(db, table, columns, search, 'matches'))
}

/**
 * Whether finding the newest of searchMatches reads every match anyway: PostgreSQL's materialized
 * matches are all found, then sorted, so counting them too costs nothing more, where SQLite's FTS5
 * stops at the LIMIT and a count would read on to the last match.
 */
export function searchReadsEveryMatch(db: Kysely<any>): boolean {
  return dialectOf(db) === 'postgres'
}

/**
 * Whether an event written to the outbox takes its number at its transaction's commit (PostgreSQL,
 * migration 0032: a deferred trigger) rather than when it is written (SQLite, whose write
 * transactions run one at a time).
 */
export function eventsNumberedAtCommit(db: Kysely<any>): boolean {
  return dialectOf(db) === 'postgres'
}

/**
 * A transaction whose rules are kept by its own row locks (forUpdate) and unique keys: on PostgreSQL
 * it runs beside other such transactions, waiting only for a write transaction not written so (those
 * take the cluster's write lock exclusive: WRITE_LOCK in db/postgres.ts). On SQLite every
 * transaction runs alone (BEGIN IMMEDIATE), this one too.
 */
export function rowLocked<T>(db: Db, work: (tx: Transaction<Database>) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (tx) => {
    // The first statement: the driver sends it with BEGIN and takes no exclusive lock.
    if (dialectOf(tx) === 'postgres') await sql.raw(SHARED_WRITE_LOCK_SQL).execute(tx)
    return work(tx)
  })
}

/**
 * `query` locking the rows it reads until the transaction ends (PostgreSQL's FOR UPDATE): a second
 * transaction asking for one waits, then reads it as the first left it. SQLite has no row locks and
 * needs none: its write transactions run one at a time.
 */
export function forUpdate<Q extends { forUpdate(): Q }>(db: Kysely<any>, query: Q): Q {
  return dialectOf(db) === 'postgres' ? query.forUpdate() : query
}
