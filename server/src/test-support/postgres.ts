// The tests' database on PostgreSQL. `node scripts/postgres.mjs COMMAND` runs a throwaway cluster
// and names it in TEST_DATABASE_URL, with a migrated database to copy (TEST_DATABASE_TEMPLATE);
// then every test app gets a database of its own, copied from it, given back after the test and
// emptied for the next one of the same process.
import { randomBytes } from 'node:crypto'
import pg from 'pg'

interface Teardown {
  teardown(fn: () => unknown): void
}

/** Set when the suite runs on PostgreSQL (through scripts/postgres.mjs). */
export const testPostgresUrl: string | undefined = process.env.TEST_DATABASE_URL

/** The same cluster's URL on another database. */
export function onDatabase(url: string, name: string): string {
  const u = new URL(url)
  u.pathname = `/${name}`
  return u.toString()
}

async function admin<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await run(client)
  } finally {
    await client.end()
  }
}

/**
 * Databases this process's tests gave back, emptied back to the template's rows, for the next test to
 * take. A copy of the template costs PostgreSQL a CREATE DATABASE and a DROP (a tenth of a second of
 * its CPU, for thousands of test apps); emptying 60 small tables costs a hundredth.
 */
const free: string[] = []

/** What a database copied from the template holds: its schema's fingerprint and the statements that bring its rows back. */
interface TemplateState {
  fingerprint: string
  reset: string
}

let templateState: Promise<TemplateState> | undefined

/**
 * The schema as one digest: tables and their columns, indexes, triggers, functions and sequences. A
 * test that changed it (a migration run down) gives back a database the next test cannot use as a copy
 * of the template: that one is dropped instead.
 */
const FINGERPRINT = `select md5(string_agg(x, ',' order by x)) as fingerprint from (
  select c.relname || '.' || a.attname || ':' || format_type(a.atttypid, a.atttypmod) || ':' || a.attnotnull as x
    from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and a.attnum > 0 and not a.attisdropped
  union all select c.relname || ':' || c.relkind::text from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public'
  union all select indexdef from pg_indexes where schemaname = 'public'
  union all select tgname || ':' || tgrelid::regclass::text || ':' || tgfoid::regproc::text from pg_trigger where not tgisinternal
  union all select p.proname || ':' || md5(p.prosrc) from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'public'
) s`

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`
const quoteLiteral = (text: string) => `'${text.replaceAll("'", "''")}'`

/** Reads a fresh copy of the template: its fingerprint, and one script that empties every table and puts the template's rows and sequences back. */
async function readTemplateState(url: string): Promise<TemplateState> {
  return admin(url, async (c) => {
    const { fingerprint } = (await c.query<{ fingerprint: string }>(FINGERPRINT)).rows[0]!
    const tables = (await c.query<{ name: string }>(`select tablename as name from pg_tables where schemaname = 'public' order by tablename`)).rows.map((r) => r.name)
    const statements = [
      // Neither the tables' triggers (change counters, event numbering) nor the foreign keys' fire while emptying.
      'set local session_replication_role = replica',
      ...tables.map((table) => `delete from ${quoteIdent(table)}`)
    ]
    for (const table of tables) {
      const { rows } = await c.query<{ rows: string | null }>(`select json_agg(t)::text as rows from ${quoteIdent(table)} t`)
      if (rows[0]?.rows) statements.push(`insert into ${quoteIdent(table)} select * from json_populate_recordset(null::${quoteIdent(table)}, ${quoteLiteral(rows[0].rows)})`)
    }
    const sequences = await c.query<{ name: string; value: string | null }>(`select sequencename as name, last_value::text as value from pg_sequences where schemaname = 'public'`)
    for (const { name, value } of sequences.rows) {
      statements.push(value === null ? `alter sequence ${quoteIdent(name)} restart` : `select setval(${quoteLiteral(quoteIdent(name))}, ${value}, true)`)
    }
    return { fingerprint, reset: `begin; ${statements.join('; ')}; commit` }
  })
}

/** Empties a given-back database to the template's rows and keeps it for the next test, or drops it when its schema changed. */
async function giveBack(url: string, name: string, state: TemplateState): Promise<void> {
  const kept = await admin(onDatabase(url, name), async (c) => {
    // A connection left open by the test (a process it killed, an app not closed) must not see the next test's rows.
    await c.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()')
    if ((await c.query<{ fingerprint: string }>(FINGERPRINT)).rows[0]!.fingerprint !== state.fingerprint) return false
    await c.query(state.reset)
    return true
  })
  if (kept) free.push(name)
  else await admin(url, (c) => c.query(`drop database if exists ${name} with (force)`))
}

/**
 * A database of its own, migrated (a copy of the template, or one another test of this process gave
 * back, emptied to the template's rows) unless `empty`; undefined when the suite runs on SQLite.
 * `drop` gives it back.
 */
export async function createTestPostgresDatabase(options: { empty?: boolean } = {}): Promise<{ url: string; drop(): Promise<unknown> } | undefined> {
  const url = testPostgresUrl
  if (!url) return undefined
  if (options.empty) {
    const name = `t_${process.pid}_${randomBytes(4).toString('hex')}`
    await admin(url, (c) => c.query(`create database ${name} template template0`))
    return { url: onDatabase(url, name), drop: () => admin(url, (c) => c.query(`drop database if exists ${name} with (force)`)) }
  }
  let name = free.pop()
  if (!name) {
    name = `t_${process.pid}_${randomBytes(4).toString('hex')}`
    const template = process.env.TEST_DATABASE_TEMPLATE ?? 'club_template'
    await admin(url, (c) => c.query(`create database ${name} template ${template}`))
    // Read from the first copy, not the template: a connection to the template would refuse its copies.
    templateState ??= readTemplateState(onDatabase(url, name))
    await templateState
  }
  const taken = name
  let given = false
  return {
    url: onDatabase(url, taken),
    drop: async () => {
      if (given) return
      given = true
      await giveBack(url, taken, await templateState!)
    }
  }
}

/** As createTestPostgresDatabase, dropped at the test's teardown (register it after whatever uses it closes). */
export async function testPostgresDatabase(t: Teardown, options: { empty?: boolean } = {}): Promise<string | undefined> {
  const database = await createTestPostgresDatabase(options)
  if (database) t.teardown(database.drop)
  return database?.url
}
