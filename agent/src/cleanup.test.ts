import t from 'tap'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { Cleanup, filesToDelete, recordingsBytes, type StoredFile } from './cleanup.js'

const HOUR = 3600_000
const NOW = Date.parse('2026-03-01T12:00:00Z')
const file = (path: string, hoursAgo: number, size = 100): StoredFile => ({ path, time: NOW - hoursAgo * HOUR, size })
const policy = (extra: Partial<Parameters<typeof filesToDelete>[1]> = {}) => ({
  now: NOW, retentionMs: 24 * HOUR, freeBytes: 10_000, minFreeBytes: 1_000, keep: new Set<string>(), ...extra
})

t.test('deletes what is older than the retention, oldest first', async (t) => {
  const files = [file('new', 1), file('old', 30), file('older', 50), file('edge', 24)]
  t.same(filesToDelete(files, policy()), ['older', 'old'])
})

t.test('below the minimum free disk, deletes oldest-first until there is enough', async (t) => {
  const files = [file('a', 3, 500), file('b', 2, 500), file('c', 1, 500)]
  t.same(filesToDelete(files, policy({ freeBytes: 100, minFreeBytes: 1_000 })), ['a', 'b'])
  t.same(filesToDelete(files, policy({ freeBytes: 0, minFreeBytes: 10_000 })), ['a', 'b', 'c'], 'everything when it is still not enough')
})

t.test('never deletes a segment an export is reading or ffmpeg is writing', async (t) => {
  const files = [file('reading', 50), file('old', 40), file('writing', 30)]
  t.same(filesToDelete(files, policy({ keep: new Set(['reading', 'writing']) })), ['old'])
  t.same(filesToDelete(files, policy({ keep: new Set(['reading']), freeBytes: 0, minFreeBytes: 1e9 })), ['old', 'writing'])
})

t.test('enough room and nothing old: nothing to delete', async (t) => {
  t.same(filesToDelete([file('a', 1), file('b', 2)], policy()), [])
})

t.test('the job deletes old segments and clips from disk, keeping the newest segment', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'club-agent-cleanup-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const cam = join(dir, 'rec', 'cam-1')
  mkdirSync(cam, { recursive: true })
  mkdirSync(join(dir, 'clips'))
  for (const name of ['20260227T100000Z_a.mp4', '20260227T100010Z_a.mp4', '20260301T115950Z_a.mp4']) writeFileSync(join(cam, name), 'x')
  writeFileSync(join(cam, 'segments_a.csv'), '20260227T100000Z_a.mp4,0.0,10.0\n')
  writeFileSync(join(dir, 'clips', 'old.mp4'), 'x')
  const cleanup = new Cleanup({
    recordingsDir: join(dir, 'rec'), clipsDir: join(dir, 'clips'), retentionHours: 24, minFreeDiskMb: 0, schedule: '* * * * *',
    inUse: () => new Set([join(cam, '20260227T100010Z_a.mp4')]), log: pino({ level: 'silent' })
  })
  t.equal(recordingsBytes(join(dir, 'rec')), 3, "the recordings' size: every segment of every camera")
  t.equal(cleanup.lastRun, undefined)
  const deleted = await cleanup.runOnce(NOW + 365 * 24 * HOUR)
  t.same(cleanup.lastRun, { at: new Date(NOW + 365 * 24 * HOUR), deleted: 3 }, "the box's page shows the last run")
  t.equal(recordingsBytes(join(dir, 'rec')), 2)
  t.same(readdirSync(cam).sort(), ['20260227T100010Z_a.mp4', '20260301T115950Z_a.mp4'], 'in use and newest stay')
  t.same(readdirSync(join(dir, 'clips')), [])
  t.equal(deleted.length, 3, 'an old segment, an old clip and a segment list that outlived its run')
})
