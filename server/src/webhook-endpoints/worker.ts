// The delivery worker: sends every event of the outbox to every enabled endpoint that wants its type,
// at least once, in order per endpoint and resource. One worker works at a time across all server
// processes: it holds the scheduler's kind of lease (a job_deliveries row, renewed by compare-and-set,
// released on close), so two processes never send an event at once; another process takes over when a
// holder dies and its lease runs out. Each endpoint is worked in a lane of its own, so a slow
// receiver delays only itself. The worker is nudged in-process after commits that wrote events, and
// looks every WEBHOOK_POLL_MS for events other processes wrote and for retries that fell due.
import { randomUUID } from 'node:crypto'
import type { BlockList } from 'node:net'
import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from '../clock.js'
import { parseNetworks, type Config } from '../config.js'
import type { Db } from '../db/database.js'
import type { EndpointDeliveriesTable, WebhookEndpointsTable } from '../db/schema.js'
import { sendMail, type Mailer } from '../password-reset/mailer.js'
import { systemLookup, type Lookup } from './addresses.js'
import { afterAttempt, failedTooLong } from './retries.js'
import { endpointKey, signingKeys } from './secrets.js'
import { sendDelivery, type SendResult } from './sender.js'
import { ENDPOINTS_PATH } from './service.js'

/** The lease's row in job_deliveries. */
const LEASE = { job: 'webhook-delivery', key: 'worker' } as const
/** Events turned into deliveries, and open deliveries walked, per step of a lane. */
const BATCH = 500
/** A delivery not settled yet. */
const OPEN = ['PENDING', 'RETRYING'] as const
/**
 * Attempts under way at once per endpoint, each for a different resource. One at a time, a lane
 * sent about 120 events a second to a loopback receiver under load (pnpm bench), less than the
 * 200 a busy club writes; receivers answer concurrent requests as Stripe's and others' do.
 */
export const IN_FLIGHT = 16

export interface DeliveryWorkerDeps {
  db: Db
  clock: Clock
  config: Pick<Config, 'WEBHOOK_ENDPOINT_KEY' | 'WEBHOOK_ALLOWED_NETWORKS' | 'WEBHOOK_POLL_MS' | 'WEBHOOK_LEASE_SECONDS' | 'PUBLIC_BASE_URL'>
  log: FastifyBaseLogger
  /** Made on first use: the admins are mailed only when an endpoint is disabled. */
  mailer: () => Mailer
  lookup?: Lookup
  random?: () => number
}

/** The body Standard Webhooks describes: {type, timestamp, data}, data as the outbox holds it (JSON). */
export function deliveryBody(event: { type: string; created_at: string; data: string }): string {
  return `${JSON.stringify({ type: event.type, timestamp: event.created_at }).slice(0, -1)},"data":${event.data}}`
}

/** An open delivery with its event's body, as the lane walks them. */
type OpenDelivery = EndpointDeliveriesTable & { data: string | null; event_created_at: string | null }

interface Lane {
  again: boolean
  done: Promise<void>
}

export class DeliveryWorker {
  /** Who holds the lease: one per worker, so two workers in one process exclude each other too. */
  readonly holder = randomUUID()
  private leaseUntil = 0
  /** Enabled endpoints at the last pass; undefined before the first. */
  private endpointsSeen: number | undefined
  private started = false
  private passing: Promise<void> | undefined
  private passAgain = false
  private timer: NodeJS.Timeout | undefined
  private readonly lanes = new Map<string, Lane>()
  private readonly allowed: BlockList
  private readonly lookup: Lookup
  private readonly random: () => number
  private key: Promise<string> | undefined

  constructor(private readonly deps: DeliveryWorkerDeps) {
    this.allowed = parseNetworks('WEBHOOK_ALLOWED_NETWORKS', deps.config.WEBHOOK_ALLOWED_NETWORKS)
    this.lookup = deps.lookup ?? systemLookup
    this.random = deps.random ?? Math.random
  }

  private get leaseMs(): number {
    return this.deps.config.WEBHOOK_LEASE_SECONDS * 1000
  }

  start(): void {
    if (this.started) return
    this.started = true
    this.nudge()
  }

  /**
   * This process committed events. Only the lease's holder sends, and only to the endpoints it knows
   * of: any other process, or a holder with no endpoint, leaves them to the holder's poll
   * (WEBHOOK_POLL_MS), which also finds endpoints added since. Without this, every evented write
   * paid a pass (a lease write where another process holds it, an endpoints read otherwise): a
   * redemption a sixth of its throughput, before any endpoint existed (pnpm bench).
   */
  eventsCommitted(): void {
    if (this.leaseUntil > 0 && this.endpointsSeen !== 0) this.nudge()
  }

