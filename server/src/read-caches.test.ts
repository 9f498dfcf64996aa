// The read caches behind credentials and templates, seen from outside: whatever changes a token,
// key, user or template (through the API or straight into the database from another process, as
// the `club` CLI does, through the same services) is seen by the very next request.
import t, { type Test } from 'tap'
import { revokeApiKey } from './api-keys/service.js'
import { dialectOf, openDatabase } from './db/database.js'
import { readCacheStats } from './db/read-cache.js'
import { revokeUserTokens } from './oauth2/tokens.js'
import { deleteTemplate, patchTemplate } from './templates/service.js'
import { testApp, userWithApiKey, userWithToken } from './test-support/app.js'
import { templateTestContext } from './test-support/templates.js'

/** A second connection to the app's database file, as the CLI opens it. */
function otherProcess(t: { teardown(fn: () => unknown): void }, databaseUrl: string) {
  const db = openDatabase(databaseUrl)
  t.teardown(() => db.destroy())
  return db
}

t.test('credentials', async (t) => {
  const ctx = await testApp(t)
  const cli = otherProcess(t, ctx.config.DATABASE_URL)
  const current = (headers: Record<string, string>) => ctx.app.inject({ url: '/apis/v2/users/current', headers })

  t.test('a token revoked by another process is refused at once', async (t) => {
    const user = await userWithToken(ctx)
    t.equal((await current({ authorization: user.authorization })).statusCode, 200)
    t.equal((await current({ authorization: user.authorization })).statusCode, 200)
    await revokeUserTokens(cli, user.id, ctx.clock)
    const res = await current({ authorization: user.authorization })
    t.equal(res.statusCode, 401)
    t.match(res.json().message, /revoked/)
  })

  t.test('a token revoked through this server is refused at once', async (t) => {
    const user = await userWithToken(ctx)
    t.equal((await current({ authorization: user.authorization })).statusCode, 200)
    await revokeUserTokens(ctx.app.db, user.id, ctx.clock)
    t.equal((await current({ authorization: user.authorization })).statusCode, 401)
  })

  t.test('a cached token still expires on time', async (t) => {
    const user = await userWithToken(ctx)
    t.equal((await current({ authorization: user.authorization })).statusCode, 200)
    ctx.clock.advance(ctx.config.ACCESS_TOKEN_TTL_SECONDS * 1000)
    const res = await current({ authorization: user.authorization })
    t.equal(res.statusCode, 401)
    t.match(res.json().message, /expired/)
  })

  t.test("a user's new name and role show at once; a deleted user's token stops working", async (t) => {
    const user = await userWithToken(ctx, 'staff')
    t.equal((await current({ authorization: user.authorization })).json().role, 'staff')
    await cli.updateTable('users').set({ role: 'member', first_name: 'Ada' }).where('id', '=', user.id).execute()
    t.match((await current({ authorization: user.authorization })).json(), { role: 'member', firstName: 'Ada' })
    await cli.deleteFrom('users').where('id', '=', user.id).execute()
    t.equal((await current({ authorization: user.authorization })).statusCode, 401)
  })

  t.test('an API key revoked by another process is refused at once', async (t) => {
    const { apiKey, apiKeyId } = await userWithApiKey(ctx)
    t.equal((await current({ 'x-api-key': apiKey })).statusCode, 200)
    t.equal((await current({ 'x-api-key': apiKey })).statusCode, 200)
    await revokeApiKey(cli, apiKeyId, ctx.clock)
    const res = await current({ 'x-api-key': apiKey })
    t.equal(res.statusCode, 401)
    t.match(res.json().message, /revoked/)
  })
})

