// Compiled queries (db/compiled.ts) answer as Kysely's own queries do, in a transaction and outside
// one; inside a SQLite transaction they skip Kysely's executor (database.ts directStatements), which
// must never let a query from outside the transaction run inside it.
import t from 'tap'
import { testApp } from '../test-support/app.js'
import { compiledInsert, compiledOnce, runCompiled } from './compiled.js'
import { dialectOf, directStatements, isUniqueViolation, observeQueries } from './database.js'

const regionById = compiledOnce((db) => db.selectFrom('regions').selectAll().where('id', '=', ''))
const renameRegion = compiledOnce((db) => db.updateTable('regions').set({ name: '' }).where('id', '=', ''))
const insertRegion = compiledInsert('regions', ['id', 'name', 'slug', 'created_at', 'updated_at'])
const region = (id: string) => ({ id, name: `Region ${id}`, slug: `region-${id}`, created_at: '2026-03-01T10:00:00.000Z', updated_at: '2026-03-01T10:00:00.000Z' })

t.test("in a transaction: the transaction's own writes, a write's empty answer, a failure's code", async (t) => {
  const { app } = await testApp(t)
  await app.db.transaction().execute(async (tx) => {
    t.equal(directStatements(tx) !== undefined, dialectOf(app.db) === 'sqlite', 'directly on SQLite only')
    await insertRegion(tx, region('r1'))
    t.same(await runCompiled(tx, renameRegion, ['North', 'r1']), [], 'a write without RETURNING answers no rows')
    t.match(await runCompiled(tx, regionById, ['r1']), [{ id: 'r1', name: 'North' }], 'sees its own uncommitted writes')
  })
  t.match(await runCompiled(app.db, regionById, ['r1']), [{ name: 'North' }], 'committed')
  // A failed statement ends a PostgreSQL transaction: one of its own.
  const duplicate = await app.db
    .transaction()
    .execute((tx) => insertRegion(tx, region('r1')))
    .catch((err: unknown) => err)
  t.ok(isUniqueViolation(duplicate), 'a broken unique key keeps its code (isUniqueViolation)')
})

t.test('outside a transaction, a compiled query never runs inside another request’s open one', async (t) => {
  const { app } = await testApp(t)
  let outside: Promise<unknown[]> | undefined
  await app.db
    .transaction()
    .execute(async (tx) => {
      await insertRegion(tx, region('r2'))
      // Asked while this transaction holds SQLite's one connection: it must wait for the rollback
      // (on PostgreSQL it has a connection of its own), so it never sees the row.
      outside = runCompiled(app.db, regionById, ['r2'])
      throw new Error('rolled back')
    })
    .catch(() => undefined)
  t.same(await outside, [], 'the rolled-back row was never seen')
  t.equal(directStatements(app.db), undefined, 'no direct statements outside a transaction')
})

t.test('the metrics still time every query run directly', async (t) => {
  const { app } = await testApp(t)
  const seen: string[] = []
  observeQueries(app.db, (ms, sql) => {
    t.ok(ms >= 0)
    seen.push(sql)
  })
  await app.db.transaction().execute(async (tx) => {
    await insertRegion(tx, region('r3'))
    await runCompiled(tx, regionById, ['r3'])
  })
  t.ok(seen.some((sql) => sql.startsWith('insert into "regions"')), 'the insert')
  t.ok(seen.some((sql) => sql.startsWith('select * from "regions"')), 'the select')
})
