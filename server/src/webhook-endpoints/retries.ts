// When a failed delivery is tried again: exponential backoff with jitter, for up to 3 days (Stripe's
// span); pure, so the schedule is tested without a receiver.

/** A 2xx within this is success; anything slower is a failed attempt. */
export const SEND_TIMEOUT_MS = 10_000
/** A delivery still failing this long after its round began is given up; an endpoint failing this long is disabled. */
export const GIVE_UP_MS = 3 * 24 * 3600_000
const FIRST_DELAY_MS = 5_000
const LONGEST_DELAY_MS = 6 * 3600_000

/**
 * The wait after the `failures`-th failed attempt: 5 s doubling up to 6 h, each drawn from 75% to
 * 125% of that so that the deliveries of a receiver that came back do not all arrive at one instant.
 */
export function retryDelay(failures: number, random: () => number): number {
  const base = Math.min(LONGEST_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(failures - 1, 30))
  return Math.round(base * (0.75 + 0.5 * random()))
}

export type AttemptOutcome =
  | { kind: 'succeeded' }
  | { kind: 'retry'; nextAttemptAt: Date }
  | { kind: 'given-up' }

/** What follows an attempt of a delivery whose round began at `dueSince`, its `failures`-th failure if it failed. */
export function afterAttempt(succeeded: boolean, failures: number, dueSince: Date, now: Date, random: () => number): AttemptOutcome {
  if (succeeded) return { kind: 'succeeded' }
  if (now.getTime() - dueSince.getTime() >= GIVE_UP_MS) return { kind: 'given-up' }
  return { kind: 'retry', nextAttemptAt: new Date(now.getTime() + retryDelay(failures, random)) }
}

/** Whether an endpoint failing since `failingSince` has failed long enough to be disabled. */
export function failedTooLong(failingSince: Date, now: Date): boolean {
  return now.getTime() - failingSince.getTime() >= GIVE_UP_MS
}
