// The box's replay client against a local HTTP server speaking the device replay routes: the waiting
// replays arrive in the platform's collection shape (or an older server's bare array), and anything
// else is refused, not guessed at.
import t from 'tap'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ReplayClient } from './client.js'

async function serverAnswering(t: { teardown(fn: () => unknown): void }, body: unknown) {
  const seen: Array<{ url?: string; authorization?: string }> = []
  const server = createServer((req, res) => {
    seen.push({ url: req.url, authorization: req.headers.authorization })
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => server.close(r)))
  // No test here waits for the timeout: it only bounds a hung answer, so it can be generous on a loaded machine.
  const client = new ReplayClient({ baseUrl: () => `http://127.0.0.1:${(server.address() as AddressInfo).port}`, accessToken: () => 'device-token', timeoutMs: 30_000 })
  return { client, seen }
}

const replay = { id: 'r1', kind: 'CLIP', status: 'REQUESTED', cameraId: 'cam-1', start: '2026-11-25T10:00:00.000Z', end: '2026-11-25T10:00:30.000Z' }
const { kind: _kind, ...beforeMatches } = replay

t.test('the waiting replays are the items of the collection the server answers', async (t) => {
  const { client, seen } = await serverAnswering(t, { items: [replay], _total: 1, _links: { self: { href: '/apis/v2/replay-servers/device/replays' } } })
  t.same(await client.waiting(), [replay])
  t.same(seen, [{ url: '/apis/v2/replay-servers/device/replays', authorization: 'Bearer device-token' }])
})

t.test('a bare array (a server from before the collection shape) still works; anything else is refused', async (t) => {
  const older = await serverAnswering(t, [replay])
  t.same(await older.client.waiting(), [replay], 'a box updated before its server keeps working')
  const odd = await serverAnswering(t, { replays: [replay] })
  await t.rejects(odd.client.waiting(), { name: 'ServerUnavailableError', message: /do not match the contract/ })
})

t.test('a server from before matches names no kind: its replays are clips, in either shape', async (t) => {
  const collection = await serverAnswering(t, { items: [beforeMatches], _total: 1, _links: { self: { href: '/apis/v2/replay-servers/device/replays' } } })
  t.same(await collection.client.waiting(), [replay])
  const bare = await serverAnswering(t, [beforeMatches])
  t.same(await bare.client.waiting(), [replay])
  const match = { ...replay, id: 'm1', kind: 'MATCH', chapters: [{ at: 12, label: 'Replay 19:42' }] }
  const current = await serverAnswering(t, { items: [match], _total: 1, _links: { self: { href: '/apis/v2/replay-servers/device/replays' } } })
  t.same(await current.client.waiting(), [match], 'a match and its chapters as the server lists them')
})
