// A small local server speaking the part of Google Cloud Storage's JSON API the replay drivers use:
// resumable uploads (POST .../upload/storage/v1/b/{bucket}/o?uploadType=resumable, then PUT the
// bytes to the session URI), object deletes, and GETs of V4-signed object links, whose signature it
// checks against the service account keys it is told to trust. Objects live in memory.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createHash, createPublicKey, createVerify, randomUUID, type KeyObject } from 'node:crypto'

export class FakeGcs {
  readonly objects = new Map<string, Buffer>()
  /** Resumable sessions: upload id → the object they write and the bytes received so far. */
  private readonly sessions = new Map<string, { key: string; chunks: Buffer[] }>()
  private server?: Server
  /** Public halves of the service account keys whose signed links this server honours. */
  private readonly trusted: KeyObject[] = []
  port = 0

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  async start(port = 0): Promise<void> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err) => {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 500, message: String(err) } }))
      })
    })
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve))
    this.port = (this.server.address() as AddressInfo).port
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections()
    await new Promise((resolve) => this.server?.close(resolve))
  }

  /** Honours links signed with this service account key (a credentials file's `private_key`). */
  trust(privateKeyPem: string): void {
    this.trusted.push(createPublicKey(privateKeyPem))
  }

  /**
   * Whether a V4 link's X-Goog-Signature is a trusted key's RSA-SHA256 signature of its string to
   * sign (Google's "V4 signing process": the canonical request of the GET, hashed, under the scope).
   */
  private signedByTrusted(req: IncomingMessage, url: URL): boolean {
    const params = [...url.searchParams].filter(([k]) => k !== 'X-Goog-Signature')
    params.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    const rfc3986 = (v: string) => encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    const canonicalRequest = [
      'GET',
      url.pathname,
      params.map(([k, v]) => `${rfc3986(k)}=${rfc3986(v)}`).join('&'),
      // The client signs the host name alone (real GCS has no port to sign).
      `host:${new URL(`http://${req.headers.host ?? ''}`).hostname}\n`,
      url.searchParams.get('X-Goog-SignedHeaders') ?? '',
      'UNSIGNED-PAYLOAD'
    ].join('\n')
    const credential = url.searchParams.get('X-Goog-Credential') ?? ''
    const stringToSign = [
      'GOOG4-RSA-SHA256',
      url.searchParams.get('X-Goog-Date') ?? '',
      credential.slice(credential.indexOf('/') + 1),
      createHash('sha256').update(canonicalRequest).digest('hex')
    ].join('\n')
    const signature = Buffer.from(url.searchParams.get('X-Goog-Signature') ?? '', 'hex')
    return this.trusted.some((key) => createVerify('RSA-SHA256').update(stringToSign).verify(key, signature))
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req)
    const url = new URL(req.url ?? '/', this.url)
    const path = url.pathname
    let m: RegExpExecArray | null
    if (req.method === 'POST' && (m = /^\/upload\/storage\/v1\/b\/([^/]+)\/o$/.exec(path)) && url.searchParams.get('uploadType') === 'resumable') {
      const name = url.searchParams.get('name') ?? (JSON.parse(body.toString() || '{}') as { name?: string }).name
      if (!name) return json(res, 400, { error: { code: 400, message: 'no object name' } })
      const id = randomUUID()
      this.sessions.set(id, { key: `${decodeURIComponent(m[1]!)}/${name}`, chunks: [] })
      res.writeHead(200, { location: `${this.url}/upload/storage/v1/b/${m[1]}/o?uploadType=resumable&upload_id=${id}` }).end()
      return
    }
    if (req.method === 'PUT' && /^\/upload\/storage\/v1\/b\/[^/]+\/o$/.test(path)) {
      const session = this.sessions.get(url.searchParams.get('upload_id') ?? '')
      if (!session) return json(res, 404, { error: { code: 404, message: 'no such upload session' } })
      session.chunks.push(body)
      // "bytes 0-*/*" is the whole rest in this one request (the client's single-request mode);
      // "bytes 0-99/100" ends a chunked upload; "bytes 0-99/*" is a chunk with more to come (308).
      const range = req.headers['content-range'] ?? ''
      const total = /\/(\d+)$/.exec(range)?.[1]
      const received = session.chunks.reduce((n, c) => n + c.length, 0)
      const wholeRest = /^bytes \d+-\*\//.test(range)
      if (!wholeRest && (total === undefined || received < Number(total))) {
        res.writeHead(308, received > 0 ? { range: `bytes=0-${received - 1}` } : {}).end()
        return
      }
      const data = Buffer.concat(session.chunks)
      this.objects.set(session.key, data)
      const [bucket, ...rest] = session.key.split('/')
      return json(res, 200, { kind: 'storage#object', bucket, name: rest.join('/'), size: String(data.length), contentType: 'video/mp4' })
    }
    if (req.method === 'DELETE' && (m = /^\/storage\/v1\/b\/([^/]+)\/o\/(.+)$/.exec(path))) {
      const key = `${decodeURIComponent(m[1]!)}/${decodeURIComponent(m[2]!)}`
      if (!this.objects.delete(key)) return json(res, 404, { error: { code: 404, message: 'No such object' } })
      res.writeHead(204).end()
      return
    }
    if (req.method === 'GET' && url.searchParams.has('X-Goog-Signature')) {
      // A V4-signed link: X-Goog-Date (yyyymmddThhmmssZ) plus X-Goog-Expires seconds.
      const date = url.searchParams.get('X-Goog-Date') ?? ''
      const start = Date.parse(`${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`)
      const expires = Number(url.searchParams.get('X-Goog-Expires'))
      if (!(start + expires * 1000 > Date.now())) return xml(res, 400, 'ExpiredToken')
      if (!this.signedByTrusted(req, url)) return xml(res, 403, 'SignatureDoesNotMatch')
      const key = decodeURIComponent(path.slice(1))
      const data = this.objects.get(key)
      if (!data) return xml(res, 404, 'NoSuchKey')
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': data.length }).end(data)
      return
    }
    json(res, 404, { error: { code: 404, message: `not served here: ${req.method} ${path}` } })
  }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

function xml(res: ServerResponse, status: number, code: string): void {
  res.writeHead(status, { 'content-type': 'application/xml' }).end(`<?xml version="1.0"?><Error><Code>${code}</Code></Error>`)
}
