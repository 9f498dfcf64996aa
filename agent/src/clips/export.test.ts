import t from 'tap'
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import type { Camera, ReplayServerConfig } from '@club/contract'
import { openBucket } from '@club/storage'
import { ManualClock } from '../clock.js'
import { createLogger } from '../log.js'
import { FfmpegError, type FfmpegRunner } from '../recorder/runner.js'
import { tempDir } from '../temp-dir.fixture.js'
import { ClipExporter, clipArgs, concatList, overlayPosition, usableRate, type ClipPlan } from './export.js'
import { SegmentLeases } from './leases.js'

const camera: Camera = { id: 'cam-1', feed: 'rtsp://x/s', isEnabled: true }
const plan = (extra: Partial<ClipPlan> = {}): ClipPlan => ({
  sources: [{ path: '/r/a.mp4', duration: 2.127083, start: new Date(0) }, { path: "/r/it's.mp4", duration: 1.999, start: new Date(2000) }],
  offset: 0.5,
  duration: 3,
  camera,
  picture: { width: 320, height: 240, frameRate: '15/1' },
  withAudio: true,
  concatListPath: '/w/list.ffconcat',
  outputPath: '/clips/x.mp4',
  ...extra
})
const graph = (args: string[]) => args[args.indexOf('-filter_complex') + 1]!

t.test('the concat list carries every segment with its real duration', async (t) => {
  t.equal(concatList(plan().sources), "ffconcat version 1.0\nfile '/r/a.mp4'\nduration 2.127083\nfile '/r/it'\\''s.mp4'\nduration 1.999000\n")
})

t.test('a plain clip: one frame rate, then the cut, then faststart MP4', async (t) => {
  const args = clipArgs(plan({ withAudio: false }))
  t.same(args.slice(args.indexOf('-f'), args.indexOf('-i') + 2), ['-f', 'concat', '-safe', '0', '-i', '/w/list.ffconcat'])
  t.equal(graph(args), '[0:v]fps=15/1,trim=start=0.500:duration=3.000,setpts=PTS-STARTPTS,setsar=1,format=yuv420p[main]')
  t.same(args.slice(args.indexOf('-map'), args.indexOf('-map') + 2), ['-map', '[main]'])
  t.ok(args.includes('-an'))
  t.equal(args[args.indexOf('-movflags') + 1], '+faststart')
  t.equal(args.at(-1), '/clips/x.mp4')
})

t.test("the camera's corrections come after the cut", async (t) => {
  t.match(graph(clipArgs(plan({ camera: { ...camera, rotation: 90, lutPath: '/l.cube' } }))), 'setpts=PTS-STARTPTS,transpose=clock,format=gbrpf32le,lut3d=file=/l.cube,setsar=1')
})

t.test('a geometry with maps is one remap over the 4:4:4 picture, then vignette and LUT, on every core', async (t) => {
  const args = clipArgs(plan({
    camera: { ...camera, distortion1: 0.1, rotation: 3, vignette: 0.5, lutPath: '/l.cube' },
    maps: { x: '/rec/.correction-maps/k.x.pgm', y: '/rec/.correction-maps/k.y.pgm' },
    filterThreads: 2,
    logo: { path: '/logo.png', placement: 'top-left' }
  }))
  t.same(args.slice(args.indexOf('/w/list.ffconcat') + 1, args.indexOf('/logo.png') + 1), [
    '-f', 'image2', '-pattern_type', 'none', '-i', '/rec/.correction-maps/k.x.pgm',
    '-f', 'image2', '-pattern_type', 'none', '-i', '/rec/.correction-maps/k.y.pgm',
    '-i', '/logo.png'
  ], 'the maps are inputs 1 and 2, read as single pictures; the logo comes after them')
  t.equal(graph(args),
    '[0:v]fps=15/1,trim=start=0.500:duration=3.000,setpts=PTS-STARTPTS,format=yuv444p[main_src];' +
    '[main_src][1:v][2:v]remap,format=yuv420p,vignette=angle=0.5,format=gbrpf32le,lut3d=file=/l.cube,setsar=1,format=yuv420p[main];' +
    '[main][3:v]overlay=16:16:eof_action=repeat[logo];' +
    '[0:a]atrim=start=0.500:duration=3.000,asetpts=PTS-STARTPTS,aformat=sample_rates=48000:channel_layouts=stereo[a]')
  t.equal(args[args.indexOf('-filter_complex_threads') + 1], '2')
})

