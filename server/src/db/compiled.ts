// Queries the hot paths run on every request, built and compiled by Kysely once. Building and
// compiling a query (operation-node trees, frozen objects, identifier checks) cost more CPU than
// SQLite's indexed read itself; the SQL text never changes, only the parameters. Inside a SQLite
// transaction they run on the connection directly (database.ts directStatements).
import type { Compilable, CompiledQuery } from 'kysely'
import { directStatements, type DbOrTx } from './database.js'
import type { Database } from './schema.js'

export interface CompiledOnce<R> {
  (db: DbOrTx): CompiledQuery<R>
}

/**
 * `build` is called once, with placeholder parameters; `runCompiled` then passes the real ones in
 * the order the query's placeholders take them (the order the builder added its values).
 */
export function compiledOnce<R>(build: (db: DbOrTx) => Compilable<R>): CompiledOnce<R> {
  let compiled: CompiledQuery<R> | undefined
  // The SQL is the same for every database and transaction: one dialect, one schema.
  return (db) => (compiled ??= build(db).compile())
}

export async function runCompiled<R>(db: DbOrTx, query: CompiledOnce<R>, parameters: unknown[]): Promise<R[]> {
  const compiled = query(db)
  if (compiled.parameters.length !== parameters.length) {
    throw new Error(`compiled query takes ${compiled.parameters.length} parameters, got ${parameters.length}`)
  }
  const direct = directStatements(db)
  if (direct) return direct(compiled.sql, parameters) as R[]
  const { rows } = await db.executeQuery<R>({ ...compiled, parameters })
  return rows
}

/**
 * An insert of every column of `columns` (all of the table's, so none is forgotten), compiled once;
 * the row's values are taken in that order.
 */
export function compiledInsert<T extends keyof Database>(table: T, columns: ReadonlyArray<keyof Database[T] & string>) {
  const placeholders = Object.fromEntries(columns.map((c) => [c, null]))
  const query = compiledOnce((db) => db.insertInto(table).values(placeholders as never))
  return async (db: DbOrTx, row: { [K in keyof Database[T]]: unknown }): Promise<void> => {
    await runCompiled(db, query, columns.map((c) => row[c]))
  }
}