  /** Work now: events were committed, or a delivery was made due. Cheap; many nudges make one pass at a time. */
  nudge(): void {
    if (!this.started) return
    if (this.passing) {
      this.passAgain = true
      return
    }
    clearTimeout(this.timer)
    this.passing = this.pass().finally(() => {
      this.passing = undefined
      if (!this.started) return
      if (this.passAgain) {
        this.passAgain = false
        this.nudge()
      } else {
        this.timer = setTimeout(() => this.nudge(), this.deps.config.WEBHOOK_POLL_MS)
        this.timer.unref()
      }
    })
  }

  /** Resolves when no pass and no lane is working (tests wait for this, bounded by their timeout). */
  async idle(): Promise<void> {
    while (this.passing || this.lanes.size > 0) await Promise.all([this.passing, ...[...this.lanes.values()].map((l) => l.done)])
  }

  /** Stops working, waits for the attempts under way, and gives the lease back so another process takes over at once. */
  async stop(): Promise<void> {
    this.started = false
    clearTimeout(this.timer)
    await this.idle()
    if (this.leaseUntil > 0) {
      this.leaseUntil = 0
      await this.deps.db
        .updateTable('job_deliveries')
        .set({ lease_expires_at: this.deps.clock.now().toISOString() })
        .where('job', '=', LEASE.job)
        .where('key', '=', LEASE.key)
        .where('holder', '=', this.holder)
        .execute()
    }
  }

  private async pass(): Promise<void> {
    try {
      if (!(await this.holdLease())) return
      const endpoints = await this.deps.db.selectFrom('webhook_endpoints').select('id').where('enabled', '=', 1).execute()
      this.endpointsSeen = endpoints.length
      for (const { id } of endpoints) this.runLane(id)
    } catch (err) {
      this.deps.log.error({ err }, 'webhook delivery pass failed')
    }
  }

  /**
   * Takes or keeps the lease. Renewed before it gets short, so that it always outlasts the attempt
   * about to start; taken by compare-and-set (holder is us, or it ran out), which on both databases
   * lets only one of two racing processes through.
   */
  private async holdLease(): Promise<boolean> {
    const { db, clock } = this.deps
    const now = clock.now()
    if (this.leaseUntil - now.getTime() > Math.max(this.leaseMs / 2, 15_000)) return true
    const until = new Date(now.getTime() + this.leaseMs).toISOString()
    const at = now.toISOString()
    const updated = await db
      .updateTable('job_deliveries')
      .set({ holder: this.holder, lease_expires_at: until })
      .where('job', '=', LEASE.job)
      .where('key', '=', LEASE.key)
      .where((eb) => eb.or([eb('holder', '=', this.holder), eb('lease_expires_at', '<=', at)]))
      .executeTakeFirst()
    let held = Number(updated.numUpdatedRows) === 1
    if (!held) {
      const inserted = await db
        .insertInto('job_deliveries')
        .values({ ...LEASE, trigger: 'schedule', holder: this.holder, lease_expires_at: until, completed_at: null, run_id: null, created_at: at })
        .onConflict((oc) => oc.columns(['job', 'key']).doNothing())
        .executeTakeFirst()
      held = Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1
    }
    if (held && this.leaseUntil === 0) this.deps.log.info({ holder: this.holder }, 'this process now sends the webhook deliveries')
    this.leaseUntil = held ? Date.parse(until) : 0
    return held
  }

  private runLane(endpointId: string): void {
    const running = this.lanes.get(endpointId)
    if (running) {
      running.again = true
      return
    }
    const lane: Lane = { again: true, done: Promise.resolve() }
    lane.done = (async () => {
      while (lane.again && this.started) {
        lane.again = false
        if (await this.work(endpointId)) lane.again = true
      }
    })()
      .catch((err: unknown) => this.deps.log.error({ err, endpointId }, 'webhook delivery lane failed'))
      .finally(() => this.lanes.delete(endpointId))
    this.lanes.set(endpointId, lane)
  }

