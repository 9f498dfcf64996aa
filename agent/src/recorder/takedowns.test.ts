import t from 'tap'
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pino from 'pino'
import type { Camera, FootageTakedownOrder } from '@club/contract'
import { tempDir } from '../temp-dir.fixture.js'
import type { Segment } from './segments.js'
import { FootageTakedowns, footageToDelete } from './takedowns.js'

const camera = (id: string, courtIds: string[], extra: Partial<Camera> = {}): Camera => ({ id, name: id, feed: 'rtsp://10.0.0.20/1', isEnabled: true, courtIds, ...extra })
const segment = (path: string, start: string, duration?: number): Segment => ({ path, start: new Date(start), duration, size: 100, mtimeMs: 0 })
const takedown = (court: string, start: string, end: string, id = 'td-1'): FootageTakedownOrder => ({ id, court: { id: court }, start, end })

t.test('footageToDelete: the overlapping segments of every camera filming the court, and only those', async (t) => {
  const cameras = [camera('north', ['c1']), camera('wide', ['c1', 'c2'], { isEnabled: false }), camera('south', ['c2'])]
  const segments: Record<string, Segment[]> = {
    north: [
      segment('n-0950', '2026-03-01T09:50:00Z', 300),
      segment('n-0955', '2026-03-01T09:55:00Z', 300),
      segment('n-1000', '2026-03-01T10:00:00Z', 300),
      segment('n-1005', '2026-03-01T10:05:00Z', 300)
    ],
    wide: [segment('w-0958', '2026-03-01T09:58:00Z', 300)],
    south: [segment('s-0958', '2026-03-01T09:58:00Z', 300)]
  }
  const of = (id: string) => segments[id] ?? []
  t.same(
    footageToDelete([takedown('c1', '2026-03-01T09:59:50Z', '2026-03-01T10:00:10Z')], cameras, of),
    [{ id: 'td-1', paths: ['n-0955', 'n-1000', 'w-0958'] }],
    'both cameras filming c1 (one switched off since), not the one filming c2 alone'
  )
  t.same(footageToDelete([takedown('c1', '2026-03-01T09:55:00Z', '2026-03-01T10:00:00Z')], cameras, of)[0]!.paths, ['n-0955', 'w-0958'], 'an end is not included, nor a segment ending at the start')
  t.same(footageToDelete([takedown('c9', '2026-03-01T09:00:00Z', '2026-03-01T11:00:00Z')], cameras, of)[0]!.paths, [], 'no camera films the court: nothing')
  t.same(footageToDelete([takedown('c1', 'not a date', '2026-03-01T11:00:00Z')], cameras, of)[0]!.paths, [], 'dates that do not parse delete nothing')
})

t.test('footageToDelete: a segment not yet listed lasts until the next, the newest without end', async (t) => {
  const cameras = [camera('north', ['c1'])]
  const segments = [segment('left-by-a-crash', '2026-03-01T09:40:00Z'), segment('next-run', '2026-03-01T09:50:00Z', 60), segment('writing', '2026-03-01T09:58:00Z')]
  t.same(footageToDelete([takedown('c1', '2026-03-01T09:45:00Z', '2026-03-01T09:46:00Z')], cameras, () => segments)[0]!.paths, ['left-by-a-crash'])
  t.same(footageToDelete([takedown('c1', '2026-03-01T10:30:00Z', '2026-03-01T10:31:00Z')], cameras, () => segments)[0]!.paths, ['writing'], 'ffmpeg may still be writing it')
})

t.test('with real files: the overlapping segments go, the others and other cameras stay, each takedown confirmed once with its count', async (t) => {
  const dir = tempDir(t)
  const write = (cameraId: string, names: string[]) => {
    mkdirSync(join(dir, cameraId), { recursive: true })
    for (const name of names) writeFileSync(join(dir, cameraId, name), 'segment bytes')
  }
  write('north', ['20260301T095000Z_a.mp4', '20260301T095500Z_a.mp4', '20260301T100000Z_a.mp4', '20260301T100500Z_a.mp4'])
  // ffmpeg's list of the finished ones: five minutes each.
  writeFileSync(
    join(dir, 'north', 'segments_a.csv'),
    ['20260301T095000Z_a.mp4,0,300', '20260301T095500Z_a.mp4,300,600', '20260301T100000Z_a.mp4,600,900'].join('\n')
  )
  write('south', ['20260301T095500Z_b.mp4', '20260301T100000Z_b.mp4'])
  const confirmed: Array<[string, number]> = []
  let refuse = true
  const takedowns = new FootageTakedowns({
    recordingsDir: dir,
    confirm: async (id, n) => {
      if (refuse) throw new Error('server away')
      confirmed.push([id, n])
    },
    log: pino({ level: 'silent' })
  })
  const cameras = [camera('north', ['c1']), camera('south', ['c2'])]
  const told = [takedown('c1', '2026-03-01T09:59:50Z', '2026-03-01T10:00:10Z')]

  await t.rejects(takedowns.apply(told, cameras), /server away/, 'the server did not hear it')
  t.same(readdirSync(join(dir, 'north')).sort(), ['20260301T095000Z_a.mp4', '20260301T100500Z_a.mp4', 'segments_a.csv'], 'the two overlapping segments are gone')
  t.same(readdirSync(join(dir, 'south')).sort(), ['20260301T095500Z_b.mp4', '20260301T100000Z_b.mp4'], "another court's camera keeps everything")
  refuse = false
  await takedowns.apply(told, cameras)
  t.same(confirmed, [['td-1', 2]], 'confirmed with the next answer, with the files deleted the first time')
  await takedowns.apply(told, cameras)
  t.same(confirmed, [['td-1', 2]], 'once: the answer that still lists it before the server saw the confirmation does nothing')
  t.ok(existsSync(join(dir, 'north', '20260301T100500Z_a.mp4')), 'the newest, after the interval, stays')
})