t.test("a match encoded whole keeps to one core: the decoder, the filters and x264 one thread each, at superfast", async (t) => {
  const args = clipArgs(plan({ camera: { ...camera, vignette: 0.5, lutPath: '/l.cube' }, filterThreads: 2, oneCore: true }))
  t.same(args.slice(args.indexOf('-threads'), args.indexOf('-threads') + 2), ['-threads', '1'], 'the decoder')
  t.ok(args.indexOf('-threads') < args.indexOf('-i'), 'as an input option')
  t.equal(args[args.indexOf('-filter_complex_threads') + 1], '1', "the filters, whatever the box's cores")
  t.equal(args[args.indexOf('-preset') + 1], 'superfast')
  t.equal(args[args.lastIndexOf('-threads') + 1], '1', 'the encoder')
  t.ok(args.lastIndexOf('-threads') > args.indexOf('-c:v'), 'as an output option')
  const clip = clipArgs(plan({ camera: { ...camera, vignette: 0.5 }, filterThreads: 2 }))
  t.equal(clip[clip.indexOf('-preset') + 1], 'veryfast', "a player's clip as before")
  t.notOk(clip.includes('-threads'), 'on every core')
})

t.test('logo at its placement', async (t) => {
  const args = clipArgs(plan({ logo: { path: '/logo.png', placement: 'bottom-right' } }))
  t.equal(args[args.indexOf('/logo.png') - 1], '-i')
  t.match(graph(args), '[main][1:v]overlay=W-w-16:H-h-16:eof_action=repeat[logo]')
  t.equal(overlayPosition('top-left'), '16:16')
  t.equal(overlayPosition('center'), '(W-w)/2:(H-h)/2')
})

t.test('postroll scaled to the corrected picture and joined with its audio', async (t) => {
  const args = clipArgs(plan({
    camera: { ...camera, rotation: 90, scale: 0.5 },
    logo: { path: '/logo.png', placement: 'top-left' },
    postroll: { path: '/post.mp4', duration: 1, hasAudio: true }
  }))
  const g = graph(args)
  t.match(g, '[2:v]scale=120:160:force_original_aspect_ratio=decrease:force_divisible_by=2,pad=120:160:(ow-iw)/2:(oh-ih)/2,setsar=1,fps=15/1,format=yuv420p[post]')
  t.match(g, '[2:a]aformat=sample_rates=48000:channel_layouts=stereo[pa]')
  t.match(g, '[logo][a][post][pa]concat=n=2:v=1:a=1[out][aout]')
  t.same(args.filter((a, i) => args[i - 1] === '-map'), ['[out]', '[aout]'])
})

t.test('a silent postroll gets silence when the clip has sound; none when it has none', async (t) => {
  t.match(graph(clipArgs(plan({ postroll: { path: '/p.mp4', duration: 1.5, hasAudio: false } }))), 'anullsrc=r=48000:cl=stereo,atrim=duration=1.500[pa]')
  t.match(graph(clipArgs(plan({ withAudio: false, postroll: { path: '/p.mp4', duration: 1, hasAudio: true } }))), '[main][post]concat=n=2:v=1:a=0[out]')
})

t.test('frame rates as ffprobe reports them', async (t) => {
  t.equal(usableRate('30000/1001'), '30000/1001')
  t.equal(usableRate('0/0'), '25')
  t.equal(usableRate(undefined), '25')
})

