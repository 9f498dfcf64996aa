import t from 'tap'
import type { Camera } from '@club/contract'
import type { ClipSource } from '../recorder/segments.js'
import { audioConcatList, isPlainCut, joinArgs, matchingEncoder, parseKeyframes, piecesArgs, planSmartCut, videoConcatList, type Keyframe } from './smart-cut.js'

/** Three 2 s segments, one keyframe a second, no B-frames. */
const sources: ClipSource[] = ['/r/a.mp4', '/r/b.mp4', '/r/c.mp4'].map((path, i) => ({ path, duration: 2, start: new Date(i * 2000) }))
const everySecond: Keyframe[] = [{ pts: 0, dts: 0 }, { pts: 1, dts: 1 }]
const keyframes = new Map(sources.map((s) => [s.path, everySecond]))

t.test('a cut from mid-GOP to mid-GOP: the partial groups at both ends encoded, the rest copied', async (t) => {
  t.same(planSmartCut(sources, 0.3, 5.2, keyframes), [
    { kind: 'encode', path: '/r/a.mp4', from: 0.3, to: 1 },
    { kind: 'copy', path: '/r/a.mp4', from: 1, to: 2 },
    { kind: 'copy', path: '/r/b.mp4', from: 0, to: 2 },
    { kind: 'copy', path: '/r/c.mp4', from: 0, to: 1, stopDts: 1 },
    { kind: 'encode', path: '/r/c.mp4', from: 1, to: 1.5 }
  ])
})

t.test('a cut starting on a keyframe has no head; one ending on a keyframe no tail', async (t) => {
  t.same(planSmartCut(sources.slice(0, 2), 1, 3, keyframes), [
    { kind: 'copy', path: '/r/a.mp4', from: 1, to: 2 },
    { kind: 'copy', path: '/r/b.mp4', from: 0, to: 1, stopDts: 1 },
    { kind: 'encode', path: '/r/b.mp4', from: 1, to: 2 }
  ], 'the newest segment is never copied to its end: it may still be growing')
  t.same(planSmartCut(sources, 1, 4, keyframes), [
    { kind: 'copy', path: '/r/a.mp4', from: 1, to: 2 },
    { kind: 'copy', path: '/r/b.mp4', from: 0, to: 2 },
    { kind: 'copy', path: '/r/c.mp4', from: 0, to: 1, stopDts: 1 }
  ], 'ending on the keyframe at 5 s: nothing encoded')
})

t.test('less than a frame before a keyframe is no head: there is no frame to encode', async (t) => {
  t.same(planSmartCut(sources.slice(1, 2), 0.98, 0.5, keyframes, 0.04), [{ kind: 'encode', path: '/r/b.mp4', from: 1, to: 1.48 }])
  t.same(planSmartCut(sources.slice(1, 2), 0.96, 0.5, keyframes, 0.04)[0], { kind: 'encode', path: '/r/b.mp4', from: 0.96, to: 1 }, 'a whole frame before it is one')
})

t.test('an interval inside one group of pictures is encoded whole', async (t) => {
  t.same(planSmartCut(sources.slice(1, 2), 0.2, 0.6, keyframes), [{ kind: 'encode', path: '/r/b.mp4', from: 0.2, to: 0.8 }])
  t.same(planSmartCut(sources.slice(0, 2), 1.4, 0.8, keyframes), [
    { kind: 'encode', path: '/r/a.mp4', from: 1.4, to: 2 },
    { kind: 'encode', path: '/r/b.mp4', from: 0, to: 0.2 }
  ], 'across a segment boundary: the next segment begins on a keyframe, the 0.2 s before the next one are encoded')
})

t.test('a segment whose keyframes are unknown (ffprobe could not read it) is encoded, never copied blind', async (t) => {
  t.same(planSmartCut(sources.slice(0, 1), 0.5, 1, new Map()), [{ kind: 'encode', path: '/r/a.mp4', from: 0.5, to: 1.5 }])
})

t.test('with B-frames the copy stops at the decoding time of the next keyframe', async (t) => {
  const delayed = new Map([['/r/a.mp4', [{ pts: 0.08, dts: 0 }, { pts: 1.08, dts: 1 }]]])
  t.same(planSmartCut(sources.slice(0, 1), 0, 1.5, delayed), [
    { kind: 'copy', path: '/r/a.mp4', from: 0, to: 1.08, stopDts: 1 },
    { kind: 'encode', path: '/r/a.mp4', from: 1.08, to: 1.5 }
  ], 'and no head before the first keyframe: no frame is shown there')
})

t.test('the ends are encoded as the recording is: profile, level, pixel format, timescale; others are not continued', async (t) => {
  t.same(matchingEncoder({ codec_name: 'h264', profile: 'Constrained Baseline', level: 31, pix_fmt: 'yuvj420p', time_base: '1/90000' }), [
    '-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '18', '-profile:v', 'baseline', '-level:v', '31', '-pix_fmt', 'yuvj420p',
    '-bf', '0', '-fps_mode', 'passthrough', '-video_track_timescale', '90000'
  ])
  const high = matchingEncoder({ codec_name: 'h264', profile: 'High', level: 40, pix_fmt: 'yuv420p', time_base: '1/12800' })!
  t.equal(high[high.indexOf('-profile:v') + 1], 'high')
  t.equal(matchingEncoder({ codec_name: 'hevc', profile: 'Main', pix_fmt: 'yuv420p' }), undefined, 'HEVC: encoded whole')
  t.equal(matchingEncoder({ codec_name: 'h264', profile: 'High 10', pix_fmt: 'yuv420p10le' }), undefined, '10-bit: encoded whole')
})

