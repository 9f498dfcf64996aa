// Tells a box at once that a replay waits for it: a call to its local API (see box-call.ts), under
// the same rules as every call to a box. Whatever happens, the box also learns of it from its next
// status poll (replayRequests), so a box behind NAT, or one the server may not call, is only later.
import type { FastifyBaseLogger } from 'fastify'
import { agentLocalApi } from '@club/contract'
import type { DbOrTx } from '../db/database.js'
import { BoxCallError, callBox, type BoxCallDeps } from '../replay-servers/box-call.js'

/** The box's answer is a status and nothing more: a longer one is not read. */
const MAX_ANSWER_BYTES = 64 * 1024

export async function notifyReplayServer(db: DbOrTx, replayServerId: string, deps: BoxCallDeps & { log: FastifyBaseLogger }): Promise<boolean> {
  const row = await db
    .selectFrom('replay_servers')
    .select(['id', 'server_id_hash', 'token_generation', 'status', 'server_url', 'poll_address'])
    .where('id', '=', replayServerId)
    .executeTakeFirst()
  if (!row || row.status !== 'APPROVED' || !row.server_url) return false
  try {
    const answer = await callBox(deps, { ...row, server_url: row.server_url }, agentLocalApi.replayRequests.url.slice(1), { method: 'POST', maxBytes: MAX_ANSWER_BYTES })
    if (answer.status !== 202) deps.log.info({ replayServerId, status: answer.status }, 'the box did not take the replay notice; it will see it on its next poll')
    return answer.status === 202
  } catch (err) {
    const why = err instanceof BoxCallError ? { reason: err.reason, detail: err.detail } : { err }
    deps.log.info({ replayServerId, ...why }, 'the box could not be told of a replay; it will see it on its next poll')
    return false
  }
}
