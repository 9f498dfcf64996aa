// Tells a box at once that a replay waits for it: a call to its local API at the serverUrl it reported,
// with its own access token (derived, never stored: see deviceAccessToken). Whatever happens, the
// box also learns of it from its next status poll (replayRequests), so a box behind NAT is only later.
import type { FastifyBaseLogger } from 'fastify'
import { agentLocalApi } from '@club/contract'
import type { DbOrTx } from '../db/database.js'
import { deviceAccessToken } from '../replay-servers/service.js'

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
  const url = new URL(agentLocalApi.replayRequests.url.slice(1), row.server_url.endsWith('/') ? row.server_url : `${row.server_url}/`)
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${deviceAccessToken(deps.tokenKey, row)}` },
      // A redirect would carry the token elsewhere.
      redirect: 'manual',
      signal: AbortSignal.timeout(deps.timeoutMs)
    })
    await res.body?.cancel().catch(() => {})
    if (res.status !== 202) deps.log.info({ replayServerId, box: url.origin, status: res.status }, 'the box did not take the replay notice; it will see it on its next poll')
    return res.status === 202
  } catch (err) {
    deps.log.info({ replayServerId, box: url.origin, err: (err as Error).name }, 'the box could not be told of a replay; it will see it on its next poll')
    return false
  }
}
