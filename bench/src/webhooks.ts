// From commit to the receiver's 2xx: a server started as `pnpm start` starts it (its delivery
// worker on, the one WEBHOOK_ALLOWED_NETWORKS entry a loopback receiver needs), an endpoint for
// template.created, and templates created through the API at a steady rate from several
// connections. Each template's event is timed from the moment its POST's answer arrived (the change
// is committed before the answer is sent, so this is at most the answer's own trip later than the
// commit) to the moment the receiver had its body and answered 204.
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Started } from './harness.js'

export interface WebhookLatency {
  eventsPerSecond: number
  sent: number
  delivered: number
  duplicates: number
  p50Ms: number
  p99Ms: number
  maxMs: number
}

const body = async (req: IncomingMessage): Promise<string> => {
  let text = ''
  for await (const chunk of req) text += chunk
  return text
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN
const round = (n: number) => Math.round(n * 10) / 10

export async function timeWebhookDelivery(
  server: Started,
  adminAuthorization: string,
  options: { eventsPerSecond: number; seconds: number }
): Promise<WebhookLatency> {
  const arrived = new Map<string, number>()
  let duplicates = 0
  const receiver = createServer((req, res) => {
    void body(req).then((text) => {
      const at = performance.now()
      const id = (JSON.parse(text) as { data: { id: string } }).data.id
      if (arrived.has(id)) duplicates++
      else arrived.set(id, at)
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`
  const call = async (method: string, path: string, json: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: adminAuthorization, 'content-type': 'application/json' },
      body: JSON.stringify(json)
    })
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
    return (await res.json()) as { id: string }
  }
  try {
    await call('POST', '/apis/v2/admin/webhook-endpoints', { url: receiverUrl, eventTypes: ['template.created'], description: 'bench' })
    const committed = new Map<string, number>()
    const total = options.eventsPerSecond * options.seconds
    const started = performance.now()
    const pending: Array<Promise<void>> = []
    for (let n = 0; n < total; n++) {
      // Each request leaves at its slot in the schedule, whatever the earlier ones are doing.
      const wait = started + (n * 1000) / options.eventsPerSecond - performance.now()
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
      pending.push(
        call('POST', '/apis/v2/templates', {
          name: `bench webhook ${n}`,
          type: 'PACKAGE',
          data: { validityDays: 30, items: [{ type: 'REPLAY', displayName: 'Replay', displayNamePlural: 'Replays', totalItems: 3 }] }
        }).then(({ id }) => void committed.set(id, performance.now()))
      )
    }
    await Promise.all(pending)
    const sentSeconds = (performance.now() - started) / 1000
    // Everything delivered, or 30 s more for the stragglers (a lost event shows as delivered < sent).
    const deadline = performance.now() + 30_000
    while (performance.now() < deadline && [...committed.keys()].some((id) => !arrived.has(id))) await new Promise((resolve) => setTimeout(resolve, 50))
    const latencies = [...committed]
      .filter(([id]) => arrived.has(id))
      .map(([id, at]) => Math.max(0, arrived.get(id)! - at))
      .sort((a, b) => a - b)
    return {
      eventsPerSecond: round(total / sentSeconds),
      sent: total,
      delivered: latencies.length,
      duplicates,
      p50Ms: round(percentile(latencies, 50)),
      p99Ms: round(percentile(latencies, 99)),
      maxMs: round(latencies.at(-1) ?? NaN)
    }
  } finally {
    await new Promise((resolve) => receiver.close(resolve))
  }
}
