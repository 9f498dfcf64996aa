// Opens the SQLite database with every pragma the server relies on, and migrates it.
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, Migrator, SqliteDialect, type Transaction } from 'kysely'
import type { Database } from './schema.js'
import { migrations } from './migrations/index.js'

export type Db = Kysely<Database>
/** A service function takes either the database or a transaction as its first argument. */
export type DbOrTx = Kysely<Database> | Transaction<Database>

export function openDatabase(file: string): Db {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
  const sqlite = new SQLite(file)
  sqlite.pragma('journal_mode = WAL')
  sqlite.pragma('foreign_keys = ON')
  sqlite.pragma('busy_timeout = 5000')
  // WAL with synchronous=NORMAL is durable across application crashes; only an OS crash may lose
  // the last transactions, which is the usual trade for an API server.
  sqlite.pragma('synchronous = NORMAL')
  return new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) })
}

const STATEMENT_CACHE_SIZE = 500

/**
 * Kysely's SQLite driver prepares every query anew, and preparing cost as much as running the
 * query on the hot paths (a token look-up, a status poll). The same SQL text is prepared once and
 * reused; the cache is bounded (LRU) because IN-lists of different lengths make distinct texts.
 * Safe because the server never streams (iterates) a statement while another query runs.
 */
function withStatementCache(sqlite: SQLite.Database) {
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
      return statement
    }
  }
}

export class MigrationError extends Error {
  override name = 'MigrationError'
}

/** Applies every pending migration; throws when one fails, so nothing starts on a half-migrated schema. */
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } })
  const { error, results } = await migrator.migrateToLatest()
  const failed = results?.find((r) => r.status === 'Error')
  if (error || failed) {
    const cause = error instanceof Error ? error.message : String(error ?? 'unknown error')
    throw new MigrationError(`migration ${failed?.migrationName ?? ''} failed: ${cause}`.replace('  ', ' '))
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
