// A segment's keyframes read from its fragments' headers against ffprobe's reading of its packets,
// on recordings in the recorder's format (with and without B-frames).
import t from 'tap'
import { copyFileSync, readFileSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../temp-dir.fixture.js'
import { FfmpegRunner } from '../recorder/runner.js'
import { readKeyframes } from './keyframes.js'
import { execFileAsync } from './recording.fixture.js'
import { recorded, type Footage } from './segments.fixture.js'
import { parseKeyframes } from './smart-cut.js'

const runner = new FfmpegRunner({ ffmpegPath: 'ffmpeg', ffprobePath: 'ffprobe' })
const FOOTAGE: Footage = { seconds: 4, segmentSeconds: 2, size: '160x120', rate: 25, gop: 10, audio: true, preset: 'ultrafast' }

for (const preset of ['ultrafast', 'veryfast'] as const) {
  t.test(`a segment's keyframes from its fragments are ffprobe's (${preset}: ${preset === 'veryfast' ? 'with' : 'no'} B-frames)`, async (t) => {
    const recording = await recorded(tempDir(t), { ...FOOTAGE, preset })
    for (const segment of recording.segments()) {
      const read = await readKeyframes(segment.path)
      t.ok(read && read.keyframes.length >= 5, `${read?.keyframes.length} keyframes`)
      t.same(read, parseKeyframes(await runner.videoPacketFlags(segment.path)), 'times and start as ffprobe gives them')
    }
  })
}

t.test('a segment still being written: its keyframes up to its last whole fragment', async (t) => {
  const dir = tempDir(t)
  const recording = await recorded(dir, FOOTAGE)
  const whole = recording.segments()[0]!.path
  const growing = join(dir, 'growing.mp4')
  copyFileSync(whole, growing)
  truncateSync(growing, Math.floor(readFileSync(whole).length * 0.6))
  const all = (await readKeyframes(whole))!.keyframes
  const some = (await readKeyframes(growing))!.keyframes
  t.ok(some.length > 0 && some.length < all.length, `${some.length} of ${all.length}`)
  t.same(some, all.slice(0, some.length), 'the first ones, at the same times')
})

t.test('a file that is not fragmented, or not an MP4: none read, so ffprobe is asked', async (t) => {
  const dir = tempDir(t)
  const plain = join(dir, 'plain.mp4')
  await execFileAsync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=160x120:rate=25', '-t', '1', '-c:v', 'libx264', '-preset', 'ultrafast', plain])
  t.equal(await readKeyframes(plain), undefined, 'a plain MP4: its keyframes are in its sample table, not in fragments')
  const text = join(dir, 'text.mp4')
  writeFileSync(text, 'not a video at all')
  t.equal(await readKeyframes(text), undefined)
})
