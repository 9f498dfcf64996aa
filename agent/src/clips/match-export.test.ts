// A MATCH through the box's export, against real ffmpeg: hours-long intervals are taken (the local
// API's clip limit is not a match's), its chapters are written into the MP4 and read back by ffprobe,
// and its ffmpeg runs at the lowest priority.
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createLogger } from '../log.js'
import { FfmpegRunner } from '../recorder/runner.js'
import { tempDir } from '../temp-dir.fixture.js'
import { chapterMetadata, ClipError, ClipExporter, matchFits, MAX_MATCH_SECONDS } from './export.js'
import { SegmentLeases } from './leases.js'
import { execFileAsync } from './recording.fixture.js'
import { recorded } from './segments.fixture.js'

t.test('a match may last hours; a clip keeps the local API limit', async (t) => {
  const exporter = new ClipExporter({
    runner: new FfmpegRunner({ ffmpegPath: 'ffmpeg', ffprobePath: 'ffprobe' }),
    recordingsDir: '/nonexistent', clipsDir: '/nonexistent', segmentSeconds: 2, maxClipSeconds: 300,
    leases: new SegmentLeases(), bucket: () => Promise.reject(new Error('none')), log: createLogger('silent')
  })
  const camera = { id: 'cam-1', feed: 'rtsp://camera/stream', isEnabled: true, audioCodec: 'none' as const }
  const start = new Date('2026-03-01T18:00:00Z')
  const fourHours = new Date(start.getTime() + 4 * 3600_000)
  t.doesNotThrow(() => exporter.check({ cameraId: 'cam-1', start, end: fourHours, match: { chapters: [] } }, camera, null), 'a four-hour match')
  t.throws(() => exporter.check({ cameraId: 'cam-1', start, end: fourHours }, camera, null), ClipError, 'a four-hour clip is refused')
  const tooLong = new Date(start.getTime() + (MAX_MATCH_SECONDS + 1) * 1000)
  t.throws(() => exporter.check({ cameraId: 'cam-1', start, end: tooLong, match: { chapters: [] } }, camera, null), /a match may last at most 21600 s/)
})

t.test('chapters as FFMETADATA: in order, each to the next, the last to the end, a Start before the first, marks past the end left out, text escaped', async (t) => {
  t.equal(
    chapterMetadata([{ at: 70.25, label: 'b=1; #2' }, { at: 12, label: 'Replay 19:42' }, { at: 600, label: 'after the end' }], 90),
    ';FFMETADATA1\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=12000\ntitle=Start\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=12000\nEND=70250\ntitle=Replay 19:42\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=70250\nEND=90000\ntitle=b\\=1\\; \\#2\n'
  )
  t.equal(chapterMetadata([], 90), ';FFMETADATA1\n')
  t.equal(chapterMetadata([{ at: 0, label: 'a' }], 1), ';FFMETADATA1\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=1000\ntitle=a\n', 'a mark at 0 needs no Start')
  t.equal(
    chapterMetadata([{ at: 0, label: 'a\r\n[CHAPTER]\rSTART=0\u0000b' }], 1),
    ';FFMETADATA1\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=1000\ntitle=a  [CHAPTER] START\\=0 b\n',
    'a label with line breaks stays one title line: no chapter or key of its own'
  )
})

t.test('a match waits for room on the disk: its footage (twice with chapters) and a reserve', async (t) => {
  const gib = 1024 ** 3
  t.ok(matchFits(2 * gib, false, 3 * gib))
  t.notOk(matchFits(2 * gib, true, 3 * gib), 'the chapters copy needs the room twice')
  t.ok(matchFits(2 * gib, true, 5 * gib))
  t.notOk(matchFits(2 * gib, false, 2.5 * gib), 'the reserve is kept for the recordings')
})

t.test("a match's chapters are in its MP4 as ffprobe reads them", async (t) => {
  const dir = tempDir(t)
  const footage = await recorded(dir, { seconds: 16, segmentSeconds: 2, size: '320x240', rate: 15, gop: 15, audio: true, preset: 'ultrafast' })
  const path = await footage.cut(2, 14, {
    match: { chapters: [{ at: 1, label: 'Replay 10:00' }, { at: 6.5, label: 'Replay 10:00; again' }, { at: 30, label: 'past the end' }] }
  })
  const { stdout } = await execFileAsync('ffprobe', ['-v', 'error', '-of', 'json', '-show_chapters', '-show_format', path])
  const probed = JSON.parse(stdout) as { chapters: Array<{ start_time: string; end_time: string; tags?: { title?: string } }>; format: { duration: string } }
  t.same(probed.chapters.map((c) => [Number(c.start_time), Number(c.end_time), c.tags?.title]), [
    [0, 1, 'Start'],
    [1, 6.5, 'Replay 10:00'],
    [6.5, 12, 'Replay 10:00; again']
  ])
  t.ok(Math.abs(Number(probed.format.duration) - 12) < 0.2, `the match's length: ${probed.format.duration} s`)
  t.same(readdirSync(join(dir, 'clips')).filter((n) => n.startsWith('.work-')), [], 'no work folder left behind')
})

/** The nice value of each of a process's threads, from /proc. */
function threadNiceness(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
    // Fields after the command's closing parenthesis; nice is field 19 of the whole line.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
  })
}

t.test("a match's ffmpeg runs at the lowest priority, every thread of it", { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const runner = new FfmpegRunner({ ffmpegPath: 'ffmpeg', ffprobePath: 'ffprobe', lowestPriority: true, stopStepMs: 2_000 })
  const proc = runner.start(['-hide_banner', '-loglevel', 'error', '-re', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=15', '-t', '30', '-c:v', 'libx264', '-preset', 'ultrafast', '-f', 'null', '-'])
  t.teardown(() => proc.stop())
  const pid = (await proc.pid)!
  // Waits until the encoder's threads exist (a loaded machine takes a while to open the codec).
  const deadline = Date.now() + 20_000
  while (threadNiceness(pid).length < 2 && Date.now() < deadline) await sleep(50)
  const nice = threadNiceness(pid)
  t.ok(nice.length >= 2, `ffmpeg's threads: ${nice.length}`)
  t.same([...new Set(nice)], [19], 'nice 19 on every thread')
  const { stdout } = await execFileAsync('ionice', ['-p', String(pid)]).catch(() => ({ stdout: 'idle (no ionice)' }))
  t.match(stdout, /idle/, 'the idle I/O class where ionice exists')
})
