// The floor under a redemption's writes on this machine: the rows one redemption writes (the item's
// conditional decrement, its zero-total order, the redemption, its event: the outbox's next number
// and the event row) and the reads before them, as the
// server's SQL but through better-sqlite3's prepared statements alone (no HTTP, no Kysely, no
// JSON), on a database the server's migrations made and opened with the server's settings. Each
// redemption in a transaction of its own, as the server commits them, and eight to a transaction,
// as a group commit would; with the server's checkpoints (as shipped: the background worker of
// db/checkpoints.ts, told of each commit) and without any (the WAL checkpointed every SLICE
// redemptions, outside the timing). CPU and wall time: a checkpoint mostly waits for the disk. No
// server could write a redemption for less.
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { checkpointsOf, migrateToLatest, openDatabase, sqliteOf } from '@club/server/db/database'
import { machine, table, writeResults } from './harness.js'
import { issueReplayPackages } from './packages.js'
import { insertChunked } from './seed.js'

const HOLDERS = Number(process.env.BENCH_FLOOR_HOLDERS ?? 900)
/** Redemptions timed between two checkpoints when SQLite's own are off. */
const SLICE = 400
/** Per row, rounded up to whole slices. */
const REDEMPTIONS = Math.ceil(Number(process.env.BENCH_FLOOR_REDEMPTIONS ?? 16_000) / SLICE) * SLICE

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'club-write-floor-'))
  const file = join(dir, 'club.db')
  try {
    const db = openDatabase(file)
    await migrateToLatest(db)
    const now = new Date()
    const at = now.toISOString()
    const users = Array.from({ length: HOLDERS }, (_, i) => ({
      id: randomUUID(),
      email: `holder${i}@floor.example.org`,
      password_hash: 'x',
      first_name: 'Holder',
      last_name: String(i),
      role: 'member' as const,
      created_at: at,
      updated_at: at
    }))
    await insertChunked(users, (chunk) => db.insertInto('users').values(chunk).execute())
    const { packageIds } = await issueReplayPackages(db, users.map((u) => u.id), now)
    const packages = packageIds.map((id, i) => ({ id, userId: users[i]!.id }))

    const sqlite = sqliteOf(db)
    // The server's checkpoints: a worker thread told of each commit (db/checkpoints.ts), the
    // connection's own only where the log starts over.
    const background = checkpointsOf(db)
    const statements = {
      pkg: sqlite.prepare('select * from packages where id = ?'),
      live: sqlite.prepare('select * from package_redemptions where package_id = ? and type = ? and target_key = ? and cancelation_date is null'),
      items: sqlite.prepare('select * from package_items where package_id = ? and type = ? order by item'),
      take: sqlite.prepare('update package_items set remaining_items = remaining_items - 1 where id = ? and remaining_items > 0 returning remaining_items'),
      order: sqlite.prepare(
        'insert into orders (id, user_id, creator_id, kind, membership_subscription_id, period_start, status, currency, subtotal_minor, total_minor, lines, fees, taxes, provider, provider_ref, idempotency_key, failure_code, failure_message, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'
      ),
      redemption: sqlite.prepare(
        'insert into package_redemptions (id, package_id, item_id, item, type, user_id, creator_id, target_key, target, target_start_at, order_id, order_item_id, redemption_date, cancelation_date, forfeited) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'
      ),
      nextSeq: sqlite.prepare('update outbox_sequence set last_seq = last_seq + 1 where id = 1 returning last_seq').pluck(),
      event: sqlite.prepare('insert into outbox_events (seq, id, type, resource_id, data, created_at) values (?, ?, ?, ?, ?, ?)'),
      begin: sqlite.prepare('begin immediate'),
      commit: sqlite.prepare('commit')
    }
    const redeem = (n: number, round: string) => {
      const held = packages[n % packages.length]!
      statements.pkg.get(held.id)
      // The server's canonical form of a replay target (packages/targets.ts).
      const key = `REPLAY|user:${held.userId}|replay:${round}-${n}`
      statements.live.all(held.id, 'REPLAY', key)
      const item = statements.items.get(held.id, 'REPLAY') as { id: string; item: number }
      if (statements.take.get(item.id) === undefined) throw new Error(`package ${held.id} ran out of items: ask for fewer redemptions or more holders`)
      const time = new Date().toISOString()
      const orderId = randomUUID()
      const lineId = randomUUID()
      const lines = JSON.stringify([{ id: lineId, kind: 'redemption', description: 'Replay: replay', amount: 0 }])
      statements.order.run(orderId, held.userId, held.userId, 'REDEMPTION', null, null, 'PAID', 'EUR', 0, 0, lines, '[]', '[]', null, null, `redemption:${orderId}`, null, null, time, time)
      const redemptionId = randomUUID()
      statements.redemption.run(redemptionId, held.id, item.id, item.item, 'REPLAY', held.userId, held.userId, key, JSON.stringify({ replay: { id: `${round}-${n}` } }), null, orderId, lineId, time, null, 0)
      // The package_redemption.created event, its data the redemption as GET answers it (packages/answers.ts toRedemption).
      const self = `/apis/v2/packages/${held.id}`
      const data = {
        id: redemptionId,
        redemptionDate: time,
        item: item.item,
        user: { id: held.userId },
        order: { id: orderId },
        orderItem: { id: lineId },
        cancelationDate: null,
        _links: { self: { href: `${self}/redemptions/${redemptionId}` }, package: { href: self }, order: { href: `/apis/v2/orders/${orderId}` } }
      }
      const seq = statements.nextSeq.get() as number
      statements.event.run(seq, `evt_${randomUUID().replaceAll('-', '')}`, 'package_redemption.created', redemptionId, JSON.stringify(data), time)
    }

    // Untimed first: the indexes grow past their first pages and the statements warm up.
    for (let n = 0; n < 2000; n++) {
      statements.begin.run()
      redeem(n, 'warm-up')
      statements.commit.run()
      background?.committed()
    }
    const rows: Array<Record<string, string | number>> = []
    for (const checkpoints of ['as shipped', 'none'] as const) {
      for (const perTransaction of [1, 8]) {
        if (checkpoints === 'none') sqlite.pragma('wal_autocheckpoint = 0')
        sqlite.pragma('wal_checkpoint(RESTART)')
        const round = `${checkpoints}-${perTransaction}-${randomUUID().slice(0, 8)}`
        let cpuMicros = 0
        let wallMicros = 0
        let frames = 0
        // When SQLite's checkpoints are off, the WAL is checkpointed between slices, outside the
        // timing (a WAL left to grow makes every read search a longer index of it).
        for (let start = 0; start < REDEMPTIONS; start += SLICE) {
          // RESTART, not TRUNCATE: the next commit writes the WAL from its start again, into a
          // file already that long, as SQLite's own checkpoints leave it (appending to a truncated
          // file costs the file system new blocks, which the server does not pay).
          if (checkpoints === 'none') sqlite.pragma('wal_checkpoint(RESTART)')
          const cpu = process.cpuUsage()
          const wall = performance.now()
          for (let n = start; n < start + SLICE; n += perTransaction) {
            statements.begin.run()
            for (let k = n; k < n + perTransaction; k++) redeem(k, round)
            statements.commit.run()
            if (checkpoints === 'as shipped') background?.committed()
          }
          // Wall time too: a checkpoint mostly waits for the disk, which CPU time does not show.
          wallMicros += (performance.now() - wall) * 1000
          const used = process.cpuUsage(cpu)
          cpuMicros += used.user + used.system
          // The frames now in the WAL: those this slice wrote, since it started from the WAL's start.
          if (checkpoints === 'none') frames += (sqlite.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>)[0]!.log
        }
        rows.push({
          checkpoints: checkpoints === 'none' ? 'none (outside the timing)' : `as shipped (${background?.running ? 'the background worker' : "SQLite's own"})`,
          'redemptions per transaction': perTransaction,
          'CPU µs per redemption': Math.round((cpuMicros / REDEMPTIONS) * 10) / 10,
          'wall µs per redemption': Math.round((wallMicros / REDEMPTIONS) * 10) / 10,
          'WAL pages per redemption': checkpoints === 'none' ? Math.round((frames / REDEMPTIONS) * 10) / 10 : '-'
        })
      }
    }
    await db.destroy()
    process.stdout.write(`a redemption's reads and writes through prepared statements, ${HOLDERS} packages, ${REDEMPTIONS} redemptions per row:\n${table(rows)}\n`)
    const written = writeResults('write-floor', { machine: machine(), holders: HOLDERS, redemptions: REDEMPTIONS, rows })
    process.stdout.write(`\nresults written to ${written}\n`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
