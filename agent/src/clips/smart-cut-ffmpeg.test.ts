// Plain cuts through real ffmpeg over a recording in the recorder's format: frame-accurate at both
// ends, the sound in step, and every packet between the ends the recording's own.
import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { tempDir } from '../temp-dir.fixture.js'
import { FfmpegRunner } from '../recorder/runner.js'
import { pattern, RECORDED_AT, recorded, type Footage } from './segments.fixture.js'

const run = promisify(execFile)
const FRAME = 0.04
/** One keyframe a second, 2 s segments, 25 fps with sound: 8 s recorded in about a second. */
const FOOTAGE: Footage = { seconds: 8, segmentSeconds: 2, size: '320x240', rate: 25, gop: 25, audio: true, preset: 'ultrafast' }

async function probe(path: string, entries: string, stream = 'v') {
  const { stdout } = await run('ffprobe', ['-v', 'error', '-select_streams', stream, '-show_data_hash', 'md5', '-show_entries', entries, '-of', 'json', path], { maxBuffer: 64 << 20 })
  return JSON.parse(stdout) as { packets?: Array<{ flags: string; data_hash: string; pts_time: string }>; streams?: Array<{ duration: string }> }
}

async function decodeErrors(path: string): Promise<string> {
  return (await run('ffmpeg', ['-v', 'error', '-i', path, '-f', 'null', '-'])).stderr.trim()
}

/** Frames as 80x60 grey pictures: of a file (`-frames:v n` from its start), or of the pattern itself. */
async function grey(input: string[], filter: string): Promise<Buffer[]> {
  const { stdout } = await run('ffmpeg', ['-v', 'error', ...input, '-vf', `${filter}scale=80:60`, '-fps_mode', 'passthrough', '-pix_fmt', 'gray', '-f', 'rawvideo', '-'], { encoding: 'buffer', maxBuffer: 64 << 20 })
  return Array.from({ length: stdout.length / 4800 }, (_, i) => stdout.subarray(i * 4800, (i + 1) * 4800))
}

/** Which of the pattern's frames `first..last` the picture is nearest to. */
async function nearestFrame(picture: Buffer, first: number, last: number): Promise<number> {
  const frames = await grey(['-f', 'lavfi', '-i', `${pattern(FOOTAGE)}:duration=${(last + 1) / FOOTAGE.rate}`], `select='between(n\\,${first}\\,${last})',`)
  const distance = (f: Buffer) => f.reduce((sum, v, i) => sum + (v - picture[i]!) ** 2, 0)
  const distances = frames.map(distance)
  return first + distances.indexOf(Math.min(...distances))
}

/**
 * How far each of the clip's sound packets is from where it was in the recording: its time in the clip
 * plus the clip's start, against the time of the recorded packet with the same bytes nearest to that
 * (the tone repeats its packets every 1.6 s, further than any drift this looks for).
 */
async function soundDrift(clip: string, segments: ReadonlyArray<{ path: string; start: Date }>, from: number): Promise<number[]> {
  const recordedPackets = (await Promise.all(segments.map(async (s) =>
    ((await probe(s.path, 'packet=pts_time,data_hash', 'a')).packets ?? []).map((p) => ({ hash: p.data_hash, at: (s.start.getTime() - RECORDED_AT) / 1000 + Number(p.pts_time) }))))).flat()
  return ((await probe(clip, 'packet=pts_time,data_hash', 'a')).packets ?? []).map((p) => {
    const at = from + Number(p.pts_time)
    return Math.min(...recordedPackets.filter((r) => r.hash === p.data_hash).map((r) => Math.abs(r.at - at)))
  })
}

/** The hashes of a file's picture packets but its keyframes (the concat demuxer puts the parameter sets in front of those). */
async function innerPackets(path: string): Promise<string[]> {
  return ((await probe(path, 'packet=pts_time,flags,data_hash')).packets ?? []).filter((p) => !p.flags.startsWith('K')).map((p) => p.data_hash)
}

t.test('a plain cut from mid-GOP to mid-GOP across three segments: clean, frame-accurate, in step, its middle copied', async (t) => {
  const dir = tempDir(t)
  const recording = await recorded(dir, FOOTAGE)
  const [from, to] = [1.3, 5.5]
  const clip = await recording.cut(from, to)

  t.equal(await decodeErrors(clip), '', 'it decodes without an error')
  const pictures = await grey(['-i', clip], '')
  // 1.3 s falls between frames 32 (1.28 s) and 33 (1.32 s); 5.5 s between 137 and 138.
  t.ok([32, 33].includes(await nearestFrame(pictures[0]!, 28, 38)), 'its first frame is the one at the asked start')
  t.ok([136, 137].includes(await nearestFrame(pictures.at(-1)!, 132, 142)), 'its last frame is the one before the asked end')
  const [video, audio] = [(await probe(clip, 'stream=duration')).streams![0]!, (await probe(clip, 'stream=duration', 'a')).streams![0]!].map((s) => Number(s.duration))
  t.ok(Math.abs(video! - (to - from)) <= FRAME, `its picture lasts the asked ${to - from} s within a frame (${video} s)`)
  t.ok(Math.abs(audio! - video!) <= FRAME, `its sound lasts as long within 40 ms (${audio} s)`)
  // In step: every packet of sound is the recording's own, at the time it was recorded, within a frame.
  const drift = await soundDrift(clip, recording.segments(), from)
  t.ok(drift.length >= (to - from) * 46, `${drift.length} packets of sound`)
  t.ok(Math.max(...drift) <= FRAME, `its sound is where it was recorded, within a frame of its picture (at most ${Math.max(...drift).toFixed(3)} s off)`)

  // Segments 2-4 s (whole) and 4-5 s (up to the keyframe at 5 s) are copied: every packet of theirs
  // is in the clip byte for byte; only the 0.7 s before 2 s and the 0.5 s after 5 s are new.
  const segments = recording.segments()
  const copied = [...await innerPackets(segments[1]!.path), ...(await innerPackets(segments[2]!.path)).slice(0, 24)]
  const inClip = await innerPackets(clip)
  t.ok(copied.length >= 70, `${copied.length} packets between the ends`)
  t.same(copied.filter((hash) => !inClip.includes(hash)), [], 'every packet between the ends is the recording\'s own')
  const encoded = inClip.filter((hash) => !copied.includes(hash)).length
  t.ok(encoded <= Math.ceil((2 - from + (to - 5)) / FRAME), `only the ends were encoded (${encoded} frames)`)
})

