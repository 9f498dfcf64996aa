// Tells a box at once that a replay waits for it: a call to its local API (see box-call.ts). Whatever
// happens, the box also learns of it from its next status poll (replayRequests), so a box behind NAT
// is only later.
import type { FastifyBaseLogger } from 'fastify'
import { agentLocalApi } from '@club/contract'
import type { DbOrTx } from '../db/database.js'
import { boxUrl, callBox } from '../replay-servers/box-call.js'

export async function notifyReplayServer(
  db: DbOrTx,
  replayServerId: string,
  deps: { tokenKey: string; timeoutMs: number; log: FastifyBaseLogger }
): Promise<boolean> {
  const row = await db
    .selectFrom('replay_servers')
    .select(['id', 'server_id_hash', 'token_generation', 'status', 'server_url'])
    .where('id', '=', replayServerId)
    .executeTakeFirst()
  if (!row || row.status !== 'APPROVED' || !row.server_url) return false
  const box = { ...row, server_url: row.server_url }
  const url = boxUrl(box, agentLocalApi.replayRequests.url.slice(1))
  try {
    const res = await callBox(deps.tokenKey, box, url, { method: 'POST', timeoutMs: deps.timeoutMs })
    await res.body?.cancel().catch(() => {})
    if (res.status !== 202) deps.log.info({ replayServerId, box: url.origin, status: res.status }, 'the box did not take the replay notice; it will see it on its next poll')
    return res.status === 202
  } catch (err) {
    deps.log.info({ replayServerId, box: url.origin, err: (err as Error).name }, 'the box could not be told of a replay; it will see it on its next poll')
    return false
  }
}