t.test("the bucket is opened through @club/storage before any footage is read; one the box cannot open is a 422", async (t) => {
  let opened = 0
  const exporter = new ClipExporter({
    // Never reached: both exports below end before the first ffprobe.
    runner: undefined as never,
    recordingsDir: '/nonexistent/recordings',
    clipsDir: '/nonexistent/clips',
    segmentSeconds: 2,
    maxClipSeconds: 30,
    leases: new SegmentLeases(),
    bucket: () => (opened++, openBucket('s3://clips/venue', { credentialsPath: '/nonexistent/s3-credentials.json' })),
    log: createLogger('silent')
  })
  const request = { cameraId: camera.id, start: new Date('2026-03-01T10:00:00Z'), end: new Date('2026-03-01T10:00:05Z') }
  const config = (extra: Partial<ReplayServerConfig>) => ({ cameras: [camera], ...extra }) as ReplayServerConfig
  await t.rejects(exporter.export(request, camera, config({ cloudStorageBucket: 's3://clips/venue' }), null), {
    name: 'ClipError',
    statusCode: 422,
    message: 'cannot read the credentials file /nonexistent/s3-credentials.json: ENOENT'
  })
  t.equal(opened, 1)
  await t.rejects(exporter.export(request, camera, config({}), null), { statusCode: 404, message: /no footage/ }, 'no bucket: none opened, the clip would stay in the clips folder')
  t.equal(opened, 1)
})

/** A segment's file name of run r1, as ffmpeg names it, for a start `ms`. */
const segmentName = (ms: number) => `${new Date(ms).toISOString().replace(/[-:]/g, '').slice(0, 15)}Z_r1.mp4`

/** The moment the exporters below read as now: the segments' names and ages are reckoned from it. */
const now = Date.parse('2026-03-01T10:00:00Z')

/** An exporter over `dir`'s recordings with 2 s segments and no bucket, its clock standing at `now`. */
function exporterIn(dir: string, runner: FfmpegRunner, log: ReturnType<typeof createLogger>) {
  return new ClipExporter({
    clock: new ManualClock(new Date(now)),
    runner,
    recordingsDir: join(dir, 'recordings'),
    clipsDir: join(dir, 'clips'),
    segmentSeconds: 2,
    maxClipSeconds: 30,
    leases: new SegmentLeases(),
    bucket: () => Promise.reject(new Error('no bucket')),
    log
  })
}

t.test("ffmpeg failing over footage measured a moment ago and still being written: a 503, ffmpeg's words in the log", async (t) => {
  const dir = tempDir(t)
  const [finished, writing] = [segmentName(now - 3000), segmentName(now - 1000)]
  mkdirSync(join(dir, 'recordings', camera.id), { recursive: true })
  for (const file of [finished, writing]) writeFileSync(join(dir, 'recordings', camera.id, file), '')
  writeFileSync(join(dir, 'recordings', camera.id, 'segments_r1.csv'), `${finished},0.000000,2.000000\n`)
  let logs = ''
  const failing = {
    videoPackets: async () => '0.000000,0.066667\n0.066667,0.066667\n0.133333,0.066667\n',
    probe: async () => ({ streams: [{ codec_type: 'video', width: 320, height: 240, r_frame_rate: '15/1' }] }),
    run: async () => { throw new FfmpegError('ffmpeg failed: Error marking filters as finished') }
  }
  const exporter = exporterIn(dir, failing as unknown as FfmpegRunner, createLogger('info', new Writable({ write: (chunk, _e, done) => ((logs += chunk.toString()), done()) })))
  const request = { cameraId: camera.id, start: new Date(now - 2500), end: new Date(now) }
  await t.rejects(exporter.export(request, camera, { cameras: [camera] } as ReplayServerConfig, null), {
    name: 'ClipError',
    statusCode: 503,
    message: 'the footage of camera cam-1 could not be read while it is being written: ask again in 2 s'
  })
  t.match(logs, /Error marking filters as finished/)
})