t.test('the head and the tail are encoded by one ffmpeg: an input and an output each', async (t) => {
  const pieces = planSmartCut(sources, 0.3, 5.2, keyframes).filter((p) => p.kind === 'encode')
  t.same(piecesArgs(pieces, ['-c:v', 'libx264'], ['/w/piece-0.mp4', '/w/piece-1.mp4']), [
    '-hide_banner', '-loglevel', 'error',
    '-threads', '1', '-ss', '0.300000', '-i', '/r/a.mp4', '-threads', '1', '-ss', '1.000000', '-i', '/r/c.mp4',
    '-t', '0.700000', '-map', '0:v:0', '-an', '-sn', '-dn', '-c:v', 'libx264', '-threads', '1', '/w/piece-0.mp4',
    '-t', '0.500000', '-map', '1:v:0', '-an', '-sn', '-dn', '-c:v', 'libx264', '-threads', '1', '/w/piece-1.mp4'
  ])
})

t.test('only a clip with nothing added to the picture or the sound is cut by copy', async (t) => {
  const camera: Camera = { id: 'cam-1', feed: 'rtsp://x/s', isEnabled: true }
  t.ok(isPlainCut(camera, { logo: false, postroll: false }))
  t.ok(isPlainCut({ ...camera, videoCodec: 'h264', audioCodec: 'aac', rotation: 0, scale: 1 }, { logo: false, postroll: false }))
  t.notOk(isPlainCut(camera, { logo: true, postroll: false }), 'a logo')
  t.notOk(isPlainCut(camera, { logo: false, postroll: true }), 'a postroll')
  t.notOk(isPlainCut({ ...camera, rotation: 180 }, { logo: false, postroll: false }), 'a correction')
  t.notOk(isPlainCut({ ...camera, lutPath: '/l.cube' }, { logo: false, postroll: false }), 'a LUT')
  t.notOk(isPlainCut({ ...camera, videoCodec: 'hevc' }, { logo: false, postroll: false }), 'an HEVC clip asked for')
  t.notOk(isPlainCut({ ...camera, audioCodec: 'opus' }, { logo: false, postroll: false }), 'Opus sound asked for')
})

t.test('keyframes from ffprobe, on the file timeline', async (t) => {
  const json = JSON.stringify({
    packets: [{ pts_time: '1.080000', dts_time: '1.000000', flags: 'K_' }, { pts_time: '1.240000', dts_time: '1.040000', flags: '__' }, { pts_time: '2.080000', dts_time: '2.000000', flags: 'K_' }],
    format: { start_time: '1.000000' }
  })
  t.same(parseKeyframes(json), { start: 1, keyframes: [{ pts: 0.08, dts: 0 }, { pts: 1.08, dts: 1 }] })
  t.same(parseKeyframes('{"packets": ['), { start: 0, keyframes: [] }, 'cut short: none known')
})

t.test('the concat lists: pieces with their durations, inpoints and outpoints on each file clock', async (t) => {
  const pieces = planSmartCut(sources, 0.3, 5.2, keyframes)
  t.equal(videoConcatList(pieces, ['/w/piece-0.mp4', "/w/it's.mp4"], (p) => (p === '/r/c.mp4' ? 10 : 0)), [
    'ffconcat version 1.0',
    "file '/w/piece-0.mp4'", 'inpoint 0.000000', 'duration 0.700000',
    "file '/r/a.mp4'", 'inpoint 1.000000', 'duration 1.000000',
    "file '/r/b.mp4'", 'duration 2.000000',
    "file '/r/c.mp4'", 'outpoint 11.000000', 'duration 1.000000',
    "file '/w/it'\\''s.mp4'", 'inpoint 0.000000', 'duration 0.500000',
    ''
  ].join('\n'))
  t.equal(audioConcatList(sources, 0.3, 5.2), [
    'ffconcat version 1.0',
    "file '/r/a.mp4'", 'inpoint 0.300000', 'duration 1.700000',
    "file '/r/b.mp4'", 'duration 2.000000',
    "file '/r/c.mp4'", 'duration 1.500000',
    ''
  ].join('\n'), 'the sound: from the clip start, stopped by the join')
  t.same(joinArgs('/w/v', '/w/a', 4.2, '/c/x.mp4'), [
    '-hide_banner', '-loglevel', 'error', '-copyts', '-f', 'concat', '-safe', '0', '-i', '/w/v', '-f', 'concat', '-safe', '0', '-i', '/w/a',
    '-map', '0:v:0', '-map', '1:a:0', '-c', 'copy', '-copypriorss:a', '0', '-t', '4.200000', '-avoid_negative_ts', 'make_zero', '-movflags', '+faststart', '/c/x.mp4'
  ])
  t.notOk(joinArgs('/w/v', undefined, 4.2, '/c/x.mp4').includes('1:a:0'), 'a camera without sound: the picture alone')
})