t.test('templates', async (t) => {
  const { ctx, call, create, venue, staff } = await templateTestContext(t)
  const cli = otherProcess(t, ctx.config.DATABASE_URL)
  const template = await create()
  const url = `/apis/v2/templates/${template.id}`
  t.equal((await call('GET', url)).json().version, 1)

  t.test('a PATCH is seen by the next read', async (t) => {
    t.equal((await call('PATCH', url, { name: 'Evening play', areas: { items: [{ id: venue.annex.id }] } })).statusCode, 200)
    const res = await call('GET', url)
    t.equal(res.headers.etag, '"2"')
    t.match(res.json(), { version: 2, name: 'Evening play' })
    t.same(res.json().areas.items.map((a: { id: string }) => a.id), [venue.annex.id])
  })

  t.test("another process's change is seen by the next read, and its deletion is a 404", async (t) => {
    t.equal((await call('GET', url)).statusCode, 200)
    await patchTemplate(cli, template.id, { name: 'Renamed elsewhere' }, { id: staff.id }, ctx.clock)
    t.equal((await call('GET', url)).json().name, 'Renamed elsewhere')
    await deleteTemplate(cli, template.id)
    t.equal((await call('GET', url)).statusCode, 404)
  })

  t.test('a page of the list follows creations, changes and deletions, here and elsewhere', async (t) => {
    const list = async (query = '') => (await call('GET', `/apis/v2/templates?ipp=20${query}`)).json()
    const names = async (query = '') => (await list(query)).items.map((i: { name: string }) => i.name).sort()
    const before = await list()
    t.same(await list(), before, 'the same page twice')
    const added = await create({ name: 'Junior clinic' })
    t.ok((await names()).includes('Junior clinic'), 'a template created through the API is listed at once')
    t.equal((await list())._total, before._total + 1)
    await call('PATCH', `/apis/v2/templates/${added.id}`, { areas: { items: [{ id: venue.annex.id }] } })
    t.same(await names(`&areaId=${venue.annex.id}`), ['Junior clinic'], 'a place filter sees the new reference')
    await patchTemplate(cli, added.id, { name: 'Senior clinic' }, { id: staff.id }, ctx.clock)
    t.ok((await names()).includes('Senior clinic'), "another process's rename is listed at once")
    await deleteTemplate(cli, added.id)
    t.same(await names(`&areaId=${venue.annex.id}`), [], "another process's deletion is gone from the page at once")
  })
})

/**
 * A template and a member whose credential is in the cache (read twice), with the cache's counts
 * before what the test does next.
 */
async function cachedCredential(t: Test) {
  const context = await templateTestContext(t)
  const { ctx, create } = context
  const user = await userWithToken(ctx)
  const current = () => ctx.app.inject({ url: '/apis/v2/users/current', headers: { authorization: user.authorization } })
  const credentials = () => readCacheStats(ctx.app.db).find((cache) => cache.name === 'access-tokens')!
  const template = await create()
  t.equal((await current()).statusCode, 200)
  t.equal((await current()).statusCode, 200)
  return { ...context, user, current, credentials, template, before: credentials() }
}

t.test("another process's write retires only what was read from the tables it wrote (PostgreSQL counts them per table)", async (t) => {
  const { ctx, call, staff, user, current, credentials, template, before } = await cachedCredential(t)
  const cli = otherProcess(t, ctx.config.DATABASE_URL)

  await patchTemplate(cli, template.id, { name: 'Renamed elsewhere' }, { id: staff.id }, ctx.clock)
  t.equal((await current()).statusCode, 200)
  const after = credentials()
  if (dialectOf(ctx.app.db) === 'postgres') {
    t.equal(after.misses, before.misses, 'a write to templates left the cached credential in place')
    t.equal(after.hits, before.hits + 1)
  } else {
    // SQLite's data version tells only that another connection committed, to whichever table.
    t.equal(after.misses, before.misses + 1, 'read again after any commit of another connection')
  }
  t.equal((await call('GET', `/apis/v2/templates/${template.id}`)).json().name, 'Renamed elsewhere', 'the template itself is read again')

  // A commit to the credential's own tables is still seen by the very next request.
  await revokeUserTokens(cli, user.id, ctx.clock)
  const res = await current()
  t.equal(res.statusCode, 401)
  t.match(res.json().message, /revoked/)
})

t.test("this server's own write transaction retires only what was read from the tables it wrote", async (t) => {
  const { call, current, credentials, template, before } = await cachedCredential(t)
  // A PATCH through the API: one write transaction (BEGIN, the writes, COMMIT) to the templates' tables.
  t.equal((await call('PATCH', `/apis/v2/templates/${template.id}`, { name: 'Renamed here' })).statusCode, 200)
  t.equal((await current()).statusCode, 200)
  const after = credentials()
  // Neither the staff's credential (the PATCH's) nor the member's was read again.
  t.equal(after.misses, before.misses, 'the cached credentials were not read again')
})
