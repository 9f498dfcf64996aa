// The built-in scheduler (SCHEDULER=internal): every job on its JOB_SCHEDULE_* cron expression in
// CLUB_TIMEZONE (node-cron), through the same runner and run table as the receivers, each slot keyed
// by its time. Several processes on one database each fire every slot; the delivery's lease lets one
// run it. At start, each job's latest slot that no process ran (the server was down) is run once.
import cron, { type ScheduledTask } from 'node-cron'
import type { JobName } from '@club/contract'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import { DAY_MS } from '../instants.js'
import { jobNames, scheduledJobs } from './registry.js'
import type { JobRunner } from './runner.js'
import type { RunOutcome } from './runs.js'

type NextMatch = (after: Date) => Date

/**
 * node-cron answers only "the next run from the real now"; the catch-up needs "the latest slot at or
 * before the injected now". Its task's matcher walks forward from any date, which is enough: try
 * windows back from now, doubling, until one holds a slot, then walk to the last slot not after now.
 */
function nextMatchOf(task: ScheduledTask): NextMatch {
  const matcher = (task as unknown as { timeMatcher?: { getNextMatch?: (date: Date) => Date } }).timeMatcher
  if (typeof matcher?.getNextMatch !== 'function') throw new Error('node-cron no longer exposes its time matcher: the scheduler cannot compute missed slots')
  return (after) => matcher.getNextMatch!(after)
}

export function previousSlot(next: NextMatch, now: Date, lookBackMs = 400 * DAY_MS): Date | undefined {
  for (let window = 60_000; window <= lookBackMs * 2; window *= 2) {
    let slot: Date
    try {
      slot = next(new Date(now.getTime() - Math.min(window, lookBackMs)))
    } catch {
      return undefined
    }
    if (slot > now) continue
    for (;;) {
      const after = next(slot)
      if (after > now) return slot
      slot = after
    }
  }
  return undefined
}

const slotKey = (slot: Date) => `schedule:${slot.toISOString()}`

export class JobScheduler {
  private readonly tasks = new Map<JobName, ScheduledTask>()
  private readonly inFlight = new Set<Promise<unknown>>()

  constructor(
    private readonly runner: JobRunner,
    private readonly config: Config,
    private readonly clock: Clock
  ) {}

  private get started(): boolean {
    return this.tasks.size > 0
  }

  /** The node-cron tasks, for a test to see they stop on close. */
  get scheduledTasks(): ScheduledTask[] {
    return [...this.tasks.values()]
  }

  /**
   * Schedules every job, then runs each job's latest slot once if no process has run it; resolves
   * when that catch-up is done (main.ts does not wait for it).
   */
  async start(): Promise<Array<{ job: JobName; slot: string; outcome: RunOutcome['kind'] | 'failed' }>> {
    if (this.started) return []
    for (const job of jobNames) {
      const task = cron.schedule(this.config[scheduledJobs[job].schedule], (context) => this.fire(job, context.date), {
        name: `job ${job}`,
        timezone: this.config.CLUB_TIMEZONE,
        noOverlap: true,
        // A pending slot alone must not keep a closing process alive.
        unref: true
      })
      this.tasks.set(job, task)
    }
    const caughtUp = []
    for (const [job, task] of this.tasks) {
      const slot = previousSlot(nextMatchOf(task), this.clock.now())
      if (!slot) continue
      const outcome = await this.fire(job, slot)
      caughtUp.push({ job, slot: slot.toISOString(), outcome: outcome?.kind ?? ('failed' as const) })
    }
    return caughtUp
  }

  /** Runs one slot of a job unless a process ran or is running it; a failure is logged (the runner does), not thrown. */
  fire(job: JobName, slot: Date): Promise<RunOutcome | undefined> {
    const slotIso = slot.toISOString()
    const run = this.runner.run(job, { trigger: 'schedule', key: slotKey(slot), delivery: slotIso }).catch(() => undefined)
    this.inFlight.add(run)
    void run.finally(() => this.inFlight.delete(run))
    return run
  }

  /** Stops every task and waits for the runs under way. */
  async stop(): Promise<void> {
    const tasks = [...this.tasks.values()]
    this.tasks.clear()
    await Promise.all(tasks.map((task) => task.destroy()))
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight])
  }
}
