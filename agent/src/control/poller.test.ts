import t from 'tap'
import { BACKOFF_CAP_MS, backoffDelay, jittered, slowPollMs } from './poller.js'

t.test('jitter stays within ±10% of the interval', async (t) => {
  t.equal(jittered(30_000, () => 0), 27_000)
  t.equal(jittered(30_000, () => 0.5), 30_000)
  t.equal(jittered(30_000, () => 0.999999), 33_000)
  for (let i = 0; i < 200; i++) {
    const d = jittered(10_000, Math.random)
    if (d < 9_000 || d > 11_000) t.fail(`out of range: ${d}`)
  }
})

t.test('backoff doubles from 2 s and is capped at 5 minutes', async (t) => {
  const middle = () => 0.5
  t.same([1, 2, 3, 4, 5, 6, 7, 8].map((n) => backoffDelay(n, middle)), [2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000])
  t.equal(backoffDelay(9, middle), BACKOFF_CAP_MS)
  t.equal(backoffDelay(100, middle), BACKOFF_CAP_MS)
  t.equal(backoffDelay(100, () => 0.9999), BACKOFF_CAP_MS, 'jitter never lifts it above the cap')
  t.equal(backoffDelay(100, () => 0), 270_000, 'but may bring it below')
  t.equal(backoffDelay(3, () => 0), 7_200)
})

t.test('a rejected or revoked box polls slowly', async (t) => {
  t.equal(slowPollMs(30), 300_000)
  t.equal(slowPollMs(1), 60_000)
  t.equal(slowPollMs(3600), 3_600_000)
})
