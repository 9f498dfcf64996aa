// The tests' database on PostgreSQL. `node scripts/postgres.mjs COMMAND` runs a throwaway cluster
// and names it in TEST_DATABASE_URL, with a migrated database to copy (TEST_DATABASE_TEMPLATE);
// then every test app gets a database of its own, copied from it and dropped after the test.
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

/** A new database, migrated (a copy of the template) unless `empty`; undefined when the suite runs on SQLite. */
export async function createTestPostgresDatabase(options: { empty?: boolean } = {}): Promise<{ url: string; drop(): Promise<unknown> } | undefined> {
  const url = testPostgresUrl
  if (!url) return undefined
  const name = `t_${process.pid}_${randomBytes(4).toString('hex')}`
  const template = options.empty ? 'template0' : (process.env.TEST_DATABASE_TEMPLATE ?? 'club_template')
  await admin(url, (c) => c.query(`create database ${name} template ${template}`))
  return { url: onDatabase(url, name), drop: () => admin(url, (c) => c.query(`drop database if exists ${name} with (force)`)) }
}

/** As createTestPostgresDatabase, dropped at the test's teardown (register it after whatever uses it closes). */
export async function testPostgresDatabase(t: Teardown, options: { empty?: boolean } = {}): Promise<string | undefined> {
  const database = await createTestPostgresDatabase(options)
  if (database) t.teardown(database.drop)
  return database?.url
}
