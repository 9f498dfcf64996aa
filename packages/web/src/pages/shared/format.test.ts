import t from 'tap'
import { formatAgo, formatBytes } from './format.js'

t.test('sizes', async (t) => {
  t.equal(formatBytes(0), '0 bytes')
  t.equal(formatBytes(1536), '1.5 KB')
  t.equal(formatBytes(2048 * 1024 * 1024), '2.0 GB')
  t.equal(formatBytes(75 * 1024 ** 3), '75 GB')
  t.equal(formatBytes(null), 'unknown')
})

t.test('how long ago', async (t) => {
  const now = Date.parse('2026-03-01T10:00:00.000Z')
  const before = (ms: number) => new Date(now - ms).toISOString()
  t.equal(formatAgo(null, now), 'never')
  t.equal(formatAgo(before(2000), now), 'just now')
  t.equal(formatAgo(before(42_000), now), '42 s ago')
  t.equal(formatAgo(before(5 * 60_000), now), '5 min ago')
  t.equal(formatAgo(before(3 * 3600_000), now), '3 h ago')
  t.equal(formatAgo(before(2 * 86400_000), now), '2 days ago')
})
