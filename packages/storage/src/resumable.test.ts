import t from 'tap'
import { receivedOf } from './gcs.js'
import { partSizeFor, partsOf, partsToSend, resumeOf } from './resumable.js'

const MiB = 1024 * 1024

t.test('partSizeFor: 8 MiB, larger only to stay within 10,000 parts', async (t) => {
  t.equal(partSizeFor(0), 8 * MiB)
  t.equal(partSizeFor(2 * 1024 * MiB), 8 * MiB, 'a 2 GB match: 256 parts of 8 MiB')
  const huge = 200 * 1024 * MiB
  t.ok(Math.ceil(huge / partSizeFor(huge)) <= 10_000, 'a 200 GB file still fits in 10,000 parts')
})

t.test('partsOf / partsToSend: numbered from 1, inclusive ends; a part the store holds whole is not sent again', async (t) => {
  t.same(partsOf(20, 8), [{ number: 1, start: 0, end: 7 }, { number: 2, start: 8, end: 15 }, { number: 3, start: 16, end: 19 }])
  t.same(partsOf(0, 8), [{ number: 1, start: 0, end: -1 }], 'an empty file is one empty part')
  t.same(partsToSend(20, 8, [{ number: 1, size: 8 }, { number: 3, size: 4 }]).map((p) => p.number), [2])
  t.same(partsToSend(20, 8, [{ number: 1, size: 5 }]).map((p) => p.number), [1, 2, 3], 'a part held at another size is sent again')
  t.same(partsToSend(20, 8, [{ number: 2 }]).map((p) => p.number), [1, 3], 'written down here without a size: taken as held')
})

t.test('resumeOf: only the same driver, key and file size go on from where they stopped', async (t) => {
  const resume = { scheme: 'gs' as const, key: 'a/b.mp4', size: 20, sessionUri: 'http://x' }
  t.same(resumeOf({ resume }, 'gs', 'a/b.mp4', 20), resume)
  t.equal(resumeOf({ resume }, 's3', 'a/b.mp4', 20), undefined)
  t.equal(resumeOf({ resume }, 'gs', 'a/c.mp4', 20), undefined)
  t.equal(resumeOf({ resume }, 'gs', 'a/b.mp4', 21), undefined, 'the file changed: from zero')
  t.equal(resumeOf(undefined, 'gs', 'a/b.mp4', 20), undefined)
})

t.test("receivedOf: a 308's Range says how many bytes the store holds", async (t) => {
  t.equal(receivedOf('bytes=0-8388607'), 8 * MiB)
  t.equal(receivedOf(undefined), 0, 'none yet')
  t.equal(receivedOf('bytes=5-9'), 0, 'not a prefix: nothing taken for held')
})
