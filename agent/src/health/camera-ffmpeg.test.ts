// A camera's state for the health report over real ffmpeg runs: a feed that is missing makes it
// FAILED with its problem in words, and once the feed is back it is RECORDING at the first video written.
import t from 'tap'
import { mkdirSync, renameSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { LOW_BITRATE, SEGMENT_SECONDS, testCamera, waitFor } from '../clips/recording.fixture.js'
import { createLogger } from '../log.js'
import { FfmpegRunner } from '../recorder/runner.js'
import { Recorder } from '../recorder/supervisor.js'
import { tempDir } from '../temp-dir.fixture.js'
import { cameraHealth } from './report.js'

t.test('a camera whose feed is missing is FAILED ("no such file"), and RECORDING again once the feed exists', async (t) => {
  const dir = tempDir(t)
  const made = await testCamera(dir, LOW_BITRATE)
  const feedDir = join(dir, 'feeds')
  mkdirSync(feedDir)
  const feedPath = join(feedDir, 'court-1.mp4')
  const camera = { ...made, feed: pathToFileURL(feedPath).href }
  const recorder = new Recorder({
    runner: new FfmpegRunner({ ffmpegPath: 'ffmpeg', ffprobePath: 'ffprobe', stopStepMs: 2_000 }),
    recordingsDir: join(dir, 'recordings'),
    segmentSeconds: SEGMENT_SECONDS,
    log: createLogger('silent')
  })
  t.teardown(() => recorder.stopAll())
  const health = () => cameraHealth(camera, false, recorder.facts().get(camera.id), Date.now())

  await recorder.apply([camera])
  const failed = await waitFor('the camera FAILED', () => health().state === 'FAILED' && health(), 30_000)
  t.equal(failed.problem, 'no such file')
  t.equal(failed.lastSegmentAt, null)
  t.ok(failed.restarts >= 1, `restarted ${failed.restarts} times`)

  // The feed is mended (whole at once: ffmpeg never meets half a file).
  renameSync(fileURLToPath(made.feed), feedPath)
  // The supervisor retries after at most a few seconds of backoff here (it failed only for a moment).
  const recording = await waitFor('the camera RECORDING', () => health().state === 'RECORDING' && health(), 60_000)
  t.equal(recording.problem, null)
  const finished = await waitFor('a finished segment', () => health().lastSegmentAt, 30_000)
  t.ok(Date.parse(finished!) > Date.now() - 60_000, `its last segment: ${finished}`)
})
