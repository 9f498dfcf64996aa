// One attempt of a delivery: a POST of the event's body to the endpoint's URL, signed per Standard
// Webhooks, connecting to the address that was checked just now (addresses.ts), no redirect followed,
// bounded by SEND_TIMEOUT_MS. The receiver's answer body is read and dropped (at most 64 KiB): only
// its status is kept, so the server is never a way to read what a URL answers.
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, type BlockList } from 'node:net'
import { signDelivery } from '../webhooks/signature.js'
import { deliveryAddress, EndpointUrlError, parseEndpointUrl, type Lookup } from './addresses.js'
import { SEND_TIMEOUT_MS } from './retries.js'

export interface SendRequest {
  url: string
  eventId: string
  body: string
  keys: Buffer[]
  /** The webhook-timestamp, from the injected clock. */
  now: Date
}

export interface SendResult {
  status: number | null
  durationMs: number
  error: string | null
}

const MAX_ANSWER_BYTES = 64 * 1024

export async function sendDelivery(request: SendRequest, allowed: BlockList, lookup: Lookup, timeoutMs = SEND_TIMEOUT_MS): Promise<SendResult> {
  const started = performance.now()
  const done = (status: number | null, error: string | null): SendResult => ({ status, durationMs: Math.round(performance.now() - started), error })
  const signal = AbortSignal.timeout(timeoutMs)
  let url: URL
  let address: string
  try {
    url = parseEndpointUrl(request.url)
    // The look-up counts in the attempt's time: a name server that does not answer would hold the
    // attempt (and the lane) past the timeout, and past the lease renewed before it.
    const host = url.hostname
    const unanswered = new Promise<never>((_, reject) => {
      signal.addEventListener('abort', () => reject(new EndpointUrlError(`host ${host} did not resolve within ${timeoutMs} ms`)), { once: true })
    })
    unanswered.catch(() => undefined)
    address = await Promise.race([deliveryAddress(url, allowed, lookup), unanswered])
  } catch (err) {
    if (err instanceof EndpointUrlError) return done(null, err.message.slice(0, 300))
    throw err
  }
  const hostname = url.hostname.replace(/^\[|\]$/g, '')
  const headers = {
    ...signDelivery(request.keys, request.eventId, Math.floor(request.now.getTime() / 1000), request.body),
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(request.body)),
    host: url.host,
    'user-agent': 'club-platform-webhooks'
  }
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise<SendResult>((resolve) => {
    const req = send(
      {
        // The checked address itself: no second look-up that DNS could answer otherwise.
        host: address,
        port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers,
        // TLS checks the certificate against the URL's name, not the address.
        ...(url.protocol === 'https:' && isIP(hostname) === 0 ? { servername: hostname } : {}),
        signal,
        agent: false
      },
      (res) => {
        let read = 0
        res.on('data', (chunk: Buffer) => {
          read += chunk.length
          if (read > MAX_ANSWER_BYTES) res.destroy()
        })
        res.on('close', () => resolve(done(res.statusCode ?? null, null)))
        res.on('error', () => undefined)
      }
    )
    req.on('error', (err) => resolve(done(null, signal.aborted ? `no answer within ${timeoutMs} ms` : ((err as NodeJS.ErrnoException).code ?? err.message).slice(0, 300))))
    req.end(request.body)
  })
}
