// Exports over footage still being written, at the moments that used to fail: right after a segment
// boundary, and while the segment being written holds part of a fragment. The camera's folder is held
// at that moment (segments cut by real ffmpeg as the recorder cuts them, on a stopped clock), so the
// moment lasts however slow the machine; the clips are cut and read by real ffmpeg.
import t from 'tap'
import { execFileAsync, heldBoundary, LOW_BITRATE, mp4Boxes } from './recording.fixture.js'

t.test('right after a segment boundary the segment being written holds no frame yet', async (t) => {
  // Its file holds only the ftyp box until it is finished; the clock stands half a second after the boundary.
  const camera = await heldBoundary(t, LOW_BITRATE)
  const { openedAt: since, finished } = camera

  const refused = await camera.export(new Date(since + 100), new Date(since + 1_500)).then(
    (clip) => clip,
    (err: unknown) => err
  )
  t.match(refused, {
    name: 'ClipError',
    statusCode: 503,
    message: `the footage of camera cam-1 between ${new Date(since + 100).toISOString()} and ${new Date(since + 1_500).toISOString()} is still being written: ask again in 3 s`,
    // Finished at its slot's end plus a keyframe interval: 3 s after it opened, 2.5 s from now.
    retryAfterSeconds: 3
  }, 'an interval wholly in it: 503, and when to ask again: when it should be finished')

  // "The last few seconds": cut up to the footage on disk, the end of the finished segment.
  const start = new Date(finished.start.getTime() + 500)
  const clip = await camera.export(start, camera.clock.now())
  const onDisk = finished.duration! - 0.5
  t.ok(Math.abs(clip.duration - onDisk) < 0.2, `the clip holds the finished footage (${clip.duration} s, ${onDisk.toFixed(3)} s on disk)`)
  const { stderr } = await execFileAsync('ffmpeg', ['-v', 'error', '-i', new URL(clip.location).pathname, '-f', 'null', '-'])
  t.equal(stderr.trim(), '', 'the clip decodes cleanly')
})

t.test('a segment being written that holds part of a fragment: cut up to what is readable', async (t) => {
  // ffmpeg flushes a segment in 256 KiB chunks, so at a high bitrate the file ends in the middle of a
  // fragment (one per keyframe, every second) most of the time: here, halfway through its second one's
  // media. The clock stands at the segment's slot's end, so only what is on disk bounds the clip.
  const camera = await heldBoundary(t, LOW_BITRATE, {
    writtenBytes: (segment) => {
      const mdat = mp4Boxes(segment).filter((box) => box.type === 'mdat')[1]!
      return mdat.offset + Math.floor(mdat.size / 2)
    },
    afterMs: 2_000
  })
  const asked = 1.9
  const clip = await camera.export(camera.writing.start, new Date(camera.writing.start.getTime() + asked * 1000))
  t.ok(clip.duration >= 1 && clip.duration < 1.9, `a clip of the footage on disk: the first fragment and part of the second (${clip.duration} s of ${asked} s asked)`)
  const { stderr } = await execFileAsync('ffmpeg', ['-v', 'error', '-i', new URL(clip.location).pathname, '-f', 'null', '-'])
  t.equal(stderr.trim(), '', 'the clip decodes cleanly')
})
