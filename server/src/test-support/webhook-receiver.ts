// An integrator's receiver for the tests: an HTTP server on 127.0.0.1 (a random port) that checks
// every delivery with the `standardwebhooks` package under the endpoint's secret and answers what the
// test says. Against an injected clock the package's timestamp check would compare with the real
// time, so a receiver given a clock checks the timestamp against that clock (same 5 minutes).
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook, WebhookVerificationError } from 'standardwebhooks'
import type { Clock } from '../clock.js'

export interface ReceivedDelivery {
  id: string
  timestamp: string
  signature: string
  body: string
  type: string
  data: any
  /** Whether the package verified it under the receiver's secret. */
  verified: boolean
  answered: number
}

/** A standardwebhooks verifier for `secret`; with a clock, its timestamp check uses that clock. */
export function verifier(secret: string, clock?: Clock): Webhook {
  const webhook = new Webhook(secret)
  if (clock) {
    Object.assign(webhook, {
      verifyTimestamp(header: string): Date {
        const seconds = Number(header)
        if (!Number.isInteger(seconds) || Math.abs(Math.floor(clock.now().getTime() / 1000) - seconds) > 300) throw new WebhookVerificationError('timestamp out of tolerance')
        return new Date(seconds * 1000)
      }
    })
  }
  return webhook
}

export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = []
  /** The status to answer a delivery with (after checking it); 204 by default. */
  answer: (delivery: ReceivedDelivery) => number = () => 204
  secret = ''
  private server: Server | undefined
  private waiters = new Set<() => void>()

  private constructor(private readonly clock: Clock | undefined, public port: number) {}

  static async start(t: { teardown(fn: () => unknown): void }, clock?: Clock): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver(clock, 0)
    await receiver.listen()
    t.teardown(() => receiver.close())
    return receiver
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks`
  }

  /** Listens (again, on the same port after close: a receiver back from being down). */
  async listen(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString()
        const delivery = this.record(req.headers, body)
        res.statusCode = delivery.answered
        res.end()
        for (const wake of this.waiters) wake()
      })
    })
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve))
    this.port = (server.address() as AddressInfo).port
    this.server = server
  }

  private record(headers: IncomingHttpHeaders, body: string): ReceivedDelivery {
    const header = (name: string) => String(headers[name] ?? '')
    let verified = false
    let parsed: { type?: string; data?: unknown } = {}
    try {
      parsed = verifier(this.secret, this.clock).verify(body, headers as Record<string, string>) as typeof parsed
      verified = true
    } catch {
      verified = false
    }
    const delivery: ReceivedDelivery = {
      id: header('webhook-id'),
      timestamp: header('webhook-timestamp'),
      signature: header('webhook-signature'),
      body,
      type: parsed.type ?? '',
      data: parsed.data,
      verified,
      answered: 0
    }
    delivery.answered = verified ? this.answer(delivery) : 401
    this.received.push(delivery)
    return delivery
  }

  /**
   * Resolves once `done()` holds after some delivery; rejects after `timeoutMs` saying what arrived.
   * The bound is for a delivery that never comes: a loaded machine's worker takes seconds.
   */
  waitFor(done: (received: ReceivedDelivery[]) => boolean, timeoutMs = 30_000): Promise<ReceivedDelivery[]> {
    if (done(this.received)) return Promise.resolve(this.received)
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!done(this.received)) return
        cleanup()
        resolve(this.received)
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(new Error(`the receiver did not get what was awaited within ${timeoutMs} ms; it got: ${this.received.map((d) => `${d.type} ${d.id} -> ${d.answered}`).join(', ')}`))
      }, timeoutMs)
      const cleanup = () => {
        clearTimeout(timer)
        this.waiters.delete(check)
      }
      this.waiters.add(check)
    })
  }

  async close(): Promise<void> {
    const server = this.server
    this.server = undefined
    if (!server) return
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
