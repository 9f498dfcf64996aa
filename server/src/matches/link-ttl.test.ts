// A match's angle is played for as long as it lasts, and the player asks for its bytes as it plays:
// its download link outlasts the match, where a clip's lasts REPLAY_URL_TTL_SECONDS.
import t from 'tap'
import { REPLAYS, SHA, storedClip } from '../replays/test-helpers.js'
import { MATCHES, at, boxMakesReady, playedMatch, setup } from './test-helpers.js'

/** Seconds from now until a file:// download link stops working (its signed `expires`). */
const validFor = (url: string, now: string) => Number(new URL(url).searchParams.get('expires')) - Date.parse(now) / 1000

t.test("a READY angle's link lasts its hour plus REPLAY_URL_TTL_SECONDS; a clip's link REPLAY_URL_TTL_SECONDS", async (t) => {
  const s = await setup(t, { REPLAY_URL_TTL_SECONDS: '900' })
  const { ctx, call } = s
  const { match } = await playedMatch(t, s)
  const now = '2026-03-01T11:40:00.000Z'
  at(ctx, now)
  await boxMakesReady(s) // each angle 3,600 s long

  const opened = (await call('GET', `${MATCHES}/${match.id}`, s.member)).json()
  for (const angle of opened.angles) t.equal(validFor(angle.downloadUrl, now), 900 + 3600, `${angle.camera.id}: valid while the hour plays, and 15 minutes more`)
  const angle = (await call('GET', `${REPLAYS}/${opened.angles[0].id}`, s.member)).json()
  t.equal(validFor(angle.downloadUrl, now), 900 + 3600, 'the same through the replay route')

  // A clip the member asks for now, made READY by the box as any clip is.
  const mine = (await call('POST', REPLAYS, s.member, { court: { id: s.venue.court1.id }, seconds: 30 })).json()
  const device = (await call('GET', '/apis/v2/replay-servers/device/replays', s.device)).json().items.find((r: { id: string }) => r.id === mine.id)
  t.ok(device, 'the clip waits for the box')
  for (const status of ['EXPORTING', 'UPLOADING']) t.equal((await call('PUT', `/apis/v2/replay-servers/device/replays/${mine.id}/status`, s.device, { status })).statusCode, 200)
  const location = storedClip(s.bucketDir, `${device.cameraId}/${mine.id}.mp4`)
  t.equal((await call('PUT', `/apis/v2/replay-servers/device/replays/${mine.id}/status`, s.device, { status: 'READY', location, durationSeconds: 30, sizeBytes: 28, sha256: SHA })).statusCode, 200)
  const clip = (await call('GET', `${REPLAYS}/${mine.id}`, s.member)).json()
  t.equal(validFor(clip.downloadUrl, now), 900, "a clip's link: REPLAY_URL_TTL_SECONDS")
})
