// The admin console's look at a camera: the server asks the box itself (see box-call.ts). Whatever
// goes wrong with the box is one answer, the same for every cause (502, or 504 when it is too slow):
// what the box or its address said is for the log, never relayed.
import type { FastifyBaseLogger } from 'fastify'
import type { DbOrTx } from '../db/database.js'
import { BadGatewayError, ConflictError, GatewayTimeoutError, NotFoundError, quote } from '../errors.js'
import { BoxCallError, callBox, type BoxCallDeps } from './box-call.js'
import { parseConfig } from './service.js'

export interface SnapshotProxyDeps extends BoxCallDeps {
  /** A larger answer is not a snapshot: it is cut off rather than held in memory. */
  maxBytes?: number
}

const MAX_SNAPSHOT_BYTES = 10 * 1024 * 1024

/** The one answer for every way a box failed to send a picture. */
export const snapshotFailed = (id: string) => new BadGatewayError(`replay server ${id} did not send a picture`)
export const snapshotTimedOut = (id: string, timeoutMs: number) => new GatewayTimeoutError(`replay server ${id} did not send a picture within ${timeoutMs} ms`)

/**
 * The box's JPEG of one of its cameras, with the courts that camera films (what the footage access log
 * records of the look), or the error that says why there is none.
 */
export async function fetchCameraSnapshot(
  db: DbOrTx,
  id: string,
  cameraId: string,
  deps: SnapshotProxyDeps,
  log: FastifyBaseLogger
): Promise<{ picture: Buffer; courtIds: string[] }> {
  const row = await db
    .selectFrom('replay_servers')
    .select(['id', 'server_id_hash', 'token_generation', 'status', 'area_id', 'server_url', 'poll_address', 'config'])
    .where('id', '=', id)
    .executeTakeFirst()
  if (!row) throw new NotFoundError(`no replay server ${quote(id)}`)
  const config = parseConfig(row.config)
  const camera = config?.cameras.find((c) => c.id === cameraId)
  if (!camera) throw new NotFoundError(`replay server ${quote(id)} has no camera ${quote(cameraId)}`)
  if (row.status !== 'APPROVED' || row.area_id === null) {
    throw new ConflictError(`replay server ${id} is ${row.status}: only an approved box can be asked for a picture`)
  }
  if (!row.server_url) {
    throw new ConflictError(`replay server ${id} has not reported the address of its local API (publicUrl in the box's settings)`)
  }
  const box = { ...row, server_url: row.server_url }
  try {
    const answer = await callBox(deps, box, `cameras/${encodeURIComponent(cameraId)}/snapshot`, { accept: 'image/jpeg', maxBytes: deps.maxBytes ?? MAX_SNAPSHOT_BYTES })
    if (answer.status === 200 && answer.contentType?.split(';')[0]?.trim().toLowerCase() === 'image/jpeg') return { picture: answer.body, courtIds: camera.courtIds ?? [] }
    log.info({ replayServerId: id, cameraId, status: answer.status, contentType: answer.contentType }, 'the box answered a snapshot request without a picture')
  } catch (err) {
    if (!(err instanceof BoxCallError)) throw err
    log.info({ replayServerId: id, cameraId, reason: err.reason, detail: err.detail }, 'the box could not be asked for a picture')
    if (err.reason === 'timeout') throw snapshotTimedOut(id, deps.timeoutMs)
  }
  throw snapshotFailed(id)
}
