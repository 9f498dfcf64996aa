// The retry schedule, without a receiver: 5 s doubling to 6 h, jittered ±25%, given up after 3 days.
import t from 'tap'
import { afterAttempt, failedTooLong, GIVE_UP_MS, retryDelay } from './retries.js'

t.test('the wait doubles from 5 s up to 6 h, each drawn from 75% to 125% of it', async (t) => {
  const low = () => 0
  const high = () => 0.999999
  t.same([1, 2, 3, 4].map((n) => retryDelay(n, () => 0.5)), [5_000, 10_000, 20_000, 40_000])
  t.equal(retryDelay(1, low), 3_750)
  t.equal(retryDelay(1, high), 6_250)
  t.equal(retryDelay(20, () => 0.5), 6 * 3600_000, 'capped at 6 h')
  t.equal(retryDelay(10_000, high), Math.round(6 * 3600_000 * (0.75 + 0.5 * 0.999999)), 'no overflow however many failures')
})

t.test('after an attempt: done, again later, or given up 3 days into the round', async (t) => {
  const since = new Date('2026-03-01T10:00:00.000Z')
  const at = (ms: number) => new Date(since.getTime() + ms)
  t.same(afterAttempt(true, 7, since, at(GIVE_UP_MS * 2), Math.random), { kind: 'succeeded' }, 'a success is a success whenever it comes')
  t.same(afterAttempt(false, 1, since, at(0), () => 0.5), { kind: 'retry', nextAttemptAt: at(5_000) })
  t.same(afterAttempt(false, 30, since, at(GIVE_UP_MS - 1), () => 0.5), { kind: 'retry', nextAttemptAt: at(GIVE_UP_MS - 1 + 6 * 3600_000) })
  t.same(afterAttempt(false, 30, since, at(GIVE_UP_MS), () => 0.5), { kind: 'given-up' })
  t.notOk(failedTooLong(since, at(GIVE_UP_MS - 1)))
  t.ok(failedTooLong(since, at(GIVE_UP_MS)))
  // With every wait at its longest, a round of 3 days is about 20 attempts: retried, not hammered.
  let now = 0
  let attempts = 0
  while (afterAttempt(false, ++attempts, since, at(now), () => 0.999999).kind === 'retry') now += retryDelay(attempts, () => 0.999999)
  t.ok(attempts >= 15 && attempts <= 25, `${attempts} attempts in 3 days`)
})