  /** One step of an endpoint's lane: new events become deliveries, then the due ones are sent; true when there is more. */
  private async work(endpointId: string): Promise<boolean> {
    const endpoint = await this.deps.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpointId).executeTakeFirst()
    if (!endpoint || endpoint.enabled !== 1) return false
    const scanned = await this.scan(endpoint)
    // With each event's body: one query for the batch, none per attempt.
    // Not the deliveries waiting for a retry, nor those behind one of their resource: a batch of
    // those would hold up every resource after them and, being full, have the lane look again at
    // once and for ever (on SQLite a loop of microtasks that starves the whole process). Each
    // waiting resource's first waiting delivery, found in one pass (a correlated NOT EXISTS took a
    // second on SQLite with 20,000 waiting).
    const now = this.deps.clock.now().toISOString()
    const waiting = this.deps.db
      .selectFrom('endpoint_deliveries')
      .select(['resource_id', (eb) => eb.fn.min('event_seq').as('first_seq')])
      .where('endpoint_id', '=', endpointId)
      .where('status', 'in', OPEN)
      .where('next_attempt_at', '>', now)
      .groupBy('resource_id')
      .as('waiting')
    const open = await this.deps.db
      .selectFrom('endpoint_deliveries')
      .leftJoin('outbox_events', 'outbox_events.seq', 'endpoint_deliveries.event_seq')
      .leftJoin(waiting, 'waiting.resource_id', 'endpoint_deliveries.resource_id')
      .selectAll('endpoint_deliveries')
      .select(['outbox_events.data', 'outbox_events.created_at as event_created_at'])
      .where('endpoint_deliveries.endpoint_id', '=', endpointId)
      .where('endpoint_deliveries.status', 'in', OPEN)
      .where((eb) => eb.or([eb('endpoint_deliveries.next_attempt_at', 'is', null), eb('endpoint_deliveries.next_attempt_at', '<=', now)]))
      .where((eb) => eb.or([eb('waiting.first_seq', 'is', null), eb('endpoint_deliveries.event_seq', '<', eb.ref('waiting.first_seq'))]))
      .orderBy('endpoint_deliveries.event_seq')
      .limit(BATCH)
      .execute()
    // In order per resource: only a resource's earliest open delivery may go (all of these are due);
    // its next one goes in a later step, once this one has succeeded. Different resources go side by
    // side, IN_FLIGHT at a time, so one receiver's round trip does not bound the endpoint's rate.
    const earliest = new Set<string>()
    const due: OpenDelivery[] = []
    for (const delivery of open) {
      if (earliest.has(delivery.resource_id)) continue
      earliest.add(delivery.resource_id)
      due.push(delivery)
    }
    let stopped = false
    let succeeded = 0
    const sender = async () => {
      for (let delivery = due.shift(); delivery && !stopped && this.started; delivery = due.shift()) {
        // An admin may have moved, disabled, deleted or rotated it since this step read it: only the
        // attempts under way go out as it was, the next ones follow the change.
        const current = await this.deps.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpointId).executeTakeFirst()
        if (!current || current.enabled !== 1) {
          stopped = true
          break
        }
        Object.assign(endpoint, current)
        const outcome = await this.attempt(endpoint, delivery)
        if (outcome === 'lease-lost' || outcome === 'disabled') stopped = true
        if (outcome === 'succeeded') succeeded++
      }
    }
    await Promise.all(Array.from({ length: IN_FLIGHT }, sender))
    if (stopped || !this.started) return false
    // More: a full batch, or a resource whose next delivery waited for the one that just succeeded.
    return scanned === BATCH || open.length === BATCH || (succeeded > 0 && open.length > earliest.size)
  }

  /** Turns the endpoint's new outbox events into deliveries and moves its cursor past them; answers how many events it read. */
  private async scan(endpoint: WebhookEndpointsTable): Promise<number> {
    const { db, clock } = this.deps
    const events = await db
      .selectFrom('outbox_events')
      .select(['seq', 'id', 'type', 'resource_id'])
      .where('seq', '>', endpoint.after_seq)
      .orderBy('seq')
      .limit(BATCH)
      .execute()
    if (events.length === 0) return 0
    const wanted = new Set(JSON.parse(endpoint.event_types) as string[])
    const now = clock.now().toISOString()
    const rows: EndpointDeliveriesTable[] = events
      .filter((event) => wanted.has(event.type))
      .map((event) => ({
        id: randomUUID(),
        endpoint_id: endpoint.id,
        event_seq: Number(event.seq),
        event_id: event.id,
        event_type: event.type,
        resource_id: event.resource_id,
        status: 'PENDING',
        attempt_count: 0,
        next_attempt_at: null,
        due_since: now,
        created_at: now,
        updated_at: now
      }))
    const last = Number(events.at(-1)!.seq)
    await db.transaction().execute(async (tx) => {
      if (rows.length > 0) {
        await tx.insertInto('endpoint_deliveries').values(rows).onConflict((oc) => oc.columns(['endpoint_id', 'event_seq']).doNothing()).execute()
      }
      await tx.updateTable('webhook_endpoints').set({ after_seq: last }).where('id', '=', endpoint.id).where('after_seq', '<', last).execute()
    })
    endpoint.after_seq = last
    return events.length
  }

  /** One attempt, recorded with its outcome (and the endpoint's failing streak) in one transaction. */
  private async attempt(endpoint: WebhookEndpointsTable, delivery: OpenDelivery): Promise<'succeeded' | 'failed' | 'lease-lost' | 'disabled'> {
    const { db, clock } = this.deps
    if (!(await this.holdLease())) return 'lease-lost'
    // Gone from the outbox (older than EVENT_RETENTION_DAYS): nothing left to send.
    const event = delivery.data === null ? undefined : { id: delivery.event_id, type: delivery.event_type, data: delivery.data, created_at: delivery.event_created_at! }
    const sentAt = clock.now()
    let result: SendResult
    if (event) {
      this.key ??= endpointKey(db, this.deps.config, clock)
      const keys = signingKeys(await this.key, endpoint, sentAt)
      result = await sendDelivery({ url: endpoint.url, eventId: event.id, body: deliveryBody(event), keys, now: sentAt }, this.allowed, this.lookup)
    } else {
      result = { status: null, durationMs: 0, error: 'the event is older than the events kept (EVENT_RETENTION_DAYS)' }
    }
    const succeeded = result.status !== null && result.status >= 200 && result.status < 300
    const now = clock.now()
    const at = now.toISOString()
    const next = event ? afterAttempt(succeeded, delivery.attempt_count + 1, new Date(delivery.due_since), now, this.random) : ({ kind: 'given-up' } as const)
    const disabled = await db.transaction().execute(async (tx) => {
      const recorded = await tx
        .updateTable('endpoint_deliveries')
        .set({
          status: next.kind === 'succeeded' ? 'SUCCEEDED' : next.kind === 'retry' ? 'RETRYING' : 'FAILED',
          attempt_count: delivery.attempt_count + 1,
          next_attempt_at: next.kind === 'retry' ? next.nextAttemptAt.toISOString() : null,
          updated_at: at
        })
        .where('id', '=', delivery.id)
        .executeTakeFirst()
      // The endpoint was deleted while the attempt was under way: nothing left to record it on.
      if (Number(recorded.numUpdatedRows) === 0) return false
      await tx
        .insertInto('endpoint_delivery_attempts')
        .values({ id: randomUUID(), delivery_id: delivery.id, attempted_at: sentAt.toISOString(), response_status: result.status, duration_ms: result.durationMs, error: result.error })
        .execute()
      if (succeeded) {
        await tx.updateTable('webhook_endpoints').set({ failing_since: null }).where('id', '=', endpoint.id).where('failing_since', 'is not', null).execute()
        return false
      }
      const current = await tx.selectFrom('webhook_endpoints').select(['failing_since', 'enabled']).where('id', '=', endpoint.id).executeTakeFirstOrThrow()
      const failingSince = current.failing_since ?? at
      if (current.enabled === 1 && failedTooLong(new Date(failingSince), now)) {
        const reason = `every attempt failed from ${failingSince} to ${at}`
        // Only the attempt that turns it off tells the admins, however many failed side by side.
        const turnedOff = await tx
          .updateTable('webhook_endpoints')
          .set({ enabled: 0, disabled_reason: reason, failing_since: failingSince, updated_at: at })
          .where('id', '=', endpoint.id)
          .where('enabled', '=', 1)
          .executeTakeFirst()
        return Number(turnedOff.numUpdatedRows) === 1
      }
      if (current.failing_since === null) await tx.updateTable('webhook_endpoints').set({ failing_since: at }).where('id', '=', endpoint.id).execute()
      return false
    })
    if (disabled) {
      this.deps.log.warn({ endpointId: endpoint.id }, 'webhook endpoint disabled after 3 days of failed attempts')
      await this.mailAdmins(endpoint).catch((err: unknown) => this.deps.log.error({ err, endpointId: endpoint.id }, 'could not mail the admins that a webhook endpoint was disabled'))
      return 'disabled'
    }
    return succeeded ? 'succeeded' : 'failed'
  }

  private async mailAdmins(endpoint: WebhookEndpointsTable): Promise<void> {
    const { db, clock } = this.deps
    const admins = await db.selectFrom('users').select('email').where('role', '=', 'admin').where('erased_at', 'is', null).orderBy('created_at').execute()
    const link = `${this.deps.config.PUBLIC_BASE_URL.replace(/\/+$/, '')}${ENDPOINTS_PATH}/${endpoint.id}`
    for (const admin of admins) {
      await sendMail(
        db,
        this.deps.mailer(),
        'webhook-endpoint-disabled',
        {
          to: admin.email,
          subject: 'A webhook endpoint was disabled: its receiver failed for 3 days',
          text: [
            `Every delivery to the webhook endpoint ${endpoint.url} (${endpoint.id}) failed for 3 days, so the server stopped sending to it.`,
            '',
            `When its receiver works again, enable it (PATCH ${link} with {"enabled": true}, or club webhooks endpoints update ${endpoint.id} --enabled true):`,
            'the events committed meanwhile are sent then, and failed deliveries can be sent again one by one (their retry link).'
          ].join('\n')
        },
        clock
      )
    }
  }
}