t.test('an interval beginning more than a segment from now is a 404, not a wait for footage being written', async (t) => {
  const dir = tempDir(t)
  mkdirSync(join(dir, 'recordings', camera.id), { recursive: true })
  // The segment being written, not yet in ffmpeg's list.
  writeFileSync(join(dir, 'recordings', camera.id, segmentName(now - 1000)), '')
  const exporter = exporterIn(dir, { videoPackets: async () => '' } as unknown as FfmpegRunner, createLogger('silent'))
  const request = { cameraId: camera.id, start: new Date(now + 60_000), end: new Date(now + 65_000) }
  await t.rejects(exporter.export(request, camera, { cameras: [camera] } as ReplayServerConfig, null), { name: 'ClipError', statusCode: 404, message: /^no footage of camera cam-1 between / })
})

t.test("a replay's export takes the whole interval or says why not; the local API's takes the part on disk", async (t) => {
  const dir = tempDir(t)
  const folder = join(dir, 'recordings', camera.id)
  mkdirSync(folder, { recursive: true })
  mkdirSync(join(dir, 'clips'))
  // A finished segment, then the one being written, nothing of it readable yet (a low bitrate).
  const [finished, writing] = [segmentName(now - 3000), segmentName(now - 1000)]
  for (const file of [finished, writing]) writeFileSync(join(folder, file), '')
  writeFileSync(join(folder, 'segments_r1.csv'), `${finished},0.000000,2.000000\n`)
  const cuts: string[] = []
  const runner = {
    videoPackets: async () => '',
    probe: async (path: string) => ({ streams: [{ codec_type: 'video', width: 320, height: 240, r_frame_rate: '15/1' }], ...(path.includes('clips') ? { duration: 1.5 } : {}) }),
    run: async (args: string[]) => void cuts.push(graph(args)!)
  }
  const exporter = exporterIn(dir, runner as unknown as FfmpegRunner, createLogger('silent'))
  const config = { cameras: [camera] } as ReplayServerConfig
  const request = { cameraId: camera.id, start: new Date(now - 2500), end: new Date(now - 500) }

  const clip = await exporter.export(request, camera, config, null)
  t.equal(clip.duration, 1.5, 'the local API: the finished part')
  t.match(cuts, [/trim=start=0\.500:duration=1\.500/])
  await t.rejects(exporter.export({ ...request, whole: true }, camera, config, null), {
    name: 'ClipError',
    statusCode: 503,
    message: `the footage of camera cam-1 up to ${new Date(now - 500).toISOString()} is still being written: ask again in 2 s`
  }, 'a replay: not cut, told when to ask again')
  t.equal(cuts.length, 1, 'no ffmpeg run for it')
})

t.test("a replay's export over a recording that stopped before its end: a 410, not a short clip", async (t) => {
  const dir = tempDir(t)
  const folder = join(dir, 'recordings', camera.id)
  mkdirSync(folder, { recursive: true })
  // The camera stopped 0.4 s into its last segment, finished (listed) 3.6 s ago, and nothing came after.
  const [full, last] = [segmentName(now - 6000), segmentName(now - 4000)]
  for (const file of [full, last]) writeFileSync(join(folder, file), '')
  utimesSync(join(folder, last), new Date(now - 3600), new Date(now - 3600))
  writeFileSync(join(folder, 'segments_r1.csv'), `${full},0.000000,2.000000\n${last},2.000000,2.400000\n`)
  const exporter = exporterIn(dir, { videoPackets: async () => '' } as unknown as FfmpegRunner, createLogger('silent'))
  const request = { cameraId: camera.id, start: new Date(now - 5500), end: new Date(now - 2000), whole: true }
  await t.rejects(exporter.export(request, camera, { cameras: [camera] } as ReplayServerConfig, null), {
    name: 'ClipError',
    statusCode: 410,
    message: `the recording of camera cam-1 ended at ${new Date(now - 3600).toISOString()}, before the end of the interval (${new Date(now - 2000).toISOString()}): ` +
      `its footage up to ${new Date(now - 2000).toISOString()} will never be on disk`
  })
})
