// The admin console's look at a camera: the server asks the box itself (see box-call.ts).
import type { DbOrTx } from '../db/database.js'
import { BadGatewayError, ConflictError, GatewayTimeoutError, HttpError, NotFoundError, TooManyRequestsError, quote } from '../errors.js'
import { boxUrl, callBox } from './box-call.js'
import { parseConfig } from './service.js'

export interface SnapshotProxyDeps {
  tokenKey: string
  timeoutMs: number
  /** A larger answer is not a snapshot: it is cut off rather than held in memory. */
  maxBytes?: number
}

const MAX_SNAPSHOT_BYTES = 10 * 1024 * 1024

/** The box's JPEG of one of its cameras, or the error that says why there is none. */
export async function fetchCameraSnapshot(db: DbOrTx, id: string, cameraId: string, deps: SnapshotProxyDeps): Promise<Buffer> {
  const row = await db
    .selectFrom('replay_servers')
    .select(['id', 'server_id_hash', 'token_generation', 'status', 'area_id', 'server_url', 'config'])
    .where('id', '=', id)
    .executeTakeFirst()
  if (!row) throw new NotFoundError(`no replay server ${quote(id)}`)
  const config = parseConfig(row.config)
  if (!config?.cameras.some((c) => c.id === cameraId)) throw new NotFoundError(`replay server ${quote(id)} has no camera ${quote(cameraId)}`)
  if (row.status !== 'APPROVED' || row.area_id === null) {
    throw new ConflictError(`replay server ${id} is ${row.status}: only an approved box can be asked for a picture`)
  }
  if (!row.server_url) {
    throw new ConflictError(`replay server ${id} has not reported the address of its local API (publicUrl in the box's settings)`)
  }
  const box = { ...row, server_url: row.server_url }
  const url = boxUrl(box, `cameras/${encodeURIComponent(cameraId)}/snapshot`)
  const where = `the box at ${url.origin}`

  let res: Response
  try {
    res = await callBox(deps.tokenKey, box, url, { accept: 'image/jpeg', timeoutMs: deps.timeoutMs })
  } catch (err) {
    throw unreachable(err, where, deps.timeoutMs)
  }
  if (res.status === 200 && res.headers.get('content-type')?.startsWith('image/jpeg')) {
    try {
      return await readAtMost(res, deps.maxBytes ?? MAX_SNAPSHOT_BYTES, where)
    } catch (err) {
      if (err instanceof HttpError) throw err
      throw unreachable(err, where, deps.timeoutMs)
    }
  }
  const message = await boxMessage(res)
  await res.body?.cancel().catch(() => {})
  switch (res.status) {
    case 404:
    case 422:
      throw new HttpError(res.status, `${where} answers: ${message ?? res.statusText}`)
    case 429:
      throw new TooManyRequestsError(`${where} is busy: ${message ?? 'try again shortly'}`, Number(res.headers.get('retry-after')) || 1)
    case 401:
    case 403:
      throw new BadGatewayError(
        `${where} refused the server's credential; a rotated token reaches the box with its next poll (answer ${res.status})`
      )
    default:
      throw new BadGatewayError(`${where} answered ${res.status}${message ? `: ${message}` : ''} instead of a picture`)
  }
}

function unreachable(err: unknown, where: string, timeoutMs: number): GatewayTimeoutError {
  const name = (err as Error).name
  if (name === 'TimeoutError' || name === 'AbortError') return new GatewayTimeoutError(`${where} did not answer within ${timeoutMs} ms`)
  // fetch wraps the socket's error, sometimes in an AggregateError of each address it tried.
  const cause = (err as { cause?: { code?: string; errors?: Array<{ code?: string }> } }).cause
  const code = cause?.code ?? cause?.errors?.find((e) => e.code)?.code ?? (cause as Error | undefined)?.message ?? 'no answer'
  return new GatewayTimeoutError(`${where} could not be reached (${code})`)
}

/** The message of the box's error answer (the platform's error shape), when it has one. */
async function boxMessage(res: Response): Promise<string | undefined> {
  if (!res.headers.get('content-type')?.includes('json')) return undefined
  try {
    const body = (await res.json()) as { message?: unknown }
    return typeof body.message === 'string' ? body.message.slice(0, 500) : undefined
  } catch {
    return undefined
  }
}

async function readAtMost(res: Response, maxBytes: number, where: string): Promise<Buffer> {
  const chunks: Uint8Array[] = []
  let total = 0
  const reader = res.body!.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      await reader.cancel()
      throw new BadGatewayError(`${where} sent more than ${maxBytes} bytes: not a snapshot`)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}
