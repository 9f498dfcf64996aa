// Exports over footage still being written, through real ffmpeg: a recording runs as the agent runs it
// (fragmented MP4 segments from a camera stand-in), and clips are asked for at the moments that used
// to fail: right after a segment boundary, and while the segment being written holds part of a fragment.
import t from 'tap'
import { boundary, execFileAsync, justOpened, LOW_BITRATE, recording, SEGMENT_SECONDS, waitFor } from './recording.fixture.js'

t.test('right after a segment boundary the segment being written holds no frame yet', async (t) => {
  // Its file holds only the ftyp box until it is finished.
  const camera = await recording(t, LOW_BITRATE)
  const { openedAt: since, finished } = await boundary(camera)

  const refused = await camera.export(new Date(since + 100), new Date(since + 1_500)).then(
    (clip) => clip,
    (err: unknown) => err
  )
  t.match(refused, {
    name: 'ClipError',
    statusCode: 503,
    message: /^the footage of camera cam-1 between .* is still being written: ask again in \d s$/
  }, 'an interval wholly in it: 503')
  const retryAfter = (refused as { retryAfterSeconds?: number }).retryAfterSeconds ?? 0
  t.ok(retryAfter >= 1 && retryAfter <= SEGMENT_SECONDS + 1, `and when to ask again: when it should be finished (${retryAfter} s)`)

  // "The last few seconds": cut up to the footage on disk, the end of the finished segment.
  const start = new Date(finished.start.getTime() + 500)
  const clip = await camera.export(start, new Date(Date.now()))
  const onDisk = finished.duration! - 0.5
  t.ok(Math.abs(clip.duration - onDisk) < 0.2, `the clip holds the finished footage (${clip.duration} s, ${onDisk.toFixed(3)} s on disk)`)
  const { stderr } = await execFileAsync('ffmpeg', ['-v', 'error', '-i', new URL(clip.location).pathname, '-f', 'null', '-'])
  t.equal(stderr.trim(), '', 'the clip decodes cleanly')
})

t.test('a segment being written that holds part of a fragment: cut up to what is readable', async (t) => {
  // About 0.5 MB/s: ffmpeg writes the segment in 256 KiB chunks, so the file ends in the middle of a
  // fragment (one per keyframe, every second) most of the time.
  const camera = await recording(t, { size: '640x360', rate: 25, quality: ['-qp', '0'] })
  const { writing } = await waitFor('a segment being written with a chunk on disk', () =>
    justOpened(camera.segments(), (s) => s.size > 256 * 1024))
  const asked = 1.9
  const clip = await camera.export(writing.start, new Date(writing.start.getTime() + asked * 1000))
  t.ok(clip.duration > 0.1 && clip.duration <= asked + 0.05, `a clip of the footage on disk (${clip.duration} s of ${asked} s asked)`)
  const { stderr } = await execFileAsync('ffmpeg', ['-v', 'error', '-i', new URL(clip.location).pathname, '-f', 'null', '-'])
  t.equal(stderr.trim(), '', 'the clip decodes cleanly')
})
