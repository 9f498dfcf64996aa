// The temperature never holds up a poll: read in the background, kept a minute, null when the
// hardware has none, fails or does not answer in time.
import t from 'tap'
import { ManualClock } from '../clock.js'
import { cpuTemperature, Temperature, TEMPERATURE_CACHE_MS } from './gather.js'

t.test('read in the background, kept for a minute, read again after it', async (t) => {
  const clock = new ManualClock()
  let reads = 0
  const temperature = new Temperature({ clock, read: async () => 40 + ++reads })
  t.equal(temperature.current(), null, 'the first call does not wait for the hardware')
  await temperature.settled()
  t.equal(temperature.current(), 41)
  clock.advance(TEMPERATURE_CACHE_MS - 1)
  t.equal(temperature.current(), 41)
  await temperature.settled()
  t.equal(reads, 1, 'within the minute: not read again')
  clock.advance(1)
  t.equal(temperature.current(), 41, 'the old value while the new one is read')
  await temperature.settled()
  t.equal(temperature.current(), 42)
})

t.test('a reading that throws, never answers or says nothing is null, and never an exception', async (t) => {
  const clock = new ManualClock()
  const failing = new Temperature({ clock, read: () => Promise.reject(new Error('no sensors')) })
  failing.current()
  await failing.settled()
  t.equal(failing.current(), null)

  // Never answers: the timeout ends the wait, whatever the machine's speed.
  const hanging = new Temperature({ clock, read: () => new Promise<number>(() => {}), timeoutMs: 50 })
  hanging.current()
  await hanging.settled()
  t.equal(hanging.current(), null)

  const none = new Temperature({ clock, read: async () => null })
  none.current()
  await none.settled()
  t.equal(none.current(), null)
})

t.test("this machine's own reading: a number or null", async (t) => {
  const value = await cpuTemperature()
  t.ok(value === null || (typeof value === 'number' && Number.isFinite(value)), `${value}`)
})
