import t from 'tap'
import { takeTokens, UploadPace } from './pace.js'

t.test('the token bucket: a second of burst, then the cap on average, bytes owed when a slice is larger', async (t) => {
  const rate = 100_000
  let step = takeTokens({ tokens: rate, at: 0 }, 60_000, 0, rate)
  t.same(step, { bucket: { tokens: 40_000, at: 0 }, waitMs: 0 }, 'within the first second: at once')
  step = takeTokens(step.bucket, 60_000, 0, rate)
  t.same(step, { bucket: { tokens: -20_000, at: 0 }, waitMs: 200 }, '20 kB owed: 200 ms')
  step = takeTokens(step.bucket, 10_000, 200, rate)
  t.same(step, { bucket: { tokens: -10_000, at: 200 }, waitMs: 100 }, 'the debt paid off by the wait, the next slice owed again')
  step = takeTokens({ tokens: 0, at: 0 }, 1, 60_000, rate)
  t.equal(step.bucket.tokens, rate - 1, 'an idle minute refills one second, never more')
  t.equal(takeTokens({ tokens: 0, at: 0 }, 250_000, 0, rate).waitMs, 2_500, 'a slice larger than a second waits its share')
  t.equal(takeTokens({ tokens: 5, at: 1000 }, 0, 500, rate).bucket.tokens, 5, 'a clock going back refills nothing')
})

/** A clock that only moves when slept on: the pace's waits add up to the time it took. */
function manual() {
  let now = 0
  return { now: () => now, sleep: async (ms: number) => void (now += ms) }
}

t.test('a match sends within the cap over time; without a cap it never waits', async (t) => {
  const clock = manual()
  let cap: number | undefined = 64 * 1024
  const pace = new UploadPace({ maxBytesPerSecond: () => cap, ...clock })
  for (let i = 0; i < 20; i++) await pace.match(64 * 1024)
  // 20 slices of a second's worth: the first at once, then one a second.
  t.equal(clock.now(), 19_000, '20 s of cap for 20 s of bytes, less the first second')
  cap = undefined
  const before = clock.now()
  for (let i = 0; i < 20; i++) await pace.match(64 * 1024)
  t.equal(clock.now(), before, 'no cap: no wait')
})

t.test('a match waits while a clip uploads, and goes on once the last clip ended', async (t) => {
  const pace = new UploadPace({ maxBytesPerSecond: () => undefined, ...manual() })
  const first = pace.clipUploading()
  const second = pace.clipUploading()
  let sent = false
  const slice = pace.match(1024).then(() => (sent = true))
  await new Promise((r) => setImmediate(r))
  t.notOk(sent, 'held while clips upload')
  first()
  first()
  await new Promise((r) => setImmediate(r))
  t.notOk(sent, 'one clip still uploading (ending twice counts once)')
  second()
  await slice
  t.ok(sent, 'sent once no clip uploads')
})
