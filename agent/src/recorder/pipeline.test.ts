import t from 'tap'
import type { Camera } from '@club/contract'
import { correctedSize, correctionFilters, escapeFilterValue, feedInputOptions, recordingArgs, snapshotArgs, videoEncoder, audioEncoder } from './pipeline.js'

const camera = (extra: Partial<Camera> = {}): Camera => ({ id: 'cam-1', feed: 'rtsp://10.0.0.20/stream1', isEnabled: true, ...extra })

t.test('a camera without settings needs no correction', async (t) => {
  t.same(correctionFilters(camera()), [])
  t.same(correctionFilters(camera({ distortion1: 0, distortion2: 0, rotation: 0, scale: 1, vignette: 0 })), [])
})

t.test('lens correction from distortion1 and distortion2', async (t) => {
  t.same(correctionFilters(camera({ distortion1: -0.23 })), ['lenscorrection=k1=-0.23:k2=0'])
  t.same(correctionFilters(camera({ distortion2: 0.05 })), ['lenscorrection=k1=0:k2=0.05'])
  t.same(correctionFilters(camera({ distortion1: 0.1, distortion2: -0.02 })), ['lenscorrection=k1=0.1:k2=-0.02'])
})

t.test('rotation: quarter turns are transposes and flips, other angles rotate', async (t) => {
  t.same(correctionFilters(camera({ rotation: 90 })), ['transpose=clock'])
  t.same(correctionFilters(camera({ rotation: -270 })), ['transpose=clock'])
  t.same(correctionFilters(camera({ rotation: 180 })), ['hflip', 'vflip'])
  t.same(correctionFilters(camera({ rotation: 270 })), ['transpose=cclock'])
  t.same(correctionFilters(camera({ rotation: -90 })), ['transpose=cclock'])
  t.same(correctionFilters(camera({ rotation: 360 })), [])
  t.same(correctionFilters(camera({ rotation: 3 })), ['rotate=0.05236:fillcolor=black'])
  t.same(correctionFilters(camera({ rotation: -45 })), ['rotate=5.497787:fillcolor=black'])
})

t.test('scale keeps sizes even', async (t) => {
  t.same(correctionFilters(camera({ scale: 0.5 })), ['scale=trunc(iw*0.5/2)*2:trunc(ih*0.5/2)*2'])
  t.same(correctedSize(camera({ scale: 0.5 }), 1280, 720), { width: 640, height: 360 })
  t.same(correctedSize(camera({ scale: 0.33 }), 1280, 720), { width: 422, height: 236 })
  t.same(correctedSize(camera({ rotation: 90, scale: 0.5 }), 320, 240), { width: 120, height: 160 })
  t.same(correctedSize(camera({ rotation: 180 }), 320, 240), { width: 320, height: 240 })
  t.same(correctedSize(camera({ rotation: 10 }), 320, 240), { width: 320, height: 240 }, 'rotate keeps the frame')
})

t.test('vignette and LUT', async (t) => {
  t.same(correctionFilters(camera({ vignette: Math.PI / 5 })), ['vignette=angle=0.628319'])
  t.same(correctionFilters(camera({ lutPath: '/etc/club/luts/court.cube' })), ['lut3d=file=/etc/club/luts/court.cube'])
})

t.test('every setting together, in order: lens, rotation, scale, vignette, LUT', async (t) => {
  t.same(
    correctionFilters(camera({ distortion1: -0.2, distortion2: 0.02, rotation: 90, scale: 0.5, vignette: 0.5, lutPath: '/luts/a.cube' })),
    ['lenscorrection=k1=-0.2:k2=0.02', 'transpose=clock', 'scale=trunc(iw*0.5/2)*2:trunc(ih*0.5/2)*2', 'vignette=angle=0.5', 'lut3d=file=/luts/a.cube']
  )
})

t.test('paths with filtergraph characters are escaped twice', async (t) => {
  // Option level: \\ ' : get a backslash; graph level: \\ ' [ ] , ; get one more.
  t.equal(escapeFilterValue('/luts/a:b.cube'), String.raw`/luts/a\\:b.cube`)
  t.equal(escapeFilterValue("/luts/it's,[x];.cube"), String.raw`/luts/it\\\'s\,\[x\]\;.cube`)
})

t.test('feeds: RTSP over TCP with a socket timeout, files looped in real time', async (t) => {
  t.same(feedInputOptions('rtsp://10.0.0.20/s'), { options: ['-rtsp_transport', 'tcp', '-timeout', '10000000'], input: 'rtsp://10.0.0.20/s' })
  t.same(feedInputOptions('https://cam/s.m3u8').options, ['-rw_timeout', '10000000'])
  t.same(feedInputOptions('file:///srv/test%20cam.mkv'), { options: ['-re', '-stream_loop', '-1'], input: '/srv/test cam.mkv' })
})

t.test('recording: stream copy, AAC audio, wall-clock fragmented MP4 segments with a CSV list', async (t) => {
  const args = recordingArgs({ camera: camera(), feed: 'rtsp://10.0.0.20/s', dir: '/rec/cam-1', segmentSeconds: 10, runId: 'abc' })
  const after = (flag: string) => args[args.indexOf(flag) + 1]
  t.ok(args.indexOf('-rtsp_transport') < args.indexOf('-i'), 'input options come before the input')
  t.equal(after('-i'), 'rtsp://10.0.0.20/s')
  t.equal(after('-c:v'), 'copy')
  t.equal(after('-c:a'), 'aac')
  t.equal(after('-f'), 'segment')
  t.equal(after('-segment_time'), '10')
  t.equal(after('-segment_atclocktime'), '1')
  t.equal(after('-reset_timestamps'), '1')
  t.equal(after('-segment_format'), 'mp4')
  t.match(after('-segment_format_options'), /frag_keyframe/)
  t.equal(after('-segment_list'), '/rec/cam-1/segments_abc.csv')
  t.equal(after('-segment_list_type'), 'csv')
  t.equal(args.at(-1), '/rec/cam-1/%Y%m%dT%H%M%SZ_abc.mp4')
  t.notOk(args.includes('-nostdin'), 'stdin stays open for a graceful q')
})

t.test('a camera without audio records none', async (t) => {
  const args = recordingArgs({ camera: camera({ audioCodec: 'none' }), feed: 'rtsp://x/s', dir: '/r', segmentSeconds: 2, runId: 'a' })
  t.ok(args.includes('-an'))
  t.notOk(args.includes('-c:a'))
})

t.test('snapshot: one JPEG frame through the corrections', async (t) => {
  const args = snapshotArgs(camera({ rotation: 90 }), '/r/seg.mp4', '/tmp/s.jpg')
  t.equal(args[args.indexOf('-vf') + 1], 'transpose=clock')
  t.equal(args[args.indexOf('-frames:v') + 1], '1')
  t.equal(args.at(-1), '/tmp/s.jpg')
  t.notOk(snapshotArgs(camera(), '/r/seg.mp4', '/tmp/s.jpg').includes('-vf'))
})

t.test('encoders follow the camera codecs', async (t) => {
  t.equal(videoEncoder('hevc')[1], 'libx265')
  t.equal(videoEncoder('h264')[1], 'libx264')
  t.equal(videoEncoder('copy')[1], 'libx264', 'a cut clip cannot be a copy')
  t.same(audioEncoder('none'), ['-an'])
  t.equal(audioEncoder('opus')[1], 'libopus')
  t.equal(audioEncoder(undefined)[1], 'aac')
})
