// The delivery worker across processes, as `pnpm start` runs them: two servers and the CLI writing
// at once send each event once (one worker holds the lease), and a server killed (SIGKILL) in the
// middle of a burst of writes loses nothing: after a restart every committed change has one event in
// the feed, and every event reaches the receiver. One SQLite file, or one PostgreSQL database when
// the suite runs there. The receiver checks each delivery with the `standardwebhooks` package.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Teardown } from '../test-support/app.js'
import { testPostgresDatabase } from '../test-support/postgres.js'
import { club as runClub, clubJson as runClubJson, fetchJson, processEnv, startServer as startProcess, type StartedServer as Server } from '../test-support/processes.js'
import { WebhookReceiver, type ReceivedDelivery } from '../test-support/webhook-receiver.js'
import { IN_FLIGHT } from './worker.js'

const TYPES = ['package.issued', 'package_redemption.created', 'package_redemption.canceled']

// Servers started and killed, the lease run out once: well past the suite's default per file.
t.setTimeout(300_000)

async function setup(t: Teardown) {
  const dir = mkdtempSync(join(tmpdir(), 'club-webhooks-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const env = processEnv((await testPostgresDatabase(t)) ?? join(dir, 'club.db'), {
    TOKEN_RATE_LIMIT_MAX: '100000',
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
    WEBHOOK_POLL_MS: '50',
    // The shortest lease: a killed holder's successor waits at most this long.
    WEBHOOK_LEASE_SECONDS: '16'
  })
  const startServer = () => startProcess(t, env)
  const club = (...args: string[]) => runClub(env, ...args)
  const clubJson = (...args: string[]) => runClubJson(env, ...args)
  const receiver = await WebhookReceiver.start(t)
  const admin = await clubJson('users', 'create', '--email', 'admin@example.org', '--password', 'correct horse battery', '--role', 'admin')
  const endpoint = await clubJson('webhooks', 'endpoints', 'create', '--url', receiver.url, ...TYPES.flatMap((type) => ['--type', type]))
  receiver.secret = endpoint.secret
  return { env, startServer, club, clubJson, receiver, admin, endpoint }
}

async function signIn(base: string): Promise<string> {
  const res = await fetchJson(base, '/apis/v2/oauth2/token', { method: 'POST', form: { grant_type: 'password', username: 'admin@example.org', password: 'correct horse battery' } })
  if (res.status !== 201) throw new Error(`sign-in: ${res.status}`)
  return res.body.access_token
}

/** Every event of the feed of the types sent, oldest first, following `_links.next`. */
async function feed(base: string, bearer: string): Promise<Array<{ id: string; type: string; resource: { id: string } }>> {
  const events = []
  let path = `/apis/v2/events?ipp=100&types=${TYPES.join(',')}`
  for (;;) {
    const page = await fetchJson(base, path, { bearer })
    if (page.status !== 200) throw new Error(`feed: ${page.status} ${JSON.stringify(page.body)}`)
    events.push(...page.body.items)
    if (page.body.items.length < 100) return events
    path = page.body._links.next.href
  }
}

