// A box's connectivity as integrators hear of it (replay_server.online / .offline). `online` is
// derived from the last poll when read (within three poll intervals), so nothing writes when a box
// stops polling: this finds the approved boxes whose state differs from what integrators were last
// told (online_told) and tells each transition once. The write is conditional on the value read, so
// of two processes running this at once only one tells it.
import { setImmediate } from 'node:timers/promises'
import type { Db } from '../db/database.js'
import { onlineSince, recordReplayServerEvent } from './service.js'

/** Tells every transition found now; answers how many were told. */
export async function tellConnectivity(db: Db, now: Date, pollIntervalSeconds: number): Promise<number> {
  const since = onlineSince(now, pollIntervalSeconds)
  const changed = await db
    .selectFrom('replay_servers')
    .select(['id', 'last_seen_at', 'online_told'])
    .where('status', '=', 'APPROVED')
    .where((eb) =>
      eb.or([
        // Never told, or told offline, and polling now. A box never seen online is not told offline.
        eb.and([eb('last_seen_at', '>=', since), eb.or([eb('online_told', 'is', null), eb('online_told', '=', 0)])]),
        eb.and([eb('online_told', '=', 1), eb.or([eb('last_seen_at', 'is', null), eb('last_seen_at', '<', since)])])
      ])
    )
    .execute()
  let told = 0
  for (const row of changed) {
    // A turn of the event loop between boxes: each is a transaction of its own, SQLite's calls block the
    // loop, and after a restart every box comes online at once (4,500 of them stopped the server 0.9 s).
    await setImmediate()
    const online = row.last_seen_at !== null && row.last_seen_at >= since
    const done = await db.transaction().execute(async (tx) => {
      const update = tx.updateTable('replay_servers').set({ online_told: online ? 1 : 0 }).where('id', '=', row.id)
      const result = await (row.online_told === null ? update.where('online_told', 'is', null) : update.where('online_told', '=', row.online_told)).executeTakeFirst()
      if (Number(result.numUpdatedRows) !== 1) return false
      await recordReplayServerEvent(tx, row.id, online ? 'replay_server.online' : 'replay_server.offline', now, pollIntervalSeconds)
      return true
    })
    if (done) told++
  }
  return told
}
