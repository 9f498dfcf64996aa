// A database server that cannot be reached is an outage, answered 503 with Retry-After in the
// platform's shape, never a 500. Only PostgreSQL has a server to lose; the PostgreSQL run of the
// suite (scripts/postgres.mjs) cuts a real connection, and both runs check what counts as unreachable.
import { connect, createServer, type Server, type Socket } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { errorOf, testApp, userWithToken } from '../test-support/app.js'
import { createTestPostgresDatabase, testPostgresUrl } from '../test-support/postgres.js'
import { isDatabaseBusy, isDatabaseUnreachable, isUniqueViolation } from './database.js'

/** The error Node gives for a connection to a port nothing listens on. */
async function refusedConnection(): Promise<Error> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return new Promise((resolve) => connect(port, '127.0.0.1').on('error', resolve))
}

t.test('what counts as the database being unreachable', async (t) => {
  const refused = await refusedConnection()
  t.ok(isDatabaseUnreachable(refused), `a refused connection (${(refused as { code?: string }).code})`)
  t.ok(isDatabaseUnreachable(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })), 'PostgreSQL shutting down')
  t.ok(isDatabaseUnreachable(Object.assign(new Error('the database system is starting up'), { code: '57P03' })))
  t.ok(isDatabaseUnreachable(Object.assign(new Error('sorry, too many clients already'), { code: '53300' })))
  t.ok(isDatabaseUnreachable(new Error('Connection terminated unexpectedly')), "pg's own, without a code")
  const duplicate = Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' })
  t.notOk(isDatabaseUnreachable(duplicate), 'a refused write is not an outage')
  t.ok(isUniqueViolation(duplicate))
  t.notOk(isDatabaseUnreachable(Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })))
  t.ok(isDatabaseBusy(Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' })), "PostgreSQL's lock timeout is busy, as SQLite's")
})

/** A TCP front for the throwaway cluster's socket, which the test can cut and open again on the same port. */
async function cuttableProxy(socketDir: string) {
  const sockets = new Set<Socket>()
  let port = 0
  let server: Server | undefined
  const open = async () => {
    server = createServer((client) => {
      const upstream = connect(join(socketDir, '.s.PGSQL.5432'))
      for (const s of [client, upstream]) {
        sockets.add(s)
        s.on('close', () => sockets.delete(s))
        s.on('error', () => {})
      }
      client.pipe(upstream).pipe(client)
    })
    await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port
  }
  await open()
  return {
    port: () => port,
    async cut() {
      await new Promise<void>((resolve) => {
        server!.close(() => resolve())
        for (const s of sockets) s.destroy()
      })
    },
    open
  }
}

if (testPostgresUrl) {
  const clusterUrl = testPostgresUrl
  t.test('PostgreSQL out of reach answers 503 with Retry-After, and the next request after it is back works', async (t) => {
    const database = (await createTestPostgresDatabase())!
    t.teardown(database.drop)
    const socketDir = new URL(clusterUrl).searchParams.get('host')!
    const proxy = await cuttableProxy(socketDir)
    t.teardown(() => proxy.cut())
    const name = new URL(database.url).pathname
    const ctx = await testApp(t, { DATABASE_URL: `postgres://club@127.0.0.1:${proxy.port()}${name}`, READ_CACHE_ENTRIES: '0' })
    const staff = await userWithToken(ctx, 'staff')
    const create = () =>
      ctx.app.inject({ method: 'POST', url: '/apis/v2/templates', headers: { authorization: staff.authorization }, payload: { name: 'Open play', type: 'EVENT', data: {} } })
    t.equal((await create()).statusCode, 201)

    await proxy.cut()
    const down = await create()
    t.equal(down.statusCode, 503)
    t.equal(down.headers['retry-after'], '5')
    t.same(errorOf(down), { statusCode: 503, error: 'Service Unavailable', message: 'the database could not be reached; try again shortly' })
    t.match(ctx.logs(), /"msg":"database unreachable"/)
    t.notMatch(ctx.logs(), /request failed/, 'not logged as a failed request')

    await proxy.open()
    t.equal((await create()).statusCode, 201, 'the pool connects again')
  })
}