t.test('an interval inside one group of pictures, on a camera without sound: encoded whole, exact', async (t) => {
  const dir = tempDir(t)
  const recording = await recorded(dir, { ...FOOTAGE, seconds: 4, audio: false })
  const clip = await recording.cut(2.2, 2.7)
  t.equal(await decodeErrors(clip), '')
  const pictures = await grey(['-i', clip], '')
  t.equal(pictures.length, 13, '0.5 s at 25 fps (2.20 to 2.68 s)')
  t.equal(await nearestFrame(pictures[0]!, 51, 59), 55)
  t.same((await probe(clip, 'stream=codec_type', 'a')).streams, [], 'no sound')
})

t.test('a recording with B-frames: clean, in step, its middle copied', async (t) => {
  const dir = tempDir(t)
  const recording = await recorded(dir, { ...FOOTAGE, preset: 'veryfast' })
  const clip = await recording.cut(1.3, 5.5)
  t.equal(await decodeErrors(clip), '')
  const [video, audio] = [(await probe(clip, 'stream=duration')).streams![0]!, (await probe(clip, 'stream=duration', 'a')).streams![0]!].map((s) => Number(s.duration))
  // The recording's own B-frame delay (80 ms here) moves its picture against its names: two frames.
  t.ok(Math.abs(video! - 4.2) <= 3 * FRAME, `its picture lasts the asked 4.2 s within the delay (${video} s)`)
  t.ok(Math.abs(audio! - video!) <= FRAME, `its sound lasts as long within 40 ms (${audio} s)`)
  // Measured against the segments' names, which the B-frame delay moves against the listed lengths
  // (2.08 s each here) as it moves the picture: the same allowance as the picture's duration.
  const drift = await soundDrift(clip, recording.segments(), 1.3)
  t.ok(Math.max(...drift) <= 3 * FRAME, `its sound is where it was recorded, within the delay (at most ${Math.max(...drift).toFixed(3)} s off)`)
  const copied = await innerPackets(recording.segments()[1]!.path)
  const inClip = await innerPackets(clip)
  t.same(copied.filter((hash) => !inClip.includes(hash)), [], 'the middle segment is the recording\'s own')
})

t.test('with a correction the clip is encoded whole, as before', async (t) => {
  const dir = tempDir(t)
  const recording = await recorded(dir, { ...FOOTAGE, seconds: 4, audio: false })
  const clip = await recording.cut(0.5, 3.5, { camera: { ...recording.camera, rotation: 180 } })
  t.equal(await decodeErrors(clip), '')
  const copied = await innerPackets(recording.segments()[1]!.path)
  const inClip = await innerPackets(clip)
  t.equal(copied.filter((hash) => inClip.includes(hash)).length, 0, 'no packet copied')
})

t.test('footage the copy cannot continue is encoded whole instead: the clip is still made, exact', async (t) => {
  // ffmpeg refusing the join stands for whatever the copy path meets that it cannot handle.
  class NoJoin extends FfmpegRunner {
    override async run(args: readonly string[], timeoutMs?: number) {
      if (args.includes('-copyts')) throw new Error('ffmpeg could not join the pieces')
      return super.run(args, timeoutMs)
    }
  }
  const dir = tempDir(t)
  const recording = await recorded(dir, FOOTAGE, { runner: new NoJoin({ ffmpegPath: 'ffmpeg', ffprobePath: 'ffprobe' }) })
  const [from, to] = [1.3, 5.5]
  const clip = await recording.cut(from, to)
  t.equal(await decodeErrors(clip), '', 'it decodes without an error')
  const video = Number((await probe(clip, 'stream=duration')).streams![0]!.duration)
  t.ok(Math.abs(video - (to - from)) <= FRAME, `its picture lasts the asked ${to - from} s within a frame (${video} s)`)
  const copied = await innerPackets(recording.segments()[1]!.path)
  const inClip = await innerPackets(clip)
  t.same(copied.filter((hash) => inClip.includes(hash)), [], 'encoded whole: no packet of the recording copied')
})