async function packageTemplate(base: string, bearer: string): Promise<string> {
  const res = await fetchJson(base, '/apis/v2/templates', {
    method: 'POST',
    bearer,
    json: { name: '5 replays', type: 'PACKAGE', data: { validityDays: 30, items: [{ type: 'REPLAY', displayName: 'Replay', displayNamePlural: 'Replays', totalItems: 5 }] } }
  })
  if (res.status !== 201) throw new Error(`template: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.id
}

const counts = (received: ReceivedDelivery[]) => {
  const byId = new Map<string, number>()
  for (const d of received) byId.set(d.id, (byId.get(d.id) ?? 0) + 1)
  return byId
}

t.test('two servers and the CLI writing at once: every event is delivered, each by one worker, once', async (t) => {
  const { startServer, club, receiver, admin } = await setup(t)
  const [a, b] = await Promise.all([startServer(), startServer()])
  const bearer = await signIn(a.base)
  const template = await packageTemplate(a.base, bearer)
  const issue = (server: Server) => fetchJson(server.base, '/apis/v2/packages', { method: 'POST', bearer, json: { template: { id: template }, user: { id: admin.id } } })
  const issued = await Promise.all(Array.from({ length: 20 }, (_, i) => issue(i % 2 ? a : b)))
  t.same([...new Set(issued.map((r) => r.status))], [201])
  // Redemptions through both servers while the CLI cancels some of them.
  const redeemed = await Promise.all(
    issued.map((p, i) => fetchJson((i % 2 ? b : a).base, `/apis/v2/packages/${p.body.id}/redemptions`, { method: 'POST', bearer, json: { type: 'REPLAY', target: { replay: { id: `r${i}` } } } }))
  )
  t.same([...new Set(redeemed.map((r) => r.status))], [201])
  const cancels = await Promise.all([
    ...redeemed.slice(0, 6).map((r, i) => club('packages', 'cancel-redemption', issued[i]!.body.id, r.body.id)),
    ...issued.slice(6, 12).map(() => issue(a)),
    ...issued.slice(12, 18).map(() => issue(b))
  ])
  t.same(cancels.slice(0, 6).map((r) => (r as { code: number }).code), Array(6).fill(0), 'the CLI cancelled six redemptions meanwhile')

  const events = await feed(b.base, bearer)
  t.equal(events.length, 20 + 20 + 6 + 12, 'one event per change in the feed')
  await receiver.waitFor((received) => events.every((e) => received.some((d) => d.id === e.id)), 60_000)
  // A moment more for a second sender, were there one, to show itself.
  await new Promise((resolve) => setTimeout(resolve, 500))
  const byId = counts(receiver.received)
  t.same([...byId.values()].filter((n) => n > 1), [], 'no event was sent twice')
  t.equal(byId.size, events.length, 'every event, nothing else')
  t.ok(receiver.received.every((d) => d.verified && d.answered === 204), 'each verified by standardwebhooks')
  const byResource = new Map<string, string[]>()
  for (const d of receiver.received) byResource.set(JSON.parse(d.body).data.id, [...(byResource.get(JSON.parse(d.body).data.id) ?? []), d.id])
  for (const [resource, ids] of byResource) {
    t.same(ids, events.filter((e) => e.resource.id === resource).map((e) => e.id), `resource ${resource} in commit order`)
  }
})

t.test('a server killed (SIGKILL) in the middle of a burst of writes: after a restart every committed change has one event, delivered', async (t) => {
  const { startServer, receiver, admin } = await setup(t)
  const first = await startServer()
  const bearer = await signIn(first.base)
  const template = await packageTemplate(first.base, bearer)
  let answered = 0
  const burst = Array.from({ length: 60 }, () =>
    fetchJson(first.base, '/apis/v2/packages', { method: 'POST', bearer, json: { template: { id: template }, user: { id: admin.id } } })
      .then((r) => {
        if (r.status === 201) answered++
        if (answered === 20) first.child.kill('SIGKILL')
        return r.status
      })
      .catch(() => 'cut' as const)
  )
  const outcomes = await Promise.all(burst)
  await first.exited
  t.ok(outcomes.includes('cut'), `the kill cut the burst (${outcomes.filter((o) => o === 201).length} answered)`)

  const second = await startServer()
  const packages = (await fetchJson(second.base, '/apis/v2/packages?ipp=100', { bearer: await signIn(second.base) })).body.items as Array<{ id: string }>
  t.ok(packages.length >= 20, `${packages.length} packages were committed`)
  const events = await feed(second.base, await signIn(second.base))
  t.same(events.map((e) => e.resource.id).sort(), packages.map((p) => p.id).sort(), 'each committed package has its one event, and no event lacks its package')
  t.equal(new Set(events.map((e) => e.id)).size, events.length, 'none twice in the feed')
  // The killed holder's lease runs out (WEBHOOK_LEASE_SECONDS) before the new process sends.
  await receiver.waitFor((received) => events.every((e) => received.some((d) => d.id === e.id)), 60_000)
  const twice = [...counts(receiver.received).values()].filter((n) => n > 1)
  // At least once: the attempts under way when the holder was killed (at most IN_FLIGHT, each its
  // own resource's) may be sent again, once; no other.
  t.ok(twice.length <= IN_FLIGHT && twice.every((n) => n === 2), `at most the attempts under way at the kill sent again (${twice.length})`)
  t.ok(receiver.received.every((d) => d.verified))
})
