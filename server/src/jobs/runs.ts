// The run table and the deliveries table every scheduled job goes through, whoever starts it: a
// receiver (one delivery, keyed by its webhook-id), the built-in scheduler (one slot, keyed by its
// time) or `club jobs run` (no key). A key is done at most once: the first caller takes a lease on
// it in an IMMEDIATE transaction, and only a completed run marks it done; a failed run gives the
// lease back so the sender's retry runs it again.
import { randomUUID } from 'node:crypto'
import type { JobName, JobRun, JobRunListQuery, JobTrigger } from '@club/contract'
import type { Clock } from '../clock.js'
import type { Db, DbOrTx } from '../db/database.js'
import type { JobRunsTable } from '../db/schema.js'
import { pageRequest, paged } from '../paging.js'

/** How long a holder may take before another process may take its delivery over (it crashed). */
const LEASE_MS = 15 * 60_000

/** What a job reports: counts by outcome, and a sentence when the counts alone would mislead. */
export interface JobResult {
  counts: Record<string, number>
  note?: string
}

type Claim = { kind: 'claimed' } | { kind: 'done'; runId: string | null } | { kind: 'held'; until: string }

/** Takes the lease on (job, key) unless it is done or another holder's lease still runs. */
async function claimDelivery(db: Db, job: JobName, key: string, trigger: JobTrigger, holder: string, now: Date): Promise<Claim> {
  const at = now.toISOString()
  const leaseEnds = new Date(now.getTime() + LEASE_MS).toISOString()
  return db.transaction().execute(async (tx) => {
    const row = await tx.selectFrom('job_deliveries').selectAll().where('job', '=', job).where('key', '=', key).executeTakeFirst()
    if (row?.completed_at) return { kind: 'done', runId: row.run_id }
    if (row && row.lease_expires_at > at) return { kind: 'held', until: row.lease_expires_at }
    if (row) {
      await tx.updateTable('job_deliveries').set({ holder, lease_expires_at: leaseEnds }).where('job', '=', job).where('key', '=', key).execute()
    } else {
      await tx.insertInto('job_deliveries').values({ job, key, trigger, holder, lease_expires_at: leaseEnds, completed_at: null, run_id: null, created_at: at }).execute()
    }
    return { kind: 'claimed' }
  })
}

async function settleDelivery(db: Db, job: JobName, key: string, holder: string, changes: { completed_at?: string; run_id: string; lease_expires_at?: string }) {
  await db.updateTable('job_deliveries').set(changes).where('job', '=', job).where('key', '=', key).where('holder', '=', holder).execute()
}

export interface RunRequest {
  job: JobName
  trigger: JobTrigger
  /** The idempotency key: `webhook:<id>` or `schedule:<slot>`; none when run by hand. */
  key?: string
  /** What the run record shows as its delivery (the webhook-id or the slot). */
  delivery?: string
  date: Date
}

export type RunOutcome = { kind: 'ran'; run: JobRun } | { kind: 'duplicate'; runId: string | null } | { kind: 'held'; until: string }

/** A job that threw: its run is recorded as failed and the caller learns which. */
export class JobFailedError extends Error {
  override name = 'JobFailedError'
  constructor(readonly job: JobName, readonly runId: string, cause: unknown) {
    super(`job ${job} failed (run ${runId}): ${cause instanceof Error ? cause.message : String(cause)}`.slice(0, 1000), { cause })
  }
}

/**
 * Runs `work` once for the request's key, recording the run. Returns the run, or says that the key
 * was done before or is being done elsewhere; throws JobFailedError when the work failed.
 */
export async function runRecorded(db: Db, clock: Clock, request: RunRequest, work: () => Promise<JobResult>): Promise<RunOutcome> {
  const { job, trigger, key } = request
  // One holder per attempt, so that two attempts in one process exclude each other too.
  const holder = randomUUID()
  if (key !== undefined) {
    const claim = await claimDelivery(db, job, key, trigger, holder, clock.now())
    if (claim.kind === 'done') return { kind: 'duplicate', runId: claim.runId }
    if (claim.kind === 'held') return claim
  }
  const row: JobRunsTable = {
    id: randomUUID(),
    job,
    trigger,
    delivery: request.delivery ?? null,
    date: request.date.toISOString(),
    started_at: clock.now().toISOString(),
    finished_at: null,
    status: 'running',
    counts: '{}',
    note: null,
    error: null
  }
  await db.insertInto('job_runs').values(row).execute()
  let result: JobResult
  try {
    result = await work()
  } catch (err) {
    const finished = clock.now().toISOString()
    const error = err instanceof Error ? err.message.slice(0, 1000) : String(err).slice(0, 1000)
    await db.updateTable('job_runs').set({ status: 'failed', finished_at: finished, error }).where('id', '=', row.id).execute()
    // The lease ends now: the sender's retry (or the next start's catch-up) runs it again at once.
    if (key !== undefined) await settleDelivery(db, job, key, holder, { run_id: row.id, lease_expires_at: finished })
    throw new JobFailedError(job, row.id, err)
  }
  const finished = clock.now().toISOString()
  const done = { ...row, status: 'succeeded' as const, finished_at: finished, counts: JSON.stringify(result.counts), note: result.note ?? null }
  await db.updateTable('job_runs').set({ status: done.status, finished_at: finished, counts: done.counts, note: done.note }).where('id', '=', row.id).execute()
  if (key !== undefined) await settleDelivery(db, job, key, holder, { completed_at: finished, run_id: row.id })
  return { kind: 'ran', run: toJobRun(done) }
}

const JOB_RUNS = '/apis/v2/admin/job-runs'

function toJobRun(row: JobRunsTable): JobRun {
  return {
    id: row.id,
    job: row.job as JobName,
    trigger: row.trigger,
    delivery: row.delivery,
    date: row.date,
    startedDate: row.started_at,
    finishedDate: row.finished_at,
    status: row.status,
    counts: JSON.parse(row.counts) as Record<string, number>,
    note: row.note,
    error: row.error,
    _links: { self: { href: `${JOB_RUNS}?job=${row.job}` } }
  }
}

export async function listJobRuns(db: DbOrTx, query: JobRunListQuery) {
  const page = pageRequest(query)
  let base = db.selectFrom('job_runs')
  if (query.job) base = base.where('job', '=', query.job)
  if (query.status) base = base.where('status', '=', query.status)
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('started_at', 'desc').orderBy('id', 'desc').limit(page.ipp).offset(page.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()
  ])
  return paged(rows.map(toJobRun), Number(count.total), page, JOB_RUNS, query)
}
